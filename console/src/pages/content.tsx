import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api, unwrap } from '../api/client';
import { ConfirmDialog } from '../components/confirm';
import { FieldError, JsonField } from '../components/field-error';
import { Problem } from '../components/problem';
import { Select } from '../components/select';
import { Tile } from '../components/tile';
import { atLeast } from '../roles';
import { useScopeKey, useWorkspace } from '../session';

/** The three item kinds share one API shape under their own path; the free-form fields differ. */
const ITEM_KINDS = {
  'onboarding-flows': { label: 'Onboarding flows', free: { steps: [], settings: {} } },
  paywalls: { label: 'Paywalls', free: { plans: [], layout: {}, cta: {} } },
  'in-app-messages': { label: 'In-app messages', free: { content: {}, trigger_rules: {}, audience: {} } },
} as const;
type ItemKind = keyof typeof ITEM_KINDS;
const singular = (k: ItemKind) => ITEM_KINDS[k].label.toLowerCase().replace(/s$/, '');
type Kind = ItemKind | 'remote-config' | 'feature-flags';
const KINDS: [Kind, string][] = [
  ...Object.entries(ITEM_KINDS).map(([k, v]) => [k as Kind, v.label] as [Kind, string]),
  ['remote-config', 'Remote config'],
  ['feature-flags', 'Feature flags'],
];

type Item = Record<string, unknown> & {
  id: string;
  name: string;
  status: 'draft' | 'published';
  published_at: string | null;
  updated_at: string;
  sdk_min_version: string | null;
};
// One typed path stands for the three (same shapes); the kind picks the real one.
const P = (k: ItemKind) => `/api/v1/${k}` as '/api/v1/paywalls';
const PI = (k: ItemKind) => `/api/v1/${k}/{id}` as '/api/v1/paywalls/{id}';

/** Content: flows, paywalls, in-app messages (draft, then publish), remote config and flags (live on save). */
export default function Content() {
  const [kind, setKind] = useState<Kind>('onboarding-flows');
  return (
    <>
      <h1>Content</h1>
      <div className="filters">
        <Select label="Kind" value={kind} options={KINDS} onChange={setKind} />
      </div>
      {kind === 'remote-config' ? (
        <RemoteConfig />
      ) : kind === 'feature-flags' ? (
        <Flags />
      ) : (
        <Items key={kind} kind={kind} />
      )}
    </>
  );
}

function Items({ kind }: { kind: ItemKind }) {
  const qc = useQueryClient();
  const key = useScopeKey('content', kind);
  const list = useQuery({
    queryKey: key,
    queryFn: () => unwrap(api.GET(P(kind), { params: { query: { limit: 100 } } })),
  });
  const [editing, setEditing] = useState<Item | 'new' | null>(null);
  const live = useLive(kind);
  const releasesKey = useScopeKey('releases');
  // Saving and publishing show in the list (and its served-version badges) while the editor stays open.
  const refresh = () => (qc.invalidateQueries({ queryKey: key }), qc.invalidateQueries({ queryKey: releasesKey }));
  return (
    <>
      <div className="row">
        <button type="button" onClick={() => setEditing('new')}>
          New {singular(kind)}
        </button>
      </div>
      {editing && (
        <Editor
          key={editing === 'new' ? 'new' : editing.id}
          kind={kind}
          item={editing === 'new' ? null : editing}
          onChanged={refresh}
          onDone={() => (setEditing(null), refresh())}
        />
      )}
      <Tile title={ITEM_KINDS[kind].label} query={list}>
        {(d) => (
          <table>
            <thead>
              <tr>
                <th>Name</th>
                <th>State</th>
                <th>Updated</th>
                <th>
                  <span className="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {(d.data as Item[]).map((it) => (
                <tr key={it.id} aria-label={`Item ${it.name}`}>
                  <td>{it.name}</td>
                  <td>
                    {it.status === 'published' ? `published ${new Date(it.published_at!).toLocaleString()}` : 'draft'}
                    {live &&
                      (live.ids.has(it.id) ? (
                        <span className="badge"> in version {live.version} (served now)</span>
                      ) : (
                        it.status === 'published' && <span className="badge"> not in version {live.version} yet</span>
                      ))}
                  </td>
                  <td>{new Date(it.updated_at).toLocaleString()}</td>
                  <td>
                    <button type="button" className="secondary" onClick={() => setEditing(it)}>
                      Edit
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </Tile>
    </>
  );
}

const SECTION: Record<ItemKind, string> = {
  'onboarding-flows': 'onboarding_flows',
  paywalls: 'paywalls',
  'in-app-messages': 'in_app_messages',
};

/** The bundle version devices fetch now and the ids of this kind it carries (the Releases page's queries). */
function useLive(kind: ItemKind) {
  const history = useQuery({
    queryKey: useScopeKey('releases'),
    refetchOnMount: 'always',
    queryFn: () => unwrap(api.GET('/api/v1/sdk/config-bundle/history', { params: { query: { limit: 100 } } })),
  });
  const version = history.data?.data.find((r) => r.current)?.bundle_version ?? null;
  const bundle = useQuery({
    queryKey: useScopeKey('bundle', version),
    enabled: version !== null,
    staleTime: Infinity,
    queryFn: () =>
      unwrap(api.GET('/api/v1/sdk/config-bundle/history/{version}', { params: { path: { version: version! } } })),
  });
  if (!bundle.data) return null;
  return {
    version: bundle.data.data.bundle_version,
    ids: new Set(Object.keys((bundle.data.data.content[SECTION[kind]] ?? {}) as object)),
  };
}

/** Form fields for the common parts, a JSON editor for the free-form parts of the kind. */
function Editor({
  kind,
  item,
  onChanged,
  onDone,
}: {
  kind: ItemKind;
  item: Item | null;
  onChanged(): void;
  onDone(): void;
}) {
  const { role } = useWorkspace();
  const freeKeys = Object.keys(ITEM_KINDS[kind].free);
  const noun = singular(kind);
  const [saved, setSaved] = useState<Item | null>(item);
  const [state, setState] = useState<string>(item ? item.status : 'new');
  const [name, setName] = useState(item?.name ?? '');
  const [sdkMin, setSdkMin] = useState(item?.sdk_min_version ?? '');
  const [messageType, setMessageType] = useState(String(item?.message_type ?? 'modal'));
  const [priority, setPriority] = useState(String(item?.priority ?? 0));
  const [dismiss, setDismiss] = useState(item?.dismiss !== false);
  const [free, setFree] = useState<unknown>(() =>
    Object.fromEntries(freeKeys.map((k) => [k, item?.[k] ?? ITEM_KINDS[kind].free[k as never]])),
  );
  const body = () => ({
    name,
    sdk_min_version: sdkMin || (saved ? null : undefined),
    ...(free as object),
    ...(kind === 'in-app-messages' ? { message_type: messageType, priority: Number(priority) } : {}),
    ...(kind === 'paywalls' ? { dismiss } : {}),
  });
  const save = useMutation({
    mutationFn: async () => {
      if (saved) return unwrap(api.PATCH(PI(kind), { params: { path: { id: saved.id } }, body: body() as never }));
      return unwrap(api.POST(P(kind), { body: body() as never }));
    },
    onSuccess: (r) => {
      setSaved(r.data as Item);
      setState(
        (r.data as Item).status === 'published'
          ? `published (bundle version ${(r as { bundle_version?: number }).bundle_version ?? '—'})`
          : 'saved (draft)',
      );
      onChanged();
    },
  });
  const [confirming, setConfirming] = useState<'delete' | 'unpublish' | null>(null);
  const publish = useMutation({
    mutationFn: (action: 'publish' | 'unpublish') =>
      unwrap(
        api.POST(`/api/v1/${kind}/{id}/${action}` as '/api/v1/paywalls/{id}/publish', {
          params: { path: { id: saved!.id } },
        }),
      ),
    onSuccess: (r) => {
      setConfirming(null);
      setSaved(r.data as Item);
      setState(
        (r.data as Item).status === 'published'
          ? `published (bundle version ${r.bundle_version})`
          : `draft (bundle version ${r.bundle_version})`,
      );
      onChanged();
    },
  });
  const remove = useMutation({
    mutationFn: () => unwrap(api.DELETE(PI(kind), { params: { path: { id: saved!.id } } })),
    onSuccess: onDone,
  });
  const err = save.error;
  return (
    <section className="tile stack" aria-label="Editor">
      <header className="row">
        <h2>{saved ? saved.name : 'New item'}</h2>
        <span className="badge" aria-label="State">
          {state}
        </span>
      </header>
      <div className="row">
        <label>
          Name
          <input value={name} onChange={(e) => setName(e.target.value)} />
          <FieldError error={err} fields={['name']} />
        </label>
        <label>
          Minimum SDK version
          <input value={sdkMin} placeholder="x.y.z" onChange={(e) => setSdkMin(e.target.value)} />
          <FieldError error={err} fields={['sdk_min_version']} />
        </label>
        {kind === 'in-app-messages' && (
          <>
            <label>
              Message type
              <input value={messageType} onChange={(e) => setMessageType(e.target.value)} />
              <FieldError error={err} fields={['message_type']} />
            </label>
            <label>
              Priority
              <input type="number" value={priority} onChange={(e) => setPriority(e.target.value)} />
              <FieldError error={err} fields={['priority']} />
            </label>
          </>
        )}
        {kind === 'paywalls' && (
          <label className="inline">
            <input type="checkbox" checked={dismiss} onChange={(e) => setDismiss(e.target.checked)} /> Dismissible
          </label>
        )}
      </div>
      <JsonField
        label={`Definition (${freeKeys.join(', ')})`}
        initial={free}
        onValue={setFree}
        error={err}
        fields={freeKeys}
        rows={10}
      />
      <div className="row">
        <button type="button" disabled={free === undefined || save.isPending} onClick={() => save.mutate()}>
          Save
        </button>
        {saved && atLeast(role, 'admin') && (
          <>
            <button type="button" disabled={publish.isPending} onClick={() => publish.mutate('publish')}>
              Publish
            </button>
            {saved.status === 'published' && (
              <button type="button" className="secondary" onClick={() => setConfirming('unpublish')}>
                Unpublish
              </button>
            )}
          </>
        )}
        {saved && (
          <button type="button" className="danger" onClick={() => setConfirming('delete')}>
            Delete
          </button>
        )}
        <button type="button" className="secondary" onClick={onDone}>
          Close
        </button>
      </div>
      <Problem error={save.error ?? (confirming ? null : (publish.error ?? remove.error))} />
      {saved && confirming && (
        <ConfirmDialog
          title={`${confirming === 'delete' ? 'Delete' : 'Unpublish'} "${saved.name}"?`}
          pending={remove.isPending || publish.isPending}
          error={confirming === 'delete' ? remove.error : publish.error}
          onConfirm={() => (confirming === 'delete' ? remove.mutate() : publish.mutate('unpublish'))}
          onCancel={() => (setConfirming(null), remove.reset(), publish.reset())}
        >
          <p>
            {confirming === 'delete'
              ? `The ${noun} "${saved.name}" is deleted for good`
              : `The ${noun} "${saved.name}" goes back to draft`}
            {saved.status === 'published' ? '; a new bundle version without it is made for devices.' : '.'}
          </p>
        </ConfirmDialog>
      )}
    </section>
  );
}

/** Remote config: typed values, replaced as a whole; saving publishes a new bundle version. */
function RemoteConfig() {
  const qc = useQueryClient();
  const key = useScopeKey('remote-config');
  const rc = useQuery({ queryKey: key, queryFn: () => unwrap(api.GET('/api/v1/remote-config')) });
  const [values, setValues] = useState<unknown>();
  const [version, setVersion] = useState<number | null>(null);
  const put = useMutation({
    mutationFn: (v: Record<string, unknown>) => unwrap(api.PUT('/api/v1/remote-config', { body: { values: v } })),
    onSuccess: (r) => (
      setVersion(r.bundle_version ?? r.data.bundle_version ?? null), qc.invalidateQueries({ queryKey: key })
    ),
  });
  return (
    <Tile title="Remote config" query={rc}>
      {(d) => (
        <div className="stack">
          <table>
            <thead>
              <tr>
                <th>Key</th>
                <th>Type</th>
                <th>Value</th>
              </tr>
            </thead>
            <tbody>
              {Object.entries(d.data.values).map(([k, v]) => (
                <tr key={k}>
                  <td>
                    <code>{k}</code>
                  </td>
                  <td>{Array.isArray(v) ? 'array' : v === null ? 'null' : typeof v}</td>
                  <td>
                    <code>{JSON.stringify(v)}</code>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          <JsonField
            label="Values (JSON object)"
            initial={d.data.values}
            onValue={setValues}
            error={put.error}
            fields={['values']}
          />
          <div className="row">
            <button
              type="button"
              disabled={!values || typeof values !== 'object'}
              onClick={() => put.mutate(values as Record<string, unknown>)}
            >
              Publish
            </button>
            {version !== null && (
              <span className="badge" aria-label="State">
                published (bundle version {version})
              </span>
            )}
          </div>
          <Problem error={put.error} />
        </div>
      )}
    </Tile>
  );
}

/** Feature flags: enabled, rollout and the SDK's targeting rules (checked by the server on save). */
function Flags() {
  const qc = useQueryClient();
  const key = useScopeKey('feature-flags');
  const flags = useQuery({
    queryKey: key,
    queryFn: () => unwrap(api.GET('/api/v1/feature-flags', { params: { query: { limit: 100 } } })),
  });
  const [flagKey, setFlagKey] = useState('');
  const [enabled, setEnabled] = useState(true);
  const [rollout, setRollout] = useState('100');
  const [description, setDescription] = useState('');
  const [rules, setRules] = useState<unknown>([]);
  const [form, setForm] = useState(0);
  const [version, setVersion] = useState<number | null>(null);
  const put = useMutation({
    mutationFn: () =>
      unwrap(
        api.PUT('/api/v1/feature-flags/{key}', {
          params: { path: { key: flagKey } },
          body: {
            enabled,
            rollout_pct: Number(rollout),
            description: description || null,
            rules: rules as Record<string, unknown>[],
          },
        }),
      ),
    onSuccess: (r) => (
      setVersion(r.bundle_version ?? r.data.bundle_version ?? null), qc.invalidateQueries({ queryKey: key })
    ),
  });
  const [confirming, setConfirming] = useState<string | null>(null);
  const remove = useMutation({
    mutationFn: (k: string) => unwrap(api.DELETE('/api/v1/feature-flags/{key}', { params: { path: { key: k } } })),
    onSuccess: () => (setConfirming(null), qc.invalidateQueries({ queryKey: key })),
  });
  const edit = (f: {
    key: string;
    enabled: boolean;
    rollout_pct: number;
    description: string | null;
    rules: unknown[];
  }) => {
    setFlagKey(f.key);
    setEnabled(f.enabled);
    setRollout(String(f.rollout_pct));
    setDescription(f.description ?? '');
    setRules(f.rules);
    setForm((n) => n + 1);
  };
  return (
    <>
      <section className="tile stack" aria-label="Flag editor">
        <div className="row">
          <label>
            Flag key
            <input value={flagKey} onChange={(e) => setFlagKey(e.target.value)} />
          </label>
          <label className="inline">
            <input type="checkbox" checked={enabled} onChange={(e) => setEnabled(e.target.checked)} /> Enabled
          </label>
          <label>
            Rollout %
            <input type="number" min={0} max={100} value={rollout} onChange={(e) => setRollout(e.target.value)} />
            <FieldError error={put.error} fields={['rollout_pct']} />
          </label>
          <label>
            Description
            <input value={description} onChange={(e) => setDescription(e.target.value)} />
          </label>
        </div>
        <JsonField
          key={form}
          label="Targeting rules (JSON)"
          initial={rules}
          onValue={setRules}
          error={put.error}
          fields={['rules']}
          rows={5}
        />
        <div className="row">
          <button type="button" disabled={!flagKey || !Array.isArray(rules)} onClick={() => put.mutate()}>
            Publish
          </button>
          {version !== null && (
            <span className="badge" aria-label="State">
              published (bundle version {version})
            </span>
          )}
        </div>
        <Problem error={put.error} />
      </section>
      {confirming && (
        <ConfirmDialog
          title={`Delete the flag ${confirming}?`}
          pending={remove.isPending}
          error={remove.error}
          onConfirm={() => remove.mutate(confirming)}
          onCancel={() => (setConfirming(null), remove.reset())}
        >
          <p>The flag {confirming} is deleted and a new bundle version without it is made for devices.</p>
        </ConfirmDialog>
      )}
      <Tile title="Feature flags" query={flags}>
        {(d) => (
          <table>
            <thead>
              <tr>
                <th>Key</th>
                <th>Enabled</th>
                <th>Rollout</th>
                <th>Rules</th>
                <th>
                  <span className="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {d.data.map((f) => (
                <tr key={f.key} aria-label={`Flag ${f.key}`}>
                  <td>
                    <code>{f.key}</code>
                  </td>
                  <td>{f.enabled ? 'on' : 'off'}</td>
                  <td>{f.rollout_pct}%</td>
                  <td>
                    <code>{JSON.stringify(f.rules)}</code>
                  </td>
                  <td className="row">
                    <button type="button" className="secondary" onClick={() => edit(f)}>
                      Edit
                    </button>
                    <button type="button" className="danger" onClick={() => setConfirming(f.key)}>
                      Delete
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </Tile>
    </>
  );
}
