import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { api, unwrap } from '../api/client';
import { Problem } from '../components/problem';
import { Select } from '../components/select';
import { Tile } from '../components/tile';
import { atLeast, ROLES } from '../roles';
import { useWorkspace, type Role } from '../session';

/** Members of the organization: invite (existing accounts), change role, remove. */
export default function Members() {
  const { org, role, me } = useWorkspace();
  const qc = useQueryClient();
  const orgId = org!.id;
  const key = ['members', orgId];
  const members = useQuery({
    queryKey: key,
    queryFn: () => unwrap(api.GET('/api/v1/organizations/{orgId}/members', { params: { path: { orgId } } })),
  });
  const canManage = atLeast(role, 'admin');
  const done = () => qc.invalidateQueries({ queryKey: key });
  const upsert = useMutation({
    mutationFn: (b: { email: string; role: Role }) =>
      unwrap(api.POST('/api/v1/organizations/{orgId}/members', { params: { path: { orgId } }, body: b })),
    onSuccess: done,
  });
  const remove = useMutation({
    mutationFn: (userId: string) =>
      unwrap(api.DELETE('/api/v1/organizations/{orgId}/members/{userId}', { params: { path: { orgId, userId } } })),
    onSuccess: done,
  });
  const [email, setEmail] = useState('');
  const [newRole, setNewRole] = useState<Role>('member');
  const [confirming, setConfirming] = useState<string | null>(null);
  const invite = (e: FormEvent) => {
    e.preventDefault();
    upsert.mutate({ email, role: newRole }, { onSuccess: () => setEmail('') });
  };

  return (
    <>
      <h1>Members of {org!.name}</h1>
      {!canManage && <p className="muted">Your role ({role}) can see the members; owners and admins manage them.</p>}
      <form className="row tile" onSubmit={invite} aria-label="Invite a member">
        <label>
          Member email
          <input type="email" required value={email} disabled={!canManage} onChange={(e) => setEmail(e.target.value)} />
        </label>
        <Select label="Role" value={newRole} options={ROLES} onChange={setNewRole} disabled={!canManage} />
        <button type="submit" disabled={!canManage || upsert.isPending}>
          Invite
        </button>
        <span className="muted">They need an account first (Create account on the sign-in page).</span>
      </form>
      <Problem error={upsert.error ?? remove.error} />
      <Tile title="Members" query={members}>
        {(d) => (
          <table>
            <thead>
              <tr>
                <th>Email</th>
                <th>Name</th>
                <th>Role</th>
                <th>
                  <span className="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {d.data.map((m) => (
                <tr key={m.user_id}>
                  <td>
                    {m.email}
                    {m.user_id === me?.id && ' (you)'}
                  </td>
                  <td>{m.name ?? ''}</td>
                  <td>
                    <Select
                      name={`Role of ${m.email}`}
                      value={m.role}
                      options={ROLES}
                      onChange={(role) => upsert.mutate({ email: m.email, role })}
                      disabled={!canManage}
                    />
                  </td>
                  <td>
                    {confirming === m.user_id ? (
                      <span className="row">
                        <button
                          type="button"
                          className="danger"
                          onClick={() => remove.mutate(m.user_id, { onSettled: () => setConfirming(null) })}
                        >
                          Confirm removal of {m.email}
                        </button>
                        <button type="button" className="secondary" onClick={() => setConfirming(null)}>
                          Cancel
                        </button>
                      </span>
                    ) : (
                      <button
                        type="button"
                        className="secondary"
                        disabled={!canManage}
                        aria-label={`Remove ${m.email}`}
                        onClick={() => setConfirming(m.user_id)}
                      >
                        Remove
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
