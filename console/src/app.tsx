import { type ComponentType, useEffect, useReducer, useState } from 'react';
import { Problem } from './components/problem';
import { Layout } from './layout';
import { PAGES, type PageDef } from './pages';
import FirstRun from './pages/first-run';
import SignIn from './pages/sign-in';
import { usePath } from './router';
import { useWorkspace } from './session';

/** Which screen: sign-in, first run (no org or no app yet), or a page of the registry. */
export function App() {
  const w = useWorkspace();
  const path = usePath();
  const page = PAGES.find((p) => p.path === path);
  const { Page, error } = usePageComponent(page);
  if (!w.signedIn) return <SignIn />;
  // A sign-in that ended under the user: the screen stays (drafts too) under the sign-in dialog.
  return (
    <>
      <Screen page={page} Page={Page} error={error} path={path} />
      {w.expired && <SignIn again />}
    </>
  );
}

function Screen({ page, Page, error, path }: { page?: PageDef; Page?: ComponentType; error?: unknown; path: string }) {
  const w = useWorkspace();
  if (!w.me) return w.meError ? <Problem error={w.meError} /> : <p className="muted">Loading…</p>;
  if (!w.org || path === '/setup/organization') return <FirstRun step="organization" />;
  if (!w.app || path === '/setup/app') return <FirstRun step="app" />;
  return (
    <Layout>
      {/* Keyed by user and app: a switch starts each page afresh (forms, selections); a renewal does not. */}
      {!page ? (
        <p>No page here. Pick one from the navigation.</p>
      ) : Page ? (
        <Page key={`${w.userId}/${w.org.id}/${w.app.id}`} />
      ) : error ? (
        <Problem error={error} />
      ) : (
        <p className="muted">Loading…</p>
      )}
    </Layout>
  );
}

/**
 * The page's component once its code is loaded, rendered directly rather than through React.lazy:
 * React holds back the reveal of a suspended boundary until 300 ms after its fallback showed, a
 * delay every first load paid although the page's code had loaded beside /me.
 */
function usePageComponent(page: PageDef | undefined): { Page?: ComponentType; error?: unknown } {
  const [, loaded] = useReducer((n: number) => n + 1, 0);
  const [failed, setFailed] = useState<{ page: PageDef; error: unknown }>();
  useEffect(() => {
    if (page && !page.loaded()) page.load().then(loaded, (error: unknown) => setFailed({ page, error }));
  }, [page]);
  return { Page: page?.loaded(), error: failed && failed.page === page ? failed.error : undefined };
}
