import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { api, unwrap } from '../api/client';
import type { paths } from '../api/schema';
import { ConfirmDialog } from '../components/confirm';
import { Problem } from '../components/problem';
import { Select } from '../components/select';
import { Tile } from '../components/tile';
import { atLeast } from '../roles';
import { useScopeKey, useWorkspace } from '../session';

type Key = paths['/api/v1/sdk/api-keys']['get']['responses'][200]['content']['application/json']['data'][number];
type Created = paths['/api/v1/sdk/api-keys']['post']['responses'][201]['content']['application/json']['data'];

/** Seconds the replaced key keeps working. */
const OVERLAPS = [
  ['0', 'Revoke the old key now'],
  ['3600', 'Keep the old key 1 hour'],
  ['86400', 'Keep the old key 24 hours'],
  ['604800', 'Keep the old key 7 days'],
] as const;

/** The app's SDK keys: create (secret shown once), rotate with an overlap, revoke. */
export default function ApiKeys() {
  const { role } = useWorkspace();
  const qc = useQueryClient();
  const key = useScopeKey('api-keys');
  const keys = useQuery({ queryKey: key, queryFn: () => unwrap(api.GET('/api/v1/sdk/api-keys')) });
  const [secret, setSecret] = useState<Created | null>(null);
  const refresh = () => qc.invalidateQueries({ queryKey: key });
  const create = useMutation({
    mutationFn: (b: { environment: 'production' | 'sandbox'; name?: string; permissions: 'export_data'[] }) =>
      unwrap(api.POST('/api/v1/sdk/api-keys', { body: b })),
    onSuccess: (r) => (setSecret(r.data), refresh()),
  });
  const rotate = useMutation({
    mutationFn: ({ id, overlap }: { id: string; overlap: number }) =>
      unwrap(
        api.POST('/api/v1/sdk/api-keys/{id}/rotate', { params: { path: { id } }, body: { overlap_seconds: overlap } }),
      ),
    onSuccess: (r) => (setSecret(r.data), refresh()),
  });
  const revoke = useMutation({
    mutationFn: (id: string) => unwrap(api.DELETE('/api/v1/sdk/api-keys/{id}', { params: { path: { id } } })),
    onSuccess: () => (setConfirming(null), refresh()),
  });
  const [env, setEnv] = useState<'production' | 'sandbox'>('production');
  const [name, setName] = useState('');
  const [exportData, setExportData] = useState(false);
  const [overlap, setOverlap] = useState<Record<string, string>>({});
  const [confirming, setConfirming] = useState<Key | null>(null);
  const canManage = atLeast(role, 'admin');
  const onCreate = (e: FormEvent) => {
    e.preventDefault();
    create.mutate({ environment: env, name: name || undefined, permissions: exportData ? ['export_data'] : [] });
  };

  return (
    <>
      <h1>API keys</h1>
      {secret && <SecretOnce created={secret} onDone={() => setSecret(null)} />}
      {canManage && (
        <form className="row tile" onSubmit={onCreate} aria-label="Create a key">
          <label>
            Key name
            <input value={name} maxLength={200} onChange={(e) => setName(e.target.value)} />
          </label>
          <label>
            Key environment
            <select value={env} onChange={(e) => setEnv(e.target.value as typeof env)}>
              <option value="production">production (svc_live_)</option>
              <option value="sandbox">sandbox (svc_test_)</option>
            </select>
          </label>
          <label className="inline">
            <input type="checkbox" checked={exportData} onChange={(e) => setExportData(e.target.checked)} /> Can export
            data
          </label>
          <button type="submit" disabled={create.isPending}>
            Create key
          </button>
        </form>
      )}
      <Problem error={create.error ?? rotate.error} />
      {confirming && (
        <ConfirmDialog
          title={`Revoke the key ${confirming.public_key}?`}
          pending={revoke.isPending}
          error={revoke.error}
          onConfirm={() => revoke.mutate(confirming.id)}
          onCancel={() => (setConfirming(null), revoke.reset())}
        >
          <p>
            Calls with the key {confirming.public_key}
            {confirming.name ? ` ("${confirming.name}")` : ''} are refused from now on. This cannot be undone; rotate it
            instead to replace it with an overlap.
          </p>
        </ConfirmDialog>
      )}
      <Tile title="Keys" query={keys}>
        {(d) => (
          <table>
            <thead>
              <tr>
                <th>Name</th>
                <th>Public key</th>
                <th>Environment</th>
                <th>Status</th>
                <th>Permissions</th>
                <th>Created</th>
                <th>
                  <span className="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {d.data.map((k) => (
                <tr key={k.id} aria-label={`Key ${k.public_key}`}>
                  <td>{k.name ?? ''}</td>
                  <td>
                    <code>{k.public_key}</code>
                  </td>
                  <td>{k.environment}</td>
                  <td>
                    {k.status}
                    {k.status === 'active' && k.revokes_at ? ` (until ${new Date(k.revokes_at).toLocaleString()})` : ''}
                  </td>
                  <td>{k.permissions.join(', ') || '—'}</td>
                  <td>{new Date(k.created_at).toLocaleDateString()}</td>
                  <td>
                    {k.status === 'active' && canManage && (
                      <span className="row">
                        <Select
                          name={`Overlap for ${k.public_key}`}
                          value={overlap[k.id] ?? '0'}
                          options={OVERLAPS}
                          onChange={(s) => setOverlap({ ...overlap, [k.id]: s })}
                        />
                        <button
                          type="button"
                          className="secondary"
                          onClick={() => rotate.mutate({ id: k.id, overlap: Number(overlap[k.id] ?? 0) })}
                        >
                          Rotate
                        </button>
                        <button type="button" className="danger" onClick={() => setConfirming(k)}>
                          Revoke
                        </button>
                      </span>
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

function SecretOnce({ created, onDone }: { created: Created; onDone(): void }) {
  const [copied, setCopied] = useState(false);
  const copy = async () => {
    await navigator.clipboard.writeText(created.secret_key);
    setCopied(true);
  };
  return (
    <section className="tile" aria-label="New secret key">
      <h2>Key {created.public_key} created</h2>
      <p className="warning" role="note">
        Copy the secret now: it is shown only once and cannot be recovered (only its hash is stored).
        {created.previous_key_revokes_at &&
          ` The replaced key stops working at ${new Date(created.previous_key_revokes_at).toLocaleString()}.`}
      </p>
      <div className="row">
        <code className="secret" aria-label="Secret key">
          {created.secret_key}
        </code>
        <button type="button" onClick={copy}>
          {copied ? 'Copied' : 'Copy secret'}
        </button>
        <button type="button" className="secondary" onClick={onDone}>
          I have stored it
        </button>
      </div>
    </section>
  );
}
