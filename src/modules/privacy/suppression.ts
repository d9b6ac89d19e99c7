import type { Scope } from '../../types/domain.js';
import { subjectHash } from './hash.js';
import type { PrivacyStore } from './store.js';

/** Answers whether an event's or identify call's ids belong to a suppressed subject. */
export type IsSuppressed = (anonId: string, userId: string | null | undefined) => boolean;

interface Entry {
  at: number;
  check: IsSuppressed | null;
}

/**
 * The suppressed subjects of each app, as ingestion reads them: cached per instance for `ttlMs`
 * (KEY_CACHE_TTL_MS, like API keys), so a new suppression holds on every instance within that time;
 * the deletion job waits as long before it deletes (docs/privacy.md). An app with none costs a map
 * look-up and no hashing.
 */
export function createSuppressionCheck({
  store,
  ttlMs,
}: {
  store: Pick<PrivacyStore, 'suppressedSet'>;
  ttlMs: number;
}) {
  const cache = new Map<string, Entry>();
  const loading = new Map<string, Promise<Entry>>();

  const load = async (scope: Scope): Promise<Entry> => {
    const { key, hashes } = await store.suppressedSet(scope);
    const set = new Set(hashes);
    const check: IsSuppressed | null =
      key && set.size > 0
        ? (anonId, userId) =>
            set.has(subjectHash(key, 'anon_id', anonId.toLowerCase())) ||
            (typeof userId === 'string' && set.has(subjectHash(key, 'user_id', userId)))
        : null;
    const entry = { at: Date.now(), check };
    cache.set(scope.appId, entry);
    return entry;
  };

  return {
    /** The app's check, or null when nothing of it is suppressed. */
    async forApp(scope: Scope): Promise<IsSuppressed | null> {
      const hit = cache.get(scope.appId);
      if (hit && Date.now() - hit.at < ttlMs) return hit.check;
      let p = loading.get(scope.appId);
      if (!p) {
        p = load(scope).finally(() => loading.delete(scope.appId));
        loading.set(scope.appId, p);
      }
      return (await p).check;
    },
  };
}

export type SuppressionCheck = ReturnType<typeof createSuppressionCheck>;
