import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { api, unwrap } from '../api/client';
import { FieldError } from '../components/field-error';
import { Problem } from '../components/problem';
import { Tile } from '../components/tile';
import { useScopeKey } from '../session';

/** The subscribable types (the server's WEBHOOK_EVENT_TYPES; it refuses any other). */
const EVENTS = ['onboarding.started', 'onboarding.completed', 'experiment.exposure', 'user.identified'] as const;

/** Webhooks: endpoints (secret shown once), events, disable, delete, rotate; the delivery log with retry and a test event. */
export default function Webhooks() {
  const qc = useQueryClient();
  const key = useScopeKey('webhooks');
  const list = useQuery({ queryKey: key, queryFn: () => unwrap(api.GET('/api/v1/webhooks')) });
  const refresh = () => qc.invalidateQueries({ queryKey: key });
  const [secret, setSecret] = useState<{ url: string; secret: string } | null>(null);
  const [url, setUrl] = useState('');
  const [events, setEvents] = useState<string[]>([EVENTS[0]]);
  const [open, setOpen] = useState<string | null>(null);
  const create = useMutation({
    mutationFn: () => unwrap(api.POST('/api/v1/webhooks', { body: { url, events } })),
    onSuccess: (r) => (setSecret(r.data), setOpen(r.data.id), refresh()),
  });
  const patch = useMutation({
    mutationFn: ({ id, ...body }: { id: string; enabled?: boolean; events?: string[] }) =>
      unwrap(api.PATCH('/api/v1/webhooks/{id}', { params: { path: { id } }, body })),
    onSuccess: refresh,
  });
  const remove = useMutation({
    mutationFn: (id: string) => unwrap(api.DELETE('/api/v1/webhooks/{id}', { params: { path: { id } } })),
    onSuccess: refresh,
  });
  const rotate = useMutation({
    mutationFn: (id: string) => unwrap(api.POST('/api/v1/webhooks/{id}/rotate-secret', { params: { path: { id } } })),
    onSuccess: (r) => setSecret(r.data),
  });
  const toggle = (list: string[], e: string) => (list.includes(e) ? list.filter((x) => x !== e) : [...list, e]);
  const onCreate = (e: FormEvent) => (e.preventDefault(), create.mutate());
  return (
    <>
      <h1>Webhooks</h1>
      {secret && (
        <section className="tile" aria-label="Signing secret">
          <p className="warning" role="note">
            Signing secret of {secret.url}: copy it now, it is shown only once.
          </p>
          <div className="row">
            <code className="secret" aria-label="Secret">
              {secret.secret}
            </code>
            <button type="button" className="secondary" onClick={() => setSecret(null)}>
              I have stored it
            </button>
          </div>
        </section>
      )}
      <form className="tile stack" aria-label="New endpoint" onSubmit={onCreate}>
        <label>
          Endpoint URL
          <input value={url} onChange={(e) => setUrl(e.target.value)} placeholder="https://" />
          <FieldError error={create.error} fields={['url']} />
        </label>
        <fieldset className="row">
          <legend>Events</legend>
          {EVENTS.map((ev) => (
            <label key={ev} className="inline">
              <input type="checkbox" checked={events.includes(ev)} onChange={() => setEvents(toggle(events, ev))} />{' '}
              {ev}
            </label>
          ))}
          <FieldError error={create.error} fields={['events']} />
        </fieldset>
        <div className="row">
          <button type="submit" disabled={create.isPending}>
            Create endpoint
          </button>
        </div>
        <Problem error={create.error} />
      </form>
      <Problem error={patch.error ?? remove.error ?? rotate.error} />
      <Tile title="Endpoints" query={list}>
        {(d) => (
          <table>
            <thead>
              <tr>
                <th>URL</th>
                <th>Events</th>
                <th>Status</th>
                <th />
              </tr>
            </thead>
            <tbody>
              {d.data.map((w) => (
                <tr key={w.id} aria-label={`Endpoint ${w.url}`}>
                  <td>
                    <code>{w.url}</code>
                  </td>
                  <td>
                    {EVENTS.map((ev) => (
                      <label key={ev} className="inline">
                        <input
                          type="checkbox"
                          checked={w.events.includes(ev)}
                          onChange={() => patch.mutate({ id: w.id, events: toggle(w.events, ev) })}
                        />{' '}
                        {ev}
                      </label>
                    ))}
                  </td>
                  <td>{w.enabled ? 'enabled' : 'disabled'}</td>
                  <td className="row">
                    <button type="button" className="secondary" onClick={() => setOpen(w.id)}>
                      Deliveries
                    </button>
                    <button
                      type="button"
                      className="secondary"
                      onClick={() => patch.mutate({ id: w.id, enabled: !w.enabled })}
                    >
                      {w.enabled ? 'Disable' : 'Enable'}
                    </button>
                    <button type="button" className="secondary" onClick={() => rotate.mutate(w.id)}>
                      Rotate secret
                    </button>
                    <button
                      type="button"
                      className="danger"
                      onClick={() => (remove.mutate(w.id), open === w.id && setOpen(null))}
                    >
                      Delete
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </Tile>
      {open && <Deliveries key={open} id={open} url={list.data?.data.find((w) => w.id === open)?.url ?? ''} />}
    </>
  );
}

/** The delivery log of one endpoint, refreshed while something is pending. */
function Deliveries({ id, url }: { id: string; url: string }) {
  const qc = useQueryClient();
  const key = useScopeKey('webhook-deliveries', id);
  const log = useQuery({
    queryKey: key,
    queryFn: () =>
      unwrap(api.GET('/api/v1/webhooks/{id}/deliveries', { params: { path: { id }, query: { limit: 50 } } })),
    refetchInterval: (q) => (q.state.data?.data.some((d) => d.status === 'pending') ? 1000 : false),
  });
  const refresh = () => qc.invalidateQueries({ queryKey: key });
  const test = useMutation({
    mutationFn: () => unwrap(api.POST('/api/v1/webhooks/{id}/test', { params: { path: { id } } })),
    onSuccess: refresh,
  });
  const retry = useMutation({
    mutationFn: (deliveryId: string) =>
      unwrap(api.POST('/api/v1/webhooks/{id}/deliveries/{deliveryId}/retry', { params: { path: { id, deliveryId } } })),
    onSuccess: refresh,
  });
  return (
    <Tile
      title={`Delivery log ${url}`}
      query={log}
      actions={
        <button type="button" onClick={() => test.mutate()}>
          Send test event
        </button>
      }
    >
      {(d) => (
        <>
          <Problem error={test.error ?? retry.error} />
          <table>
            <thead>
              <tr>
                <th>Event</th>
                <th>Status</th>
                <th>Attempts</th>
                <th>Response</th>
                <th>Created</th>
                <th />
              </tr>
            </thead>
            <tbody>
              {d.data.map((x) => (
                <tr key={x.id} aria-label={`Delivery ${x.event_type}`}>
                  <td>{x.event_type}</td>
                  <td>{x.status}</td>
                  <td>{x.attempts}</td>
                  <td>
                    {x.last_status_code ?? '—'}
                    {x.last_duration_ms !== null ? ` in ${x.last_duration_ms} ms` : ''}
                    {x.last_error ? ` ${x.last_error}` : ''}
                  </td>
                  <td>{new Date(x.created_at).toLocaleString()}</td>
                  <td>
                    <button type="button" className="secondary" onClick={() => retry.mutate(x.id)}>
                      Retry
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      )}
    </Tile>
  );
}
