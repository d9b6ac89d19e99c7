import { Suspense, type ReactNode } from 'react';
import { PAGES } from './pages';
import { Link, navigate } from './router';
import { useWorkspace, type Environment } from './session';

const NEW = '__new__';

/** Header (org/app switcher, environment, user), navigation, and the page. */
export function Layout({ children }: { children: ReactNode }) {
  const w = useWorkspace();
  return (
    <div className="layout">
      <header className="top">
        <strong className="brand">Console</strong>
        <label>
          Organization{' '}
          <select
            value={w.org?.id}
            onChange={(e) => (e.target.value === NEW ? navigate('/setup/organization') : w.select(e.target.value))}
          >
            {w.me?.organizations.map((o) => (
              <option key={o.id} value={o.id}>
                {o.name}
              </option>
            ))}
            <option value={NEW}>+ New organization…</option>
          </select>
        </label>
        <label>
          App{' '}
          <select
            value={w.app?.id}
            onChange={(e) => (e.target.value === NEW ? navigate('/setup/app') : w.select(w.org!.id, e.target.value))}
          >
            {w.org?.apps.map((a) => (
              <option key={a.id} value={a.id}>
                {a.name}
              </option>
            ))}
            <option value={NEW}>+ New app…</option>
          </select>
        </label>
        <label>
          Environment{' '}
          <select value={w.environment} onChange={(e) => w.setEnvironment(e.target.value as Environment)}>
            <option value="production">Production</option>
            <option value="sandbox">Sandbox</option>
          </select>
        </label>
        <span className="spacer" />
        <span className="muted">
          {w.me?.email} ({w.role})
        </span>
        <button type="button" onClick={w.signOut}>
          Sign out
        </button>
      </header>
      <nav aria-label="Main">
        <ul>
          {PAGES.map((p) => (
            <li key={p.path}>
              <Link to={p.path}>{p.label}</Link>
            </li>
          ))}
        </ul>
      </nav>
      <main>
        <Suspense fallback={<p className="muted">Loading…</p>}>{children}</Suspense>
      </main>
    </div>
  );
}
