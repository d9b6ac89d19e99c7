import type { Notifications } from '../../db/notifications.js';
import { withTx, type Db, type Tx } from '../../db/pool.js';
import type { Scope } from '../../types/domain.js';
import { notFound } from '../../http/errors.js';
import type { ActivityStore } from '../activity/store.js';
import type { ChangeRecorder } from '../config-stream/store.js';
import { buildContent, referencedSets, sdkMinVersion, type BundleSource, type OptionSetPage } from './build.js';
import { createBundleCache } from './cache.js';
import { metaView, toServed, type Served } from './served.js';
import type { BundleMeta, BundleStore, StoredBundle } from './store.js';

export interface BundleDeps {
  db: Db;
  store: BundleStore;
  activity: ActivityStore;
  /** The published content, read inside the generating transaction. */
  source: {
    published(scope: Scope, tx: Tx): Promise<BundleSource>;
    flowReferences(scope: Scope, setId: string): Promise<boolean>;
  };
  /** First pages of option sets referenced by published flows; a missing set is simply absent. */
  optionSetPages?: (scope: Scope, setIds: string[]) => Promise<Record<string, OptionSetPage>>;
  /** The instance's LISTEN connection (db/notifications.ts): other instances announce new versions. */
  notifications: Pick<Notifications, 'subscribe'>;
  cache?: { pollTtlMs?: number; safetyTtlMs?: number; maxEntries?: number; maxBytes?: number };
  /** Generations running at once in this process (each holds a pool connection while it waits for the app lock). */
  maxConcurrentGenerations?: number;
  /** Records each new version for the config stream, last in the generating transaction. */
  recordChange?: ChangeRecorder;
}

/** A simple counting semaphore. */
function limiter(max: number) {
  let active = 0;
  const waiting: (() => void)[] = [];
  return async <T>(fn: () => Promise<T>): Promise<T> => {
    if (active >= max) await new Promise<void>((r) => waiting.push(r));
    active++;
    try {
      return await fn();
    } finally {
      active--;
      waiting.shift()?.();
    }
  };
}

const historyView = (m: BundleMeta, current: number | null) => ({
  ...metaView(m),
  reason: m.reason,
  rolled_back_from: m.rolled_back_from,
  actor_user_id: m.actor_user_id,
  current: m.bundle_version === current,
});

export function createBundleService({
  db,
  store,
  activity,
  source,
  optionSetPages,
  notifications,
  cache: cacheOpts = {},
  maxConcurrentGenerations = 4,
  recordChange,
}: BundleDeps) {
  const cache = createBundleCache(notifications, {
    pollTtlMs: cacheOpts.pollTtlMs ?? 1000,
    safetyTtlMs: cacheOpts.safetyTtlMs ?? 30_000,
    maxEntries: cacheOpts.maxEntries ?? 10_000,
    maxBytes: cacheOpts.maxBytes ?? 256 * 1024 * 1024,
  });
  // Bounded so that generations waiting on an app's lock can never take every pool connection
  // (the lock holder may need one more for option-set pages).
  const exclusive = limiter(maxConcurrentGenerations);
  const loading = new Map<string, Promise<Served>>();
  let listenStarted = false;

  async function generateInTx(
    tx: Tx,
    scope: Scope,
    reason: string,
    actor: string | null,
    from?: { bundle: StoredBundle },
    preset?: { version: number; floor: string | null },
  ): Promise<StoredBundle> {
    const head = preset ?? (await store.nextVersion(scope, tx));
    if (!head) throw notFound('App');
    let content: string;
    let sdkMin: string;
    if (from) {
      content = from.bundle.content;
      sdkMin = from.bundle.sdk_min_version;
    } else {
      const src = await source.published(scope, tx);
      const sets = referencedSets(src);
      const pages = sets.length > 0 && optionSetPages ? await optionSetPages(scope, sets) : {};
      content = JSON.stringify(buildContent(src, pages));
      sdkMin = sdkMinVersion(src, head.floor);
    }
    const bundle: StoredBundle = {
      bundle_version: head.version,
      sdk_min_version: sdkMin,
      size_bytes: Buffer.byteLength(content),
      content,
      generated_at: new Date(),
      reason,
      rolled_back_from: from ? from.bundle.bundle_version : null,
      actor_user_id: actor,
    };
    await store.insert(scope, bundle, tx);
    await activity.record(
      scope,
      {
        entityType: 'config_bundle',
        entityId: String(head.version),
        action: from ? 'rolled_back' : 'generated',
        description: from
          ? `Config bundle version ${head.version} generated as a rollback to version ${from.bundle.bundle_version}`
          : `Config bundle version ${head.version} generated (${reason}), ${bundle.size_bytes} bytes`,
        actorUserId: actor,
      },
      tx,
    );
    await store.notify(scope, head.version, tx);
    // Last: it takes the global change-sequence lock, held until commit.
    await recordChange?.(
      scope,
      { kind: from ? 'bundle_rolled_back' : 'bundle_generated', bundleVersion: head.version },
      tx,
    );
    return bundle;
  }

  function remember(scope: Scope, b: StoredBundle): Served {
    return cache.put(scope.tenantId, scope.appId, toServed(b));
  }

  /**
   * Runs a content change and, when it asks for one, the new bundle in the same transaction:
   * the change and its version commit together, before the request answers.
   */
  async function change<T>(
    scope: Scope,
    actor: string | null,
    fn: (tx: Tx) => Promise<{ result: T; reason: string | null }>,
  ) {
    return exclusive(async () => {
      const out = await withTx(db, async (tx) => {
        const r = await fn(tx);
        const bundle = r.reason ? await generateInTx(tx, scope, r.reason, actor) : null;
        return { result: r.result, bundle };
      });
      if (out.bundle) remember(scope, out.bundle);
      return { result: out.result, bundle: out.bundle ? metaView(out.bundle) : null };
    });
  }

  async function regenerate(scope: Scope, reason: string, actorUserId: string | null = null): Promise<Served> {
    return exclusive(async () =>
      remember(scope, await withTx(db, (tx) => generateInTx(tx, scope, reason, actorUserId))),
    );
  }

  /** Before any bundle exists, the first read creates version 1 from what is published (usually nothing). */
  async function ensureInitial(scope: Scope): Promise<StoredBundle> {
    return exclusive(() =>
      withTx(db, async (tx) => {
        // An app deleted while its key is still cached: its head row cannot be created.
        const head = await store
          .initHead(scope, tx)
          .catch((err: { code?: string }) => Promise.reject(err.code === '23503' ? notFound('App') : err));
        if (head) return generateInTx(tx, scope, 'initial', null, undefined, head);
        const cur = await store.current(scope, tx);
        if (!cur) throw notFound('Config bundle');
        return cur;
      }),
    );
  }

  async function load(scope: Scope): Promise<Served> {
    const b = (await store.current(scope)) ?? (await ensureInitial(scope));
    return remember(scope, b);
  }

  /** The app's current bundle, from the cache when it is known to be current. */
  async function current(scope: Scope): Promise<Served> {
    // LISTEN starts with the first SDK read: worker-only instances never hold the connection.
    if (!listenStarted) {
      listenStarted = true;
      cache.listen();
    }
    const hit = cache.get(scope.tenantId, scope.appId);
    if (hit?.fresh) return hit.served;
    if (hit && (await store.headVersion(scope)) === hit.served.version) {
      cache.touch(scope.appId);
      return hit.served;
    }
    // One load per app at a time: a cold start under load reads the database once.
    let p = loading.get(scope.appId);
    if (!p) {
      p = load(scope).finally(() => loading.delete(scope.appId));
      loading.set(scope.appId, p);
    }
    return p;
  }

  return {
    current,
    /** The cached current bundle when it is known to be current, without a promise (the hot SDK path). */
    peek(scope: Scope): Served | null {
      const hit = listenStarted ? cache.get(scope.tenantId, scope.appId) : null;
      return hit?.fresh ? hit.served : null;
    },
    change,
    regenerate,
    toServed,

    async regenerateIfReferenced(scope: Scope, setId: string): Promise<void> {
      if (await source.flowReferences(scope, setId))
        await regenerate(scope, `option_set.synced:${setId}`.slice(0, 200));
    },

    async rollback(scope: Scope, version: number, actorUserId: string): Promise<Served> {
      return exclusive(async () => {
        const b = await withTx(db, async (tx) => {
          const old = await store.version(scope, version, tx);
          if (!old) throw notFound('Bundle version');
          return generateInTx(tx, scope, 'rollback', actorUserId, { bundle: old });
        });
        return remember(scope, b);
      });
    },

    async history(scope: Scope, limit: number, offset: number) {
      const [{ rows, total }, head] = await Promise.all([
        store.history(scope, limit, offset),
        store.headVersion(scope),
      ]);
      return { data: rows.map((r) => historyView(r, head)), total };
    },

    async version(scope: Scope, version: number): Promise<Buffer> {
      const b = await store.version(scope, version);
      if (!b) throw notFound('Bundle version');
      return toServed(b).body;
    },

    async settings(scope: Scope) {
      return {
        sdk_min_version: await store.getFloor(scope),
        effective_sdk_min_version: (await current(scope)).sdkMinVersion,
      };
    },

    async setFloor(scope: Scope, floor: string | null, actorUserId: string) {
      const r = await change(scope, actorUserId, async (tx) => {
        const changed = await store.setFloor(scope, floor, tx);
        if (changed) {
          await activity.record(
            scope,
            {
              entityType: 'config_bundle',
              action: 'settings_updated',
              description: `Bundle sdk_min_version floor set to ${floor ?? 'none'}`,
              actorUserId,
            },
            tx,
          );
        }
        return { result: changed, reason: changed ? 'settings.sdk_min_version' : null };
      });
      return { sdk_min_version: floor, bundle_version: r.bundle?.bundle_version };
    },

    stop: () => cache.stop(),
  };
}

export type BundleService = ReturnType<typeof createBundleService>;
