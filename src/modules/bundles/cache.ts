import type { Db, Tx } from '../../db/pool.js';
import type { Served } from './served.js';

export const CHANNEL = 'bundle_changed';

export interface CacheOptions {
  /** Without a live LISTEN connection, an entry is re-checked against the head row this often. */
  pollTtlMs: number;
  /** Even with LISTEN up, an entry is re-checked this often (guards against a lost notification). */
  safetyTtlMs: number;
  maxEntries: number;
  /** Budget for the cached bodies (compressed variants come on top, typically a fifth more). */
  maxBytes: number;
}

interface Entry {
  tenantId: string;
  served: Served;
  checkedAt: number;
}

/**
 * Per-process cache of each app's current bundle. Other instances announce new versions with
 * NOTIFY (sent in the generating transaction, so delivered at commit); an entry older than the
 * announced version is dropped at once. If the LISTEN connection is down, entries fall back to
 * a short TTL and are revalidated with a one-row read of the version counter.
 */
export function createBundleCache(db: Db, opts: CacheOptions, onError: (err: unknown) => void) {
  const entries = new Map<string, Entry>();
  let bytes = 0;
  const sizeOf = (e: Entry) => e.served.body.length + e.served.versionBody.length;
  function remove(appId: string): void {
    const e = entries.get(appId);
    if (!e) return;
    entries.delete(appId);
    bytes -= sizeOf(e);
  }
  // Highest version announced per app: an older load finishing late must not be cached.
  const announced = new Map<string, number>();
  let client: Tx | null = null;
  let listening = false;
  let stopped = false;
  let retry: NodeJS.Timeout | null = null;

  function onNotify(payload: string | undefined): void {
    const [appId, v] = (payload ?? '').split(':');
    const version = Number(v);
    if (!appId || !Number.isInteger(version)) return;
    if ((announced.get(appId) ?? 0) < version) announced.set(appId, version);
    if (announced.size > opts.maxEntries * 2) announced.clear();
    const e = entries.get(appId);
    if (e && e.served.version < version) remove(appId);
  }

  function drop(err?: unknown): void {
    if (stopped) return;
    if (err) onError(err);
    listening = false;
    // Notifications may have been missed while the connection was failing.
    entries.clear();
    bytes = 0;
    const c = client;
    client = null;
    c?.release(true);
    if (!retry) {
      retry = setTimeout(() => ((retry = null), void listen()), 1000);
      retry.unref();
    }
  }

  async function listen(): Promise<void> {
    if (stopped) return;
    try {
      const c = await db.connect();
      if (stopped) return c.release(true);
      client = c;
      c.on('notification', (m) => onNotify(m.payload));
      c.on('error', (err) => client === c && drop(err));
      c.on('end', () => client === c && drop());
      await c.query(`LISTEN ${CHANNEL}`);
      // Anything cached before LISTEN started could have missed an announcement.
      entries.clear();
      bytes = 0;
      listening = true;
    } catch (err) {
      drop(err);
    }
  }

  return {
    listen,
    get(tenantId: string, appId: string): { served: Served; fresh: boolean } | null {
      const e = entries.get(appId);
      if (!e || e.tenantId !== tenantId) return null;
      const age = Date.now() - e.checkedAt;
      return { served: e.served, fresh: age < (listening ? opts.safetyTtlMs : opts.pollTtlMs) };
    },
    touch(appId: string): void {
      const e = entries.get(appId);
      if (e) e.checkedAt = Date.now();
    },
    /** Caches a version unless a newer one is already cached or announced. */
    /** Returns the Served to use: the cached one when it already holds this version. */
    put(tenantId: string, appId: string, served: Served): Served {
      const cur = entries.get(appId);
      if (cur && cur.served.version > served.version) return served;
      // Same version: keep the existing entry and its compressed variants.
      if (cur && cur.served.version === served.version) {
        cur.checkedAt = Date.now();
        return cur.served;
      }
      if ((announced.get(appId) ?? 0) > served.version) return served;
      remove(appId);
      const entry = { tenantId, served, checkedAt: Date.now() };
      // Oldest inserted first out, until the new entry fits both budgets.
      while (entries.size > 0 && (entries.size >= opts.maxEntries || bytes + sizeOf(entry) > opts.maxBytes))
        remove(entries.keys().next().value!);
      entries.set(appId, entry);
      bytes += sizeOf(entry);
      return served;
    },
    get listening() {
      return listening;
    },
    async stop(): Promise<void> {
      stopped = true;
      if (retry) clearTimeout(retry);
      const c = client;
      client = null;
      listening = false;
      c?.release(true);
    },
  };
}

export type BundleCache = ReturnType<typeof createBundleCache>;
