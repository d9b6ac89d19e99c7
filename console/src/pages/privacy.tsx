import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { api, unwrap } from '../api/client';
import { FieldError } from '../components/field-error';
import { Problem } from '../components/problem';
import { Tile } from '../components/tile';
import { useScopeKey } from '../session';

type Subject = { user_id: string } | { anon_id: string };
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** One subject per line: a UUID is an install's anon id, anything else a user id. */
function parseSubjects(text: string): Subject[] {
  return text
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean)
    .map((l) => (UUID.test(l) ? { anon_id: l } : { user_id: l }));
}

/** Privacy: request the erasure of people, follow each request to its receipt, lift suppressions. */
export default function Privacy() {
  const qc = useQueryClient();
  const key = useScopeKey('privacy-deletions');
  const supKey = useScopeKey('privacy-suppressions');
  const deletions = useQuery({
    queryKey: key,
    queryFn: () => unwrap(api.GET('/api/v1/privacy/deletions', { params: { query: { limit: 50 } } })),
    // A request runs for seconds to minutes: follow it until it ends.
    refetchInterval: (q) =>
      q.state.data?.data.some((d) => d.status === 'pending' || d.status === 'running') ? 1000 : false,
  });
  const suppressions = useQuery({
    queryKey: supKey,
    queryFn: () => unwrap(api.GET('/api/v1/privacy/suppressions', { params: { query: { limit: 100 } } })),
  });
  const [text, setText] = useState('');
  const [suppress, setSuppress] = useState(true);
  const refresh = () =>
    Promise.all([qc.invalidateQueries({ queryKey: key }), qc.invalidateQueries({ queryKey: supKey })]);
  const request = useMutation({
    mutationFn: () =>
      unwrap(api.POST('/api/v1/privacy/deletions', { body: { subjects: parseSubjects(text), suppress } })),
    onSuccess: () => (setText(''), refresh()),
  });
  const cancel = useMutation({
    mutationFn: (id: string) => unwrap(api.DELETE('/api/v1/privacy/deletions/{id}', { params: { path: { id } } })),
    onSuccess: refresh,
  });
  const lift = useMutation({
    mutationFn: (hash: string) =>
      unwrap(api.DELETE('/api/v1/privacy/suppressions/{hash}', { params: { path: { hash } } })),
    onSuccess: refresh,
  });
  const onSubmit = (e: FormEvent) => (e.preventDefault(), request.mutate());
  return (
    <>
      <h1>Privacy</h1>
      <form className="tile stack" aria-label="Deletion request" onSubmit={onSubmit}>
        <label>
          People to erase (one per line: a user id, or an install's anon id)
          <textarea rows={4} value={text} onChange={(e) => setText(e.target.value)} />
          <FieldError error={request.error} fields={['subjects']} />
        </label>
        <label className="inline">
          <input type="checkbox" checked={suppress} onChange={(e) => setSuppress(e.target.checked)} /> Keep them out:
          drop their later events and identify calls
        </label>
        <p className="note">
          Their events, identity and traits, webhook copies, exports holding them, their analytics rows and experiment
          exposures are erased within minutes; the receipt below shows each store (docs/privacy.md).
        </p>
        <div className="row">
          <button type="submit" disabled={request.isPending || parseSubjects(text).length === 0}>
            Request deletion
          </button>
        </div>
        <Problem error={request.error} />
      </form>
      <Problem error={cancel.error ?? lift.error} />
      <Tile title="Deletion requests" query={deletions}>
        {(d) =>
          d.data.length === 0 ? (
            <p>No deletion request yet.</p>
          ) : (
            <table>
              <thead>
                <tr>
                  <th>Requested</th>
                  <th>Subjects</th>
                  <th>Status</th>
                  <th>Receipt</th>
                  <th>Actions</th>
                </tr>
              </thead>
              <tbody>
                {d.data.map((r) => (
                  <tr key={r.id} aria-label={`Deletion ${r.id}`}>
                    <td>{new Date(r.created_at).toLocaleString()}</td>
                    <td>{r.subjects.length}</td>
                    <td>
                      {r.status}
                      {r.receipt?.verified ? ' (verified)' : ''}
                      {r.error ? `: ${r.error}` : ''}
                    </td>
                    <td>
                      {r.receipt
                        ? Object.entries(r.receipt.stores)
                            .map(
                              ([store, s]) => `${store} ${s.deleted}${s.remaining > 0 ? ` (${s.remaining} left)` : ''}`,
                            )
                            .join(', ')
                        : '—'}
                    </td>
                    <td>
                      {r.status === 'pending' && (
                        <button type="button" className="secondary" onClick={() => cancel.mutate(r.id)}>
                          Cancel
                        </button>
                      )}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )
        }
      </Tile>
      <Tile title="Suppressed subjects" query={suppressions}>
        {(d) =>
          d.data.length === 0 ? (
            <p>Nobody is suppressed.</p>
          ) : (
            <table>
              <thead>
                <tr>
                  <th>Keyed hash</th>
                  <th>Kind</th>
                  <th>Since</th>
                  <th>Actions</th>
                </tr>
              </thead>
              <tbody>
                {d.data.map((s) => (
                  <tr key={s.hash}>
                    <td>
                      <code>{s.hash.slice(0, 16)}…</code>
                    </td>
                    <td>{s.kind}</td>
                    <td>{new Date(s.created_at).toLocaleString()}</td>
                    <td>
                      <button type="button" className="secondary" onClick={() => lift.mutate(s.hash)}>
                        Lift
                      </button>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )
        }
      </Tile>
    </>
  );
}
