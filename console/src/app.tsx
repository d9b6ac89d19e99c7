import { Problem } from './components/problem';
import { Layout } from './layout';
import { PAGES } from './pages';
import FirstRun from './pages/first-run';
import SignIn from './pages/sign-in';
import { usePath } from './router';
import { useWorkspace } from './session';

/** Which screen: sign-in, first run (no org or no app yet), or a page of the registry. */
export function App() {
  const w = useWorkspace();
  const path = usePath();
  if (!w.signedIn) return <SignIn />;
  if (!w.me) return w.meError ? <Problem error={w.meError} /> : <p className="muted">Loading…</p>;
  if (!w.org || path === '/setup/organization') return <FirstRun step="organization" />;
  if (!w.app || path === '/setup/app') return <FirstRun step="app" />;
  const page = PAGES.find((p) => p.path === path);
  const Page = page?.component;
  return (
    <Layout>
      {/* Keyed by app: a switch starts each page afresh (forms, selections). */}
      {Page ? <Page key={`${w.org.id}/${w.app.id}`} /> : <p>No page here. Pick one from the navigation.</p>}
    </Layout>
  );
}
