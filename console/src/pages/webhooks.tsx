import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { api, unwrap } from '../api/client';
import type { paths } from '../api/schema';
import { ConfirmDialog } from '../components/confirm';
import { FieldError, fieldErrors } from '../components/field-error';
import { Problem } from '../components/problem';
import { Tile } from '../components/tile';
import { useScopeKey } from '../session';

/** The subscribable types (the server's WEBHOOK_EVENT_TYPES; it refuses any other). */
const EVENTS = ['onboarding.started', 'onboarding.completed', 'experiment.exposure', 'user.identified'] as const;
type Endpoint = paths['/api/v1/webhooks']['get']['responses'][200]['content']['application/json']['data'][number];
const toggle = (list: string[], e: string) => (list.includes(e) ? list.filter((x) => x !== e) : [...list, e]);

/** Webhooks: endpoints (secret shown once), edit url and events, disable, delete, rotate; the delivery log with retry and a test event. */
export default function Webhooks() {
  const qc = useQueryClient();
  const key = useScopeKey('webhooks');
  const list = useQuery({ queryKey: key, queryFn: () => unwrap(api.GET('/api/v1/webhooks')) });
  const refresh = () => qc.invalidateQueries({ queryKey: key });
  const [secret, setSecret] = useState<{ url: string; secret: string } | null>(null);
  const [url, setUrl] = useState('');
  const [events, setEvents] = useState<string[]>([EVENTS[0]]);
  const [open, setOpen] = useState<string | null>(null);
  const [editing, setEditing] = useState<Endpoint | null>(null);
  const [deleting, setDeleting] = useState<Endpoint | null>(null);
  const create = useMutation({
    mutationFn: () => unwrap(api.POST('/api/v1/webhooks', { body: { url, events } })),
    onSuccess: (r) => (setSecret(r.data), setOpen(r.data.id), refresh()),
  });
  const patch = useMutation({
    mutationFn: ({ id, ...body }: { id: string; enabled?: boolean }) =>
      unwrap(api.PATCH('/api/v1/webhooks/{id}', { params: { path: { id } }, body })),
    onSuccess: refresh,
  });
  const remove = useMutation({
    mutationFn: (id: string) => unwrap(api.DELETE('/api/v1/webhooks/{id}', { params: { path: { id } } })),
    onSuccess: (_, id) => {
      setDeleting(null);
      if (open === id) setOpen(null);
      if (editing?.id === id) setEditing(null);
      void refresh();
    },
  });
  const rotate = useMutation({
    mutationFn: (id: string) => unwrap(api.POST('/api/v1/webhooks/{id}/rotate-secret', { params: { path: { id } } })),
    onSuccess: (r) => setSecret(r.data),
  });
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
      <Problem error={patch.error ?? rotate.error} />
      {editing && (
        // Keyed apart from the delivery log, a sibling keyed by the endpoint's id.
        <EditEndpoint key={`edit:${editing.id}`} endpoint={editing} onDone={() => (setEditing(null), refresh())} />
      )}
      {deleting && (
        <ConfirmDialog
          title={`Delete the endpoint ${deleting.url}?`}
          pending={remove.isPending}
          error={remove.error}
          onConfirm={() => remove.mutate(deleting.id)}
          onCancel={() => (setDeleting(null), remove.reset())}
        >
          <p>
            No more events are sent to {deleting.url}, and its delivery log is deleted with it. This cannot be undone;
            disable it instead to pause the deliveries.
          </p>
        </ConfirmDialog>
      )}
      <Tile title="Endpoints" query={list}>
        {(d) => (
          <table>
            <thead>
              <tr>
                <th>URL</th>
                <th>Events</th>
                <th>Status</th>
                <th>
                  <span className="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {d.data.map((w) => (
                <tr key={w.id} aria-label={`Endpoint ${w.url}`}>
                  <td>
                    <code>{w.url}</code>
                  </td>
                  <td>{[...w.events].sort().join(', ')}</td>
                  <td>{w.enabled ? 'enabled' : 'disabled'}</td>
                  <td className="row">
                    <button type="button" className="secondary" onClick={() => setOpen(w.id)}>
                      Deliveries
                    </button>
                    <button type="button" className="secondary" onClick={() => setEditing(w)}>
                      Edit
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
                    <button type="button" className="danger" onClick={() => setDeleting(w)}>
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

/** The endpoint's URL and events, changed together; the server's validation shown on its field. */
function EditEndpoint({ endpoint, onDone }: { endpoint: Endpoint; onDone(): void }) {
  const [url, setUrl] = useState(endpoint.url);
  const [events, setEvents] = useState<string[]>(endpoint.events);
  const save = useMutation({
    mutationFn: () =>
      unwrap(api.PATCH('/api/v1/webhooks/{id}', { params: { path: { id: endpoint.id } }, body: { url, events } })),
    onSuccess: onDone,
  });
  const onSave = (e: FormEvent) => (e.preventDefault(), save.mutate());
  return (
    <form className="tile stack" aria-label={`Edit endpoint ${endpoint.url}`} onSubmit={onSave}>
      <h2>Edit endpoint</h2>
      <label>
        URL
        <input
          value={url}
          autoFocus // the form opens on the user's Edit click: typing goes to its first field
          aria-invalid={fieldErrors(save.error, ['url']).length > 0}
          onChange={(e) => setUrl(e.target.value)}
        />
        <FieldError error={save.error} fields={['url']} />
      </label>
      <fieldset className="row">
        <legend>Events</legend>
        {EVENTS.map((ev) => (
          <label key={ev} className="inline">
            <input type="checkbox" checked={events.includes(ev)} onChange={() => setEvents(toggle(events, ev))} /> {ev}
          </label>
        ))}
        <FieldError error={save.error} fields={['events']} />
      </fieldset>
      <div className="row">
        <button type="submit" disabled={save.isPending}>
          Save
        </button>
        <button type="button" className="secondary" onClick={onDone}>
          Cancel
        </button>
      </div>
      <Problem error={save.error} />
    </form>
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
                <th>
                  <span className="visually-hidden">Actions</span>
                </th>
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
