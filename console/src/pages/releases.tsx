import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api, unwrap } from '../api/client';
import { Problem } from '../components/problem';
import { Select } from '../components/select';
import { Tile } from '../components/tile';
import { atLeast } from '../roles';
import { useScopeKey, useWorkspace } from '../session';
import { diffBundles, type ItemChange } from './bundle-diff';

const kb = (n: number) => `${(n / 1024).toFixed(1)} KB`;

/** Releases: every bundle version, a diff between any two, generate, and roll back with what it changes. */
export default function Releases() {
  const { role } = useWorkspace();
  const qc = useQueryClient();
  const key = useScopeKey('releases');
  // Always fresh on opening: what devices fetch now must not be a cached answer.
  const history = useQuery({
    queryKey: key,
    refetchOnMount: 'always',
    queryFn: () => unwrap(api.GET('/api/v1/sdk/config-bundle/history', { params: { query: { limit: 100 } } })),
  });
  const refresh = () => qc.invalidateQueries({ queryKey: key });
  const generate = useMutation({
    mutationFn: () => unwrap(api.POST('/api/v1/sdk/config-bundle/generate')),
    onSuccess: refresh,
  });
  const rollback = useMutation({
    mutationFn: (v: number) => unwrap(api.POST('/api/v1/sdk/config-bundle/rollback', { body: { bundle_version: v } })),
    onSuccess: () => (setTarget(null), refresh()),
  });
  const [target, setTarget] = useState<number | null>(null);
  const rows = history.data?.data ?? [];
  const current = rows.find((r) => r.current);
  const canPublish = atLeast(role, 'admin');
  return (
    <>
      <h1>Releases</h1>
      <section className="tile row" aria-label="Served now">
        <span>
          Devices fetch now:{' '}
          <strong aria-label="Current version">{current ? `version ${current.bundle_version}` : '—'}</strong>
        </span>
        {current && (
          <span className="muted">
            generated {new Date(current.generated_at).toLocaleString()}, minimum SDK {current.sdk_min_version}
          </span>
        )}
        <span className="spacer" />
        {canPublish && (
          <button type="button" onClick={() => generate.mutate()} disabled={generate.isPending}>
            Generate new version
          </button>
        )}
      </section>
      <Problem error={generate.error ?? rollback.error} />
      {target !== null && current && (
        <ConfirmRollback
          from={current.bundle_version}
          to={target}
          pending={rollback.isPending}
          onConfirm={() => rollback.mutate(target)}
          onCancel={() => setTarget(null)}
        />
      )}
      {rows.length > 1 && <Diff versions={rows.map((r) => r.bundle_version)} />}
      <Tile title="History" query={history}>
        {(d) => (
          <table>
            <thead>
              <tr>
                <th>Version</th>
                <th>When</th>
                <th>By</th>
                <th>Why</th>
                <th>Size</th>
                <th>
                  <span className="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {d.data.map((r) => (
                <tr key={r.bundle_version} aria-label={`Version ${r.bundle_version}`}>
                  <td>
                    {r.bundle_version}
                    {r.current && <span className="badge"> current</span>}
                  </td>
                  <td>{new Date(r.generated_at).toLocaleString()}</td>
                  <td>{r.actor_user_id ?? 'system'}</td>
                  <td>
                    {r.reason}
                    {r.rolled_back_from ? ` (content of version ${r.rolled_back_from})` : ''}
                  </td>
                  <td>{kb(r.size_bytes)}</td>
                  <td>
                    {!r.current && canPublish && (
                      <button type="button" className="secondary" onClick={() => setTarget(r.bundle_version)}>
                        Roll back to version {r.bundle_version}
                      </button>
                    )}
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

function useBundle(version: number | null) {
  return useQuery({
    queryKey: useScopeKey('bundle', version),
    enabled: version !== null,
    staleTime: Infinity, // a version's content never changes
    queryFn: () =>
      unwrap(api.GET('/api/v1/sdk/config-bundle/history/{version}', { params: { path: { version: version! } } })),
  });
}

function useChanges(from: number | null, to: number | null) {
  const a = useBundle(from);
  const b = useBundle(to);
  const changes = a.data && b.data ? diffBundles(a.data.data.content, b.data.data.content) : null;
  return { changes, error: a.error ?? b.error };
}

function Changes({ changes }: { changes: ItemChange[] }) {
  if (changes.length === 0) return <p className="muted">No content item differs.</p>;
  return (
    <ul className="diff" aria-label="Changes">
      {changes.map((c) => (
        <li key={`${c.section}/${c.key}`} className={c.change}>
          {c.change}: {c.section}{' '}
          {c.name ? (
            <>
              “{c.name}” (<code>{c.key}</code>)
            </>
          ) : (
            <code>{c.key}</code>
          )}
        </li>
      ))}
    </ul>
  );
}

function Diff({ versions }: { versions: number[] }) {
  const [from, setFrom] = useState(String(versions[1]));
  const [to, setTo] = useState(String(versions[0]));
  const { changes, error } = useChanges(Number(from), Number(to));
  const opts = versions.map(String);
  return (
    <section className="tile" aria-label="Compare versions">
      <header className="row">
        <h2>Compare</h2>
        <Select label="From version" value={from} options={opts} onChange={setFrom} />
        <Select label="To version" value={to} options={opts} onChange={setTo} />
      </header>
      <Problem error={error} />
      {changes ? <Changes changes={changes} /> : !error && <p className="muted">Loading…</p>}
    </section>
  );
}

/** Names what devices will get instead of what they get now, before anything happens. */
function ConfirmRollback({
  from,
  to,
  pending,
  onConfirm,
  onCancel,
}: {
  from: number;
  to: number;
  pending: boolean;
  onConfirm(): void;
  onCancel(): void;
}) {
  const { changes, error } = useChanges(from, to);
  return (
    <section className="tile" aria-label="Confirm roll back">
      <h2>Roll back to the content of version {to}?</h2>
      <p>
        A new version is made with that content; devices fetch it on their next check. Compared with version {from},
        served now:
      </p>
      <Problem error={error} />
      {changes && <Changes changes={changes} />}
      <div className="row">
        <button type="button" className="danger" disabled={!changes || pending} onClick={onConfirm}>
          Roll back
        </button>
        <button type="button" className="secondary" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </section>
  );
}
