import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { api, unwrap } from '../api/client';
import { Problem } from '../components/problem';
import { Link, navigate } from '../router';
import { useWorkspace } from '../session';

/** First run (or "+ New ..." in the switcher): create an organization, then an app in it. */
export default function FirstRun({ step }: { step: 'organization' | 'app' }) {
  const w = useWorkspace();
  const qc = useQueryClient();
  const [name, setName] = useState('');
  const create = useMutation({
    mutationFn: async () => {
      if (step === 'organization')
        return { orgId: (await unwrap(api.POST('/api/v1/organizations', { body: { name } }))).data.id };
      const orgId = w.org!.id;
      const app = await unwrap(
        api.POST('/api/v1/organizations/{orgId}/apps', { params: { path: { orgId } }, body: { name } }),
      );
      return { orgId, appId: app.data.id };
    },
    onSuccess: async ({ orgId, appId }: { orgId: string; appId?: string }) => {
      w.select(orgId, appId);
      await qc.invalidateQueries({ queryKey: ['me'] });
      setName('');
      navigate(step === 'organization' ? '/setup/app' : '/', { replace: true });
    },
  });
  const onSubmit = (e: FormEvent) => {
    e.preventDefault();
    create.mutate();
  };
  const isOrg = step === 'organization';
  return (
    <main className="narrow">
      <h1>{isOrg ? 'Create an organization' : `Create an app${w.org ? ` in ${w.org.name}` : ''}`}</h1>
      <p className="muted">
        {isOrg ? 'An organization holds your team and its apps.' : 'Each app has its own keys, settings and analytics.'}
      </p>
      <form onSubmit={onSubmit} className="stack">
        <label>
          {isOrg ? 'Organization name' : 'App name'}
          <input required maxLength={200} value={name} onChange={(e) => setName(e.target.value)} />
        </label>
        <button type="submit" disabled={create.isPending}>
          {isOrg ? 'Create organization' : 'Create app'}
        </button>
        <Problem error={create.error} />
      </form>
      {w.app && (
        <p>
          <Link to="/">Back to the dashboard</Link>
        </p>
      )}
    </main>
  );
}
