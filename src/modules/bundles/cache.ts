import type { Notifications } from '../../db/notifications.js';
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
 * announced version is dropped at once (the instance's LISTEN connection: db/notifications.ts).
 * While that connection is down, entries fall back to a short TTL and are revalidated with a
 * one-row read of the version counter.
 */
export function createBundleCache(notifications: Pick<Notifications, 'subscribe'>, opts: CacheOptions) {
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
  let listening = false;
  let unsubscribe: (() => void) | null = null;

  function onNotify(payload: string): void {
    const [appId, v] = payload.split(':');
    const version = Number(v);
    if (!appId || !Number.isInteger(version)) return;
    if ((announced.get(appId) ?? 0) < version) announced.set(appId, version);
    if (announced.size > opts.maxEntries * 2) announced.clear();
    const e = entries.get(appId);
    if (e && e.served.version < version) remove(appId);
  }

  /** Announcements may have been missed (before LISTEN started, or while its connection was lost). */
  function forgetAll(): void {
    entries.clear();
    bytes = 0;
  }

  function listen(): void {
    unsubscribe ??= notifications.subscribe(CHANNEL, {
      notify: onNotify,
      up: () => {
        forgetAll();
        listening = true;
      },
      down: () => {
        listening = false;
        forgetAll();
      },
    });
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
    stop(): void {
      unsubscribe?.();
      listening = false;
    },
  };
}

export type BundleCache = ReturnType<typeof createBundleCache>;
