import { useMutation, useQuery } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { api, unwrap } from '../api/client';
import { FieldError } from '../components/field-error';
import { Problem } from '../components/problem';
import { Tile } from '../components/tile';
import { useScopeKey } from '../session';

type Key = { key: string; secret: string };
const headers = (k: Key) => ({ 'x-api-key': k.key, 'x-api-secret': k.secret });
const iso = (local: string) => (local ? new Date(local).toISOString() : '');
const localInput = (d: Date) => new Date(d.getTime() - d.getTimezoneOffset() * 60_000).toISOString().slice(0, 16);

/**
 * Exports: the export API takes an SDK key with the export permission (not the console's sign-in),
 * so the page asks for one; the secret stays in this page's memory only.
 */
export default function Exports() {
  const [key, setKey] = useState<Key>({ key: '', secret: '' });
  const [ready, setReady] = useState<Key | null>(null);
  return (
    <>
      <h1>Exports</h1>
      <form className="tile row" aria-label="Export credentials" onSubmit={(e) => (e.preventDefault(), setReady(key))}>
        <label>
          Export key
          <input value={key.key} placeholder="svc_live_…" onChange={(e) => setKey({ ...key, key: e.target.value })} />
        </label>
        <label>
          Export secret
          <input type="password" value={key.secret} onChange={(e) => setKey({ ...key, secret: e.target.value })} />
        </label>
        <button type="submit">Use key</button>
        <span className="muted">A key with "Can export data" (API keys page).</span>
      </form>
      {ready && <Bulk k={ready} />}
      {ready && <Schema k={ready} />}
    </>
  );
}

function Bulk({ k }: { k: Key }) {
  const [from, setFrom] = useState(localInput(new Date(Date.now() - 7 * 86_400_000)));
  const [to, setTo] = useState(localInput(new Date(Date.now() + 60_000)));
  const [names, setNames] = useState('');
  const [callback, setCallback] = useState('');
  const [ids, setIds] = useState<string[]>([]);
  const start = useMutation({
    mutationFn: () =>
      unwrap(
        api.POST('/api/v1/sdk/events/export/bulk', {
          headers: headers(k),
          body: {
            start_date: iso(from),
            end_date: iso(to),
            event_names: names
              ? names
                  .split(',')
                  .map((s) => s.trim())
                  .filter(Boolean)
              : undefined,
            callback_url: callback || undefined,
          },
        }),
      ),
    onSuccess: (r) => setIds([r.data.id, ...ids]),
  });
  const onStart = (e: FormEvent) => (e.preventDefault(), start.mutate());
  return (
    <>
      <form className="tile stack" aria-label="Bulk export" onSubmit={onStart}>
        <div className="row">
          <label>
            From
            <input type="datetime-local" value={from} onChange={(e) => setFrom(e.target.value)} />
            <FieldError error={start.error} fields={['start_date']} />
          </label>
          <label>
            To
            <input type="datetime-local" value={to} onChange={(e) => setTo(e.target.value)} />
            <FieldError error={start.error} fields={['end_date']} />
          </label>
          <label>
            Event names
            <input value={names} placeholder="all; or a, b, c" onChange={(e) => setNames(e.target.value)} />
            <FieldError error={start.error} fields={['event_names']} />
          </label>
          <label>
            Callback URL
            <input value={callback} onChange={(e) => setCallback(e.target.value)} />
            <FieldError error={start.error} fields={['callback_url']} />
          </label>
          <button type="submit" disabled={start.isPending}>
            Start export
          </button>
        </div>
        <Problem error={start.error} />
      </form>
      {ids.map((id) => (
        <Job key={id} id={id} k={k} />
      ))}
    </>
  );
}

/** One bulk export, polled until it is no longer processing; the download goes through the key's headers. */
function Job({ id, k }: { id: string; k: Key }) {
  const job = useQuery({
    queryKey: useScopeKey('export', id),
    queryFn: () =>
      unwrap(api.GET('/api/v1/sdk/events/export/bulk/{id}', { headers: headers(k), params: { path: { id } } })),
    refetchInterval: (q) => (q.state.data?.data.status === 'processing' ? 1000 : false),
  });
  const [error, setError] = useState<unknown>(null);
  const download = async () => {
    setError(null);
    const r = await fetch(`/api/v1/sdk/events/export/bulk/${encodeURIComponent(id)}/download`, { headers: headers(k) });
    if (!r.ok) return setError(new Error(`download answered ${r.status}`));
    const a = document.createElement('a');
    a.href = URL.createObjectURL(await r.blob());
    a.download = `export-${id}.json`;
    a.click();
    URL.revokeObjectURL(a.href);
  };
  return (
    <Tile title={`Export ${id}`} query={job}>
      {({ data: x }) => (
        <div className="row">
          <span aria-label="Export status" className="badge">
            {x.status}
          </span>
          <span>
            {x.params.start_date} → {x.params.end_date}
            {x.params.event_names.length ? `, ${x.params.event_names.join(', ')}` : ''}
          </span>
          {x.status === 'completed' && (
            <span>
              {x.event_count} events, {x.file_size_bytes} bytes, expires{' '}
              {x.expires_at ? new Date(x.expires_at).toLocaleString() : '—'}
            </span>
          )}
          {x.failure_reason && <span className="problem">{x.failure_reason}</span>}
          {x.status === 'completed' && !x.expired && (
            <button type="button" onClick={download}>
              Download
            </button>
          )}
          {x.expired && <span className="muted">expired</span>}
          <Problem error={error} />
        </div>
      )}
    </Tile>
  );
}

/** The event schema: names, counts and the property types seen. */
function Schema({ k }: { k: Key }) {
  const schema = useQuery({
    queryKey: useScopeKey('export-schema', k.key),
    queryFn: () => unwrap(api.GET('/api/v1/sdk/events/export/schema', { headers: headers(k) })),
  });
  return (
    <Tile title="Event schema" query={schema}>
      {(d) => (
        <table>
          <thead>
            <tr>
              <th>Event</th>
              <th>Count</th>
              <th>Last seen</th>
              <th>Properties</th>
            </tr>
          </thead>
          <tbody>
            {d.data.map((e) => (
              <tr key={e.event_name}>
                <td>
                  <code>{e.event_name}</code>
                </td>
                <td>{e.count}</td>
                <td>{new Date(e.last_seen).toLocaleString()}</td>
                <td>{e.properties.map((p) => `${p.name}: ${p.types.join(' | ')}`).join(', ')}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </Tile>
  );
}
