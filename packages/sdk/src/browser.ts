import { Client, type ClientOptions } from './client.js';
import type { FetchLike } from './http.js';
import { byteLength } from './queue.js';
import { localStorageAdapter, type Storage } from './storage.js';

/**
 * Browsers allow 64 KiB of keepalive request bodies in flight per page: batches stay under this,
 * so the last flush of a closing page still leaves.
 */
export const KEEPALIVE_BATCH_BYTES = 60_000;

export type BrowserOptions = Omit<ClientOptions, 'storage'> & {
  /** Default: `window.localStorage`. */
  storage?: Storage;
  /** Default: `globalThis` (its `document`, `addEventListener`). */
  window?: Pick<Window, 'addEventListener' | 'removeEventListener'> & { document: Pick<Document, 'visibilityState'> };
};

/** fetch with `keepalive` on uploads that fit, so they outlive the page. */
export function keepaliveFetch(base: FetchLike = (u, i) => fetch(u, i)): FetchLike {
  return (url, init) =>
    base(url, {
      ...init,
      ...(init.method === 'POST' && byteLength(init.body ?? '') < KEEPALIVE_BATCH_BYTES ? { keepalive: true } : {}),
    } as Parameters<FetchLike>[1]);
}

/**
 * A client for web pages and web views: localStorage, keepalive uploads in batches under 60 KB,
 * and the page lifecycle wired: `visibilitychange` to hidden or `pagehide` (whichever comes first;
 * the second changes nothing) ends the session and flushes; visible again or `pageshow` from the
 * back-forward cache starts a new session.
 */
export function createBrowserClient({ storage, window: w = globalThis as never, ...o }: BrowserOptions): Client {
  const client = new Client({
    ...o,
    storage: storage ?? localStorageAdapter(),
    fetch: keepaliveFetch(o.fetch),
    maxBatchBytes: o.maxBatchBytes ?? KEEPALIVE_BATCH_BYTES,
  });
  const set = (active: boolean) => void client.setForeground(active);
  const onVisibility = () => set(w.document.visibilityState === 'visible');
  const onHide = () => set(false);
  const onShow = (e: Event) => (e as PageTransitionEvent).persisted && set(true);
  w.addEventListener('visibilitychange', onVisibility);
  w.addEventListener('pagehide', onHide);
  w.addEventListener('pageshow', onShow);
  const shutdown = client.shutdown.bind(client);
  client.shutdown = () => {
    w.removeEventListener('visibilitychange', onVisibility);
    w.removeEventListener('pagehide', onHide);
    w.removeEventListener('pageshow', onShow);
    return shutdown();
  };
  return client;
}
