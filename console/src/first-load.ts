import { session } from './api/client';
import { current } from './location';
import { PAGES } from './pages';
import { DEFAULT_ENVIRONMENT, meQuery, type QueryDef, type StartQuery, savedPick, savedToken } from './scope';

/**
 * A first load, before React and the app's code have loaded (main.tsx): the first page's code,
 * /me and, when the org and app picked last are in storage, the page's queries all start at once,
 * so they run while the app's code loads and runs. A pick that is no longer valid only costs the
 * calls made with it (403/404, under keys the page will not read): /me then chooses the org and
 * app shown. The app's QueryClient takes each call under its key (`takeEarlyCalls`).
 */
type Sink = (query: QueryDef<unknown>, answer: Promise<unknown>) => void;

const early: Parameters<Sink>[] = [];
let sink: Sink = (...call) => early.push(call);

const start: StartQuery = (q) => {
  const answer = q.queryFn();
  answer.catch(() => undefined); // its query reports a failure; no unhandled rejection meanwhile
  sink(q, answer);
  return answer;
};

export function startFirstLoad() {
  const first = PAGES.find((p) => p.path === current());
  void first?.load();
  const token = savedToken();
  if (!token) return;
  session.token = token;
  void start(meQuery(token));
  const { orgId, appId } = savedPick();
  if (first?.prefetch && orgId && appId) first.prefetch(start, { orgId, appId, environment: DEFAULT_ENVIRONMENT });
}

/** Hands the calls started early (and any started later, e.g. the funnels after their list) to `to`. */
export function takeEarlyCalls(to: Sink) {
  sink = to;
  for (const call of early.splice(0)) to(...call);
}
