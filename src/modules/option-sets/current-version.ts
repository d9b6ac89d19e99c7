import type { Scope } from '../../types/domain.js';
import type { OptionSetStore } from './store.js';

interface Round {
  promise: Promise<number | null>;
  start: () => void;
}

/**
 * The current version of a set, read from the database for every read without a cursor (so a
 * read that starts after a sync committed, on any instance, sees that sync). Concurrent readers of
 * one set share lookups: a reader never reuses a lookup already sent (it could predate a commit
 * the reader must see); it joins the next one, sent as soon as the one in flight returns. Under
 * load this turns one query per request into one per round trip; alone, a reader waits for nothing.
 */
export function createVersionReader(store: OptionSetStore) {
  // Present while a lookup of the set is in flight; `next` collects the readers that came after it.
  const sets = new Map<string, { next: Round | null }>();

  function round(scope: Scope, setId: string, key: string): Round {
    let start!: () => void;
    const promise = new Promise<number | null>((resolve, reject) => {
      start = () => {
        store
          .currentVersion(scope, setId)
          .then(resolve, reject)
          .finally(() => {
            const s = sets.get(key)!;
            const next = s.next;
            s.next = null;
            if (next) next.start();
            else sets.delete(key);
          });
      };
    });
    return { promise, start };
  }

  return (scope: Scope, setId: string): Promise<number | null> => {
    const key = `${scope.tenantId}\u0000${scope.appId}\u0000${setId}`;
    const s = sets.get(key);
    if (!s) {
      sets.set(key, { next: null });
      const r = round(scope, setId, key);
      r.start();
      return r.promise;
    }
    s.next ??= round(scope, setId, key);
    return s.next.promise;
  };
}
