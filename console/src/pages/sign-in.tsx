import { useMutation, useQuery } from '@tanstack/react-query';
import { type FormEvent, type ReactNode, useEffect, useRef, useState } from 'react';
import { api, unwrap } from '../api/client';
import { Problem } from '../components/problem';
import { useWorkspace } from '../session';

/**
 * Sign in, or create an account when signup is open (the API's signup-enabled flag). `again`: the
 * sign-in ended under the user; a modal dialog over the page, which stays as it was.
 */
export default function SignIn({ again = false }: { again?: boolean }) {
  const { signIn, me } = useWorkspace();
  const [email, setEmail] = useState(again ? (me?.email ?? '') : '');
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
    <Frame again={again}>
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
          {open.data?.enabled && !again && (
            <button type="button" disabled={submit.isPending} onClick={() => submit.mutate('signup')}>
              Create account
            </button>
          )}
        </div>
        {open.data?.enabled && !again && <p className="muted">New here? Passwords need at least 10 characters.</p>}
        {open.data?.enabled === false && !again && (
          <p className="muted">Signup is closed; ask an owner of your organization to add you.</p>
        )}
        <Problem error={submit.error} />
      </form>
    </Frame>
  );
}

function Frame({ again, children }: { again: boolean; children: ReactNode }) {
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    if (again && !ref.current?.open) ref.current?.showModal();
  }, [again]);
  if (!again)
    return (
      <main className="narrow">
        <h1>Sign in</h1>
        {children}
      </main>
    );
  return (
    // Escape would close it and leave a page whose calls all fail: it closes by signing in.
    <dialog ref={ref} aria-labelledby="session-ended" onCancel={(e) => e.preventDefault()}>
      <h2 id="session-ended">Your session ended</h2>
      <p className="muted">Sign in again to go on: this page and what you were editing stay as they are.</p>
      {children}
    </dialog>
  );
}
