import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { lazy, Suspense, useEffect, useState, type ReactNode } from 'react';
import { api, unwrap } from '../api/client';
import { FieldError } from '../components/field-error';
import { Problem } from '../components/problem';
import { Select } from '../components/select';
import { Tile } from '../components/tile';
import { useScopeKey } from '../session';

// uPlot loads with the chart only (as on the dashboard).
const LineChart = lazy(() => import('../components/chart').then((m) => ({ default: m.LineChart })));
const DAY_MS = 86_400_000;
const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);

type Net = { id: string; name?: string; status?: string; [k: string]: unknown };
type Kind = 'campaigns' | 'adsquads' | 'media' | 'creatives' | 'ads';
const LIST = '/api/v1/ad-network/accounts/{accountId}/campaigns' as const;
const path = (kind: Kind) => `/api/v1/ad-network/accounts/{accountId}/${kind}` as typeof LIST;
const usd = (micro: unknown) => (typeof micro === 'number' ? `${(micro / 1e6).toFixed(2)}` : '—');

/**
 * Ad network: connect (OAuth: the network sends the browser back here with code and state),
 * the ad accounts with their live-write state, then campaigns, ad squads, media, creatives and
 * ads in the order the network needs them. While live writes are off every write is a dry run.
 */
export default function AdNetwork() {
  const qc = useQueryClient();
  const key = useScopeKey('ad-network-connection');
  const conn = useQuery({ queryKey: key, queryFn: () => unwrap(api.GET('/api/v1/ad-network/connection')) });
  const start = useMutation({
    mutationFn: () => unwrap(api.POST('/api/v1/ad-network/connection/start')),
    onSuccess: (r) => window.location.assign(r.data.authorize_url),
  });
  const finish = useMutation({
    mutationFn: (b: { code: string; state: string }) =>
      unwrap(api.POST('/api/v1/ad-network/connection/callback', { body: b })),
    onSuccess: () => qc.invalidateQueries({ queryKey: key }),
  });
  useEffect(() => {
    // The OAuth round trip ends here: finish it once, then drop code and state from the address.
    const q = new URLSearchParams(window.location.search);
    const code = q.get('code');
    const state = q.get('state');
    if (code && state) {
      window.history.replaceState(null, '', window.location.pathname);
      finish.mutate({ code, state });
    }
  }, []);
  const [account, setAccount] = useState('');
  return (
    <>
      <h1>Ad network</h1>
      <Problem error={start.error ?? finish.error} />
      <Tile
        title="Connection"
        query={conn}
        actions={
          <button type="button" onClick={() => start.mutate()}>
            {conn.data?.data.status === 'connected' ? 'Reconnect' : 'Connect'}
          </button>
        }
      >
        {(d) => (
          <>
            <p>
              Status: <strong aria-label="Connection status">{finish.isPending ? 'connecting' : d.data.status}</strong>
              {d.data.connected_at && ` since ${new Date(d.data.connected_at).toLocaleString()}`}
            </p>
            {d.data.last_error && <p className="problem">{d.data.last_error}</p>}
            {d.data.ad_accounts.length > 0 && (
              <table>
                <thead>
                  <tr>
                    <th>Ad account</th>
                    <th>Currency</th>
                    <th>Timezone</th>
                    <th>Status</th>
                    <th>Writes</th>
                    <th>
                      <span className="visually-hidden">Actions</span>
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {d.data.ad_accounts.map((a) => (
                    <tr key={a.id} aria-label={`Account ${a.name}`}>
                      <td>{a.name}</td>
                      <td>{a.currency}</td>
                      <td>{a.timezone}</td>
                      <td>{a.status}</td>
                      <td>
                        {a.live_writes ? (
                          <strong>live: writes reach the network</strong>
                        ) : (
                          <span className="warning">
                            dry run: writes are recorded only (a Super Admin turns live writes on)
                          </span>
                        )}
                      </td>
                      <td>
                        <button type="button" className="secondary" onClick={() => setAccount(a.id)}>
                          Manage
                        </button>
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
          </>
        )}
      </Tile>
      {account && <Manage key={account} accountId={account} />}
    </>
  );
}

/** One account's objects: a list (live from the network) plus what this page created, each with its create form. */
function Manage({ accountId }: { accountId: string }) {
  const [created, setCreated] = useState<Record<Kind, Net[]>>({
    campaigns: [],
    adsquads: [],
    media: [],
    creatives: [],
    ads: [],
  });
  const [error, setError] = useState<unknown>(null);
  const qc = useQueryClient();
  const lists = {
    campaigns: useList(accountId, 'campaigns'),
    adsquads: useList(accountId, 'adsquads'),
    media: useList(accountId, 'media'),
    creatives: useList(accountId, 'creatives'),
    ads: useList(accountId, 'ads'),
  };
  const all = (k: Kind): Net[] => {
    const seen = new Set((lists[k].data ?? []).map((o) => o.id));
    return [...(lists[k].data ?? []), ...created[k].filter((o) => !seen.has(o.id))];
  };
  const done = (k: Kind) => (r: { data: { object: Net; dry_run: boolean } }) => {
    setCreated((c) => ({ ...c, [k]: [...c[k], { ...r.data.object, dry_run: r.data.dry_run }] }));
    void qc.invalidateQueries({ queryKey: ['ad-list', accountId, k], exact: false });
  };
  const write = useMutation({
    mutationFn: async ({ kind, body }: { kind: Kind; body: Record<string, unknown> }) => ({
      kind,
      r: await unwrap(api.POST(path(kind), { params: { path: { accountId } }, body: body as never })),
    }),
    onSuccess: ({ kind, r }) => done(kind)(r as never),
  });
  const status = useMutation({
    mutationFn: ({
      kind,
      id,
      action,
    }: {
      kind: 'campaigns' | 'adsquads' | 'ads';
      id: string;
      action: 'pause' | 'resume';
    }) =>
      unwrap(
        api.POST(
          `/api/v1/ad-network/accounts/{accountId}/${kind}/{id}/${action}` as '/api/v1/ad-network/accounts/{accountId}/campaigns/{id}/pause',
          { params: { path: { accountId, id } } },
        ),
      ),
    onSuccess: () => qc.invalidateQueries({ queryKey: ['ad-list', accountId], exact: false }),
  });
  const upload = async (file: File, name: string) => {
    setError(null);
    try {
      const type = file.type.startsWith('video/') ? 'VIDEO' : 'IMAGE';
      const r = await unwrap(
        api.POST('/api/v1/ad-network/accounts/{accountId}/media', {
          params: {
            path: { accountId },
            query: { name, type, file_name: file.name.replace(/[^A-Za-z0-9._ -]/g, '_') },
          },
          body: file as never,
          bodySerializer: (b: unknown) => b as BodyInit,
          headers: { 'content-type': file.type || 'application/octet-stream' },
        }),
      );
      done('media')(r as never);
    } catch (e) {
      setError(e);
    }
  };
  const pauseResume = (kind: 'campaigns' | 'adsquads' | 'ads', o: Net) =>
    !String(o.id).startsWith('dryrun-') && (
      <button
        type="button"
        className="secondary"
        onClick={() => status.mutate({ kind, id: o.id, action: o.status === 'PAUSED' ? 'resume' : 'pause' })}
      >
        {o.status === 'PAUSED' ? 'Resume' : 'Pause'}
      </button>
    );
  const opt = (xs: Net[]) =>
    xs.length
      ? xs.map((o) => [o.id, `${o.name ?? o.id}${o.dry_run ? ' (dry run)' : ''}`] as const)
      : ([['', '—']] as const);
  const err = write.error;
  return (
    <>
      <Problem error={write.error ?? status.error ?? error} />
      <Section
        title="Campaigns"
        rows={all('campaigns')}
        cols={(o) => [o.status, usd(o.daily_budget_micro)]}
        head={['Status', 'Daily budget']}
        action={(o) => pauseResume('campaigns', o)}
      >
        <CreateForm
          label="Create campaign"
          error={err}
          fields={[
            ['Campaign name', 'name'],
            ['Daily budget (USD)', 'daily_budget_usd', 'number'],
          ]}
          onSubmit={(v) =>
            write.mutate({
              kind: 'campaigns',
              body: { name: v.name, daily_budget_usd: Number(v.daily_budget_usd) || undefined },
            })
          }
        />
      </Section>
      <Section
        title="Ad squads"
        rows={all('adsquads')}
        cols={(o) => [o.status, usd(o.daily_budget_micro), String(o.campaign_id ?? '')]}
        head={['Status', 'Daily budget', 'Campaign']}
        action={(o) => pauseResume('adsquads', o)}
      >
        <CreateForm
          label="Create ad squad"
          error={err}
          fields={[
            ['Ad squad name', 'name'],
            ['Daily budget (USD)', 'daily_budget_usd', 'number'],
          ]}
          choices={[['Campaign', 'campaign_id', opt(all('campaigns'))]]}
          onSubmit={(v) =>
            write.mutate({
              kind: 'adsquads',
              body: { name: v.name, campaign_id: v.campaign_id, daily_budget_usd: Number(v.daily_budget_usd) },
            })
          }
        />
      </Section>
      <Section
        title="Media"
        rows={all('media')}
        cols={(o) => [String(o.media_status ?? o.status ?? ''), String(o.type ?? '')]}
        head={['Status', 'Type']}
      >
        <MediaForm onUpload={upload} />
      </Section>
      <Section
        title="Creatives"
        rows={all('creatives')}
        cols={(o) => [String(o.headline ?? ''), String(o.top_snap_media_id ?? o.media_id ?? '')]}
        head={['Headline', 'Media']}
      >
        <CreateForm
          label="Create creative"
          error={err}
          fields={[
            ['Creative name', 'name'],
            ['Headline', 'headline'],
            ['Brand name', 'brand_name'],
            ['Profile id', 'profile_id'],
          ]}
          choices={[['Media', 'media_id', opt(all('media'))]]}
          onSubmit={(v) => write.mutate({ kind: 'creatives', body: v })}
        />
      </Section>
      <Section
        title="Ads"
        rows={all('ads')}
        cols={(o) => [o.status, String(o.review_status ?? '')]}
        head={['Status', 'Review']}
        action={(o) => pauseResume('ads', o)}
      >
        <CreateForm
          label="Create ad"
          error={err}
          fields={[['Ad name', 'name']]}
          choices={[
            ['Ad squad', 'ad_squad_id', opt(all('adsquads'))],
            ['Creative', 'creative_id', opt(all('creatives'))],
          ]}
          onSubmit={(v) => write.mutate({ kind: 'ads', body: v })}
        />
      </Section>
      <Stats accountId={accountId} campaigns={all('campaigns')} />
      <Experiments accountId={accountId} campaigns={opt(all('campaigns'))} creatives={opt(all('creatives'))} />
    </>
  );
}

function useList(accountId: string, kind: Kind) {
  return useQuery({
    queryKey: [...useScopeKey('ad-list'), accountId, kind],
    queryFn: async () => (await unwrap(api.GET(path(kind), { params: { path: { accountId } } }))).data as Net[],
  });
}

function Section({
  title,
  rows,
  cols,
  head,
  action,
  children,
}: {
  title: string;
  rows: Net[];
  cols(o: Net): (string | undefined)[];
  head: string[];
  action?(o: Net): ReactNode;
  children: ReactNode;
}) {
  return (
    <section className="tile" aria-label={title}>
      <h2>{title}</h2>
      {children}
      <table>
        <thead>
          <tr>
            <th>Name</th>
            {head.map((h) => (
              <th key={h}>{h}</th>
            ))}
            <th>Id</th>
            <th>
              <span className="visually-hidden">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {rows.map((o) => (
            <tr key={o.id} aria-label={`${title} ${o.name ?? o.id}`}>
              <td>
                {o.name ?? ''}
                {o.dry_run ? <span className="badge"> dry run</span> : null}
              </td>
              {cols(o).map((c, i) => (
                <td key={i}>{c ?? ''}</td>
              ))}
              <td>
                <code>{o.id}</code>
              </td>
              <td>{action?.(o)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}

/** Text fields by visible label, plus selects of objects created before (the network's order). */
function CreateForm({
  label,
  fields,
  choices = [],
  error,
  onSubmit,
}: {
  label: string;
  fields: [string, string, string?][];
  choices?: [string, string, readonly (readonly [string, string])[]][];
  error: unknown;
  onSubmit(v: Record<string, string>): void;
}) {
  const [v, setV] = useState<Record<string, string>>({});
  const value = (k: string, opts?: readonly (readonly [string, string])[]) => v[k] ?? opts?.at(-1)?.[0] ?? '';
  return (
    <form
      className="row"
      aria-label={label}
      onSubmit={(e) => (
        e.preventDefault(),
        onSubmit(
          Object.fromEntries([...fields.map(([, k]) => [k, value(k)]), ...choices.map(([, k, o]) => [k, value(k, o)])]),
        )
      )}
    >
      {fields.map(([l, k, type]) => (
        <label key={k}>
          {l}
          <input
            type={type ?? 'text'}
            step="0.01"
            value={value(k)}
            onChange={(e) => setV({ ...v, [k]: e.target.value })}
          />
          <FieldError error={error} fields={[k]} />
        </label>
      ))}
      {choices.map(([l, k, o]) => (
        <Select key={k} label={l} value={value(k, o)} options={o} onChange={(x) => setV({ ...v, [k]: x })} />
      ))}
      <button type="submit">{label}</button>
    </form>
  );
}

function MediaForm({ onUpload }: { onUpload(f: File, name: string): Promise<void> }) {
  const [file, setFile] = useState<File | null>(null);
  const [name, setName] = useState('');
  const [busy, setBusy] = useState(false);
  return (
    <form
      className="row"
      aria-label="Upload media"
      onSubmit={async (e) => (
        e.preventDefault(), setBusy(true), await onUpload(file!, name || file!.name), setBusy(false)
      )}
    >
      <label>
        Media name
        <input value={name} onChange={(e) => setName(e.target.value)} />
      </label>
      <label>
        Media file
        <input
          type="file"
          accept="image/png,image/jpeg,video/mp4,video/quicktime"
          onChange={(e) => setFile(e.target.files?.[0] ?? null)}
        />
      </label>
      <button type="submit" disabled={!file || busy}>
        Upload media
      </button>
    </form>
  );
}

/** Daily spend (USD) and impressions of the account's campaigns, stored by the hourly sync or pulled now. */
function Stats({ accountId, campaigns }: { accountId: string; campaigns: Net[] }) {
  const qc = useQueryClient();
  const to = day(Date.now());
  const from = day(Date.now() - 13 * DAY_MS);
  const key = [...useScopeKey('ad-stats'), accountId];
  const stats = useQuery({
    queryKey: key,
    queryFn: () =>
      unwrap(
        api.GET('/api/v1/ad-network/stats', {
          params: { query: { from, to, ad_account_id: accountId, entity_type: 'campaign' } },
        }),
      ),
  });
  const pull = useMutation({
    mutationFn: () =>
      unwrap(
        api.POST('/api/v1/ad-network/accounts/{accountId}/stats/pull', { params: { path: { accountId } }, body: {} }),
      ),
    onSuccess: () => qc.invalidateQueries({ queryKey: key }),
  });
  const dates = Array.from({ length: 14 }, (_, i) => day(Date.parse(from) + i * DAY_MS));
  return (
    <Tile
      title="Stats"
      query={stats}
      actions={
        <button type="button" className="secondary" onClick={() => pull.mutate()} disabled={pull.isPending}>
          Pull stats now
        </button>
      }
    >
      {(d) => {
        const sum = (f: (r: (typeof d.data)[number]) => number | null) =>
          dates.map((dt) => d.data.filter((r) => r.day === dt).reduce((a, r) => a + (f(r) ?? 0), 0));
        return (
          <>
            <Problem error={pull.error} />
            {d.data.length === 0 ? (
              <p className="muted">
                No stats stored for the last 14 days{campaigns.length ? '' : ' (no campaign yet)'}.
              </p>
            ) : (
              <Suspense fallback={<p className="muted">Loading…</p>}>
                <div className="row">
                  <LineChart
                    label="Spend (USD) per day"
                    dates={dates}
                    lines={[{ label: 'Spend (USD)', values: sum((r) => r.spend_usd) }]}
                  />
                  <LineChart
                    label="Impressions per day"
                    dates={dates}
                    lines={[{ label: 'Impressions', values: sum((r) => r.impressions) }]}
                  />
                </div>
              </Suspense>
            )}
          </>
        );
      }}
    </Tile>
  );
}

/** Creative experiments: one ad squad + ad per variant (control ACTIVE, the rest PAUSED), per-variant results, stop. */
function Experiments({
  accountId,
  campaigns,
  creatives,
}: {
  accountId: string;
  campaigns: readonly (readonly [string, string])[];
  creatives: readonly (readonly [string, string])[];
}) {
  const qc = useQueryClient();
  const key = [...useScopeKey('ad-experiments'), accountId];
  const list = useQuery({
    queryKey: key,
    queryFn: () =>
      unwrap(api.GET('/api/v1/ad-network/accounts/{accountId}/experiments', { params: { path: { accountId } } })),
  });
  const [v, setV] = useState({ name: '', budget: '', campaign: '', a: '', b: '' });
  const pick = (k: 'campaign' | 'a' | 'b', o: readonly (readonly [string, string])[], i = -1) =>
    v[k] || (o.at(i)?.[0] ?? '');
  const create = useMutation({
    mutationFn: () =>
      unwrap(
        api.POST('/api/v1/ad-network/accounts/{accountId}/experiments', {
          params: { path: { accountId } },
          body: {
            name: v.name,
            campaign_id: pick('campaign', campaigns),
            daily_budget_usd: Number(v.budget),
            variants: [
              { name: 'Control', creative_id: pick('a', creatives, 0) },
              { name: 'Treatment', creative_id: pick('b', creatives) },
            ],
          },
        }),
      ),
    onSuccess: () => qc.invalidateQueries({ queryKey: key }),
  });
  const stop = useMutation({
    mutationFn: (id: string) =>
      unwrap(
        api.POST('/api/v1/ad-network/accounts/{accountId}/experiments/{id}/stop', {
          params: { path: { accountId, id } },
        }),
      ),
    onSuccess: () => qc.invalidateQueries({ queryKey: key }),
  });
  const [open, setOpen] = useState<string | null>(null);
  return (
    <Tile title="Experiments" query={list}>
      {(d) => (
        <>
          <form className="row" aria-label="Start experiment" onSubmit={(e) => (e.preventDefault(), create.mutate())}>
            <label>
              Experiment name
              <input value={v.name} onChange={(e) => setV({ ...v, name: e.target.value })} />
              <FieldError error={create.error} fields={['name']} />
            </label>
            <label>
              Daily budget per variant (USD)
              <input
                type="number"
                step="0.01"
                value={v.budget}
                onChange={(e) => setV({ ...v, budget: e.target.value })}
              />
              <FieldError error={create.error} fields={['daily_budget_usd']} />
            </label>
            <Select
              label="Experiment campaign"
              value={pick('campaign', campaigns)}
              options={campaigns}
              onChange={(x) => setV({ ...v, campaign: x })}
            />
            <Select
              label="Control creative"
              value={pick('a', creatives, 0)}
              options={creatives}
              onChange={(x) => setV({ ...v, a: x })}
            />
            <Select
              label="Treatment creative"
              value={pick('b', creatives)}
              options={creatives}
              onChange={(x) => setV({ ...v, b: x })}
            />
            <button type="submit" disabled={create.isPending}>
              Start experiment
            </button>
          </form>
          <Problem error={create.error ?? stop.error} />
          <table>
            <thead>
              <tr>
                <th>Experiment</th>
                <th>Status</th>
                <th>Variants</th>
                <th>
                  <span className="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {d.data.map((x) => (
                <tr key={x.id} aria-label={`Experiment ${x.name}`}>
                  <td>
                    {x.name}
                    {x.dry_run && <span className="badge"> dry run</span>}
                  </td>
                  <td>{x.status}</td>
                  <td>{x.variants.map((va) => `${va.name} (${va.role}, ${va.status})`).join(', ')}</td>
                  <td className="row">
                    {!x.dry_run && (
                      <button type="button" className="secondary" onClick={() => setOpen(x.id)}>
                        Results
                      </button>
                    )}
                    {x.status !== 'stopped' && (
                      <button type="button" className="danger" onClick={() => stop.mutate(x.id)}>
                        Stop
                      </button>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          {open && <Results key={open} accountId={accountId} id={open} />}
        </>
      )}
    </Tile>
  );
}

function Results({ accountId, id }: { accountId: string; id: string }) {
  const r = useQuery({
    queryKey: [...useScopeKey('ad-experiment-stats'), id],
    queryFn: () =>
      unwrap(
        api.GET('/api/v1/ad-network/accounts/{accountId}/experiments/{id}/stats', {
          params: { path: { accountId, id } },
        }),
      ),
  });
  return (
    <Tile title="Per-variant results" query={r}>
      {({ data }) => (
        <table>
          <thead>
            <tr>
              <th>Variant</th>
              <th>Role</th>
              <th>Status</th>
              <th>Impressions</th>
              <th>Swipes</th>
              <th>Purchases</th>
              <th>Spend ({data.currency})</th>
              <th>Spend (USD)</th>
            </tr>
          </thead>
          <tbody>
            {data.variants.map((x) => (
              <tr key={x.variant_id} aria-label={`Variant ${x.name}`}>
                <td>{x.name}</td>
                <td>{x.role}</td>
                <td>{x.status}</td>
                <td>{x.totals.impressions}</td>
                <td>{x.totals.swipes}</td>
                <td>{x.totals.conversion_purchases}</td>
                <td>{usd(x.totals.spend_local_micro)}</td>
                <td>{x.totals.spend_usd?.toFixed(2) ?? '—'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </Tile>
  );
}
