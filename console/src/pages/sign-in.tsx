import { useMutation, useQuery } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { api, unwrap } from '../api/client';
import { Problem } from '../components/problem';
import { useWorkspace } from '../session';

/** Sign in, or create an account when signup is open (the API's signup-enabled flag). */
export default function SignIn() {
  const { signIn } = useWorkspace();
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const open = useQuery({
    queryKey: ['signup-enabled'],
    queryFn: () => unwrap(api.GET('/api/v1/auth/signup-enabled')),
  });
  const submit = useMutation({
    mutationFn: (mode: 'login' | 'signup') =>
      unwrap(
        mode === 'login'
          ? api.POST('/api/v1/auth/login', { body: { email, password } })
          : api.POST('/api/v1/auth/signup', { body: { email, password } }),
      ),
    onSuccess: (r) => signIn(r.token, r.expires_in),
  });
  const onSubmit = (e: FormEvent) => {
    e.preventDefault();
    submit.mutate('login');
  };
  return (
    <main className="narrow">
      <h1>Sign in</h1>
      <form onSubmit={onSubmit} className="stack">
        <label>
          Email
          <input
            type="email"
            autoComplete="username"
            required
            value={email}
            onChange={(e) => setEmail(e.target.value)}
          />
        </label>
        <label>
          Password
          <input
            type="password"
            autoComplete="current-password"
            required
            value={password}
            onChange={(e) => setPassword(e.target.value)}
          />
        </label>
        <div className="row">
          <button type="submit" disabled={submit.isPending}>
            Sign in
          </button>
          {open.data?.enabled && (
            <button type="button" disabled={submit.isPending} onClick={() => submit.mutate('signup')}>
              Create account
            </button>
          )}
        </div>
        {open.data?.enabled && <p className="muted">New here? Passwords need at least 10 characters.</p>}
        {open.data?.enabled === false && (
          <p className="muted">Signup is closed; ask an owner of your organization to add you.</p>
        )}
        <Problem error={submit.error} />
      </form>
    </main>
  );
}
