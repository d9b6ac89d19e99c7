import { withTx, type Db } from '../../db/pool.js';
import type { Scope } from '../../types/domain.js';
import { AppError, invalid, notFound } from '../../http/errors.js';
import type { ActivityStore } from '../activity/store.js';
import type { ChangeRecorder } from '../config-stream/store.js';
import { decodeCursor, encodeCursor, type Cursor } from './cursor.js';
import { createVersionReader } from './current-version.js';
import { createIndexCache } from './index-cache.js';
import { createPageCache } from './page-cache.js';
import { matchRows, planSync, type Rejected, type SyncRow } from './plan.js';
import type { OptionSetStore, PageRow } from './store.js';
import { itemJson, searchIndex, type SetIndex } from './search-index.js';
import { unstorable } from './text.js';

export const PAGE_SIZE = 100;
export const MAX_PAGE_SIZE = 500;
export const MAX_OPTION_DATA_BYTES = 4096;
const MAX_SEARCH_TOKENS = 8;
const ANALYZE_AFTER_ROWS = 1000;
const ANALYZE_DELAY_MS = 2000;
const MAX_BROAD_HINTS = 10_000;
const PREWARM_DELAY_MS = 1000;

export type SyncMode = 'merge' | 'replace';

export interface SyncResult {
  set_id: string;
  mode: SyncMode;
  version: number;
  created: number;
  updated: number;
  archived: number;
  rejected: Rejected[];
  /** Visible items after the sync. */
  item_count: number;
}

export interface OptionPage {
  set_id: string;
  version: number;
  items: PageRow[];
  next_cursor: string | null;
}

export interface OptionSetDeps {
  db: Db;
  store: OptionSetStore;
  activity: ActivityStore;
  /** Called after each committed sync (outside its transaction); bundles regenerate from it. */
  onSetChanged?: (scope: Scope, setId: string) => Promise<void>;
  /** Where a failing onSetChanged is reported; the sync itself has already committed. */
  onHookError?: (err: unknown, setId: string) => void;
  /** Budget of the in-process page cache (default 32 MB). */
  cacheBytes?: number;
  /** Budget of the in-process search indexes (default 128 MB; 0 = always read through SQL). */
  indexBytes?: number;
  /** Where a failing background index build is reported (reads fall back to SQL meanwhile). */
  onIndexError?: (err: unknown) => void;
  /** Records each sync for the config stream, last in the sync's transaction. */
  recordChange?: ChangeRecorder;
}

const MAX_OPTION_DATA_DEPTH = 16;

/** option_data: storable strings, bounded depth (checked without recursion) and size. */
function checkOptionData(data: Record<string, unknown>, path: string): void {
  const stack: [unknown, number][] = [[data, 0]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    if (typeof v === 'string' && unstorable(v))
      throw invalid('option_data holds a NUL character or an unpaired surrogate', path);
    if (v === null || typeof v !== 'object') continue;
    if (depth >= MAX_OPTION_DATA_DEPTH)
      throw invalid(`option_data is nested deeper than ${MAX_OPTION_DATA_DEPTH} levels`, path);
    for (const [k, child] of Object.entries(v)) {
      if (unstorable(k)) throw invalid('option_data holds a NUL character or an unpaired surrogate', path);
      stack.push([child, depth + 1]);
    }
  }
  const size = Buffer.byteLength(JSON.stringify(data));
  if (size > MAX_OPTION_DATA_BYTES)
    throw invalid(`option_data is ${size} bytes; at most ${MAX_OPTION_DATA_BYTES} are allowed`, path);
}

function checkRows(items: SyncRow[]): void {
  items.forEach((row, i) => {
    for (const f of ['id', 'value', 'label'] as const) {
      const v = row[f];
      if (v !== undefined && unstorable(v))
        throw invalid(`${f} holds a NUL character or an unpaired surrogate`, `/body/items/${i}/${f}`);
    }
    if (row.option_data != null) checkOptionData(row.option_data, `/body/items/${i}/option_data`);
  });
}

/** Search words, folded by the database like the indexed text; empty or blank q means no search. */
function searchTokens(q: string | undefined): string[] {
  if (!q) return [];
  if (unstorable(q)) throw invalid('q holds a NUL character or an unpaired surrogate', '/querystring/q');
  const words = q.trim().split(/\s+/).filter(Boolean);
  if (words.length > MAX_SEARCH_TOKENS) throw invalid(`q has more than ${MAX_SEARCH_TOKENS} words`, '/querystring/q');
  return words;
}

/** `{ data: page }` with the keys in the response schema's order (the route sends these bytes as they are). */
const pageJson = (setId: string, version: number, items: string, next: string | null) =>
  `{"data":{"set_id":${JSON.stringify(setId)},"version":${version},"items":[${items}],"next_cursor":${JSON.stringify(next)}}}`;

const rowJson = (r: PageRow) =>
  JSON.stringify({ id: r.id, value: r.value, label: r.label, sort_order: r.sort_order, option_data: r.option_data });

export function createOptionSetService({
  db,
  store,
  activity,
  onSetChanged,
  onHookError,
  cacheBytes = 32 * 1024 * 1024,
  indexBytes = 128 * 1024 * 1024,
  onIndexError,
  recordChange,
}: OptionSetDeps) {
  const cache = createPageCache(cacheBytes);
  const indexes = createIndexCache(store, indexBytes, onIndexError);
  const currentVersion = createVersionReader(store);
  // Searches seen to match too many items for the trigram attempt to pay off (only a plan hint:
  // a wrong guess costs time, never correctness). Bounded; the oldest hints go first.
  const broad = new Set<string>();
  const rememberBroad = (k: string) => {
    if (broad.size >= MAX_BROAD_HINTS) broad.delete(broad.values().next().value!);
    broad.add(k);
  };
  let analyzeTimer: NodeJS.Timeout | null = null;

  /** The page from the version's in-process index; undefined when the cursor is not one of its items (forged). */
  async function fromIndex(
    ix: SetIndex,
    setId: string,
    cursor: Cursor | null,
    tokens: string[],
    limit: number,
  ): Promise<string | undefined> {
    let start = 0;
    if (cursor) {
      const at = ix.position.get(cursor.value);
      if (at === undefined || ix.sorts[at] !== cursor.sortOrder) return undefined;
      start = at + 1;
    }
    const words = tokens.length > 0 ? await indexes.fold(tokens) : tokens;
    const found = searchIndex(ix, words, start, limit + 1);
    const items = found.length > limit ? found.slice(0, limit) : found;
    const last = items[items.length - 1];
    const next =
      found.length > limit && last !== undefined
        ? encodeCursor({ setId, version: ix.version, sortOrder: ix.sorts[last]!, value: ix.values[last]! })
        : null;
    return pageJson(setId, ix.version, items.map((i) => itemJson(ix, i)).join(','), next);
  }

  async function fromDb(
    scope: Scope,
    setId: string,
    version: number,
    cursor: Cursor | null,
    tokens: string[],
    limit: number,
  ): Promise<string> {
    // One row more than the page tells whether another page follows.
    const broadKey =
      tokens.length > 0 ? JSON.stringify([scope.appId, setId, tokens.map((t) => t.toLowerCase()).sort()]) : '';
    const page = await store.page(scope, setId, {
      version,
      after: cursor ? { sort_order: cursor.sortOrder, value: cursor.value } : null,
      tokens,
      limit: limit + 1,
      tryIndex: !broad.has(broadKey),
    });
    if (page.broad) rememberBroad(broadKey);
    if (cursor) {
      // A cursor this service issued always has rows after it at its version; only a forged or
      // foreign one needs the extra look at the set.
      const current = page.current ?? (await store.currentVersion(scope, setId));
      if (current === null) throw notFound('Option set');
      if (version > current) throw invalid('cursor is not valid for this option set', '/querystring/cursor');
    }
    const items = page.rows.slice(0, limit);
    const last = items[items.length - 1];
    const next =
      page.rows.length > limit && last
        ? encodeCursor({ setId, version, sortOrder: last.sort_order, value: last.value })
        : null;
    return pageJson(setId, version, items.map(rowJson).join(','), next);
  }

  /** The read answer as JSON text (`{ data: OptionPage }`). */
  async function answer(
    scope: Scope,
    setId: string,
    opts: { cursor?: string; q?: string; limit?: number } = {},
  ): Promise<string> {
    const limit = opts.limit ?? PAGE_SIZE;
    const cursor = opts.cursor ? decodeCursor(opts.cursor, setId) : null;
    const tokens = searchTokens(opts.q);
    // A cursor pins its version; otherwise the current one (a primary-key read) is the version.
    // Everything below reads that one version only, so an answer never mixes two syncs.
    const version = cursor?.version ?? (await currentVersion(scope, setId));
    if (version === null) throw notFound('Option set');
    const key = JSON.stringify([
      scope.tenantId,
      scope.appId,
      setId,
      version,
      cursor?.sortOrder ?? null,
      cursor?.value ?? null,
      tokens,
      limit,
    ]);
    const hit = cache.get(key);
    if (hit !== undefined) return hit;
    const ix = indexes.get(scope, setId, version);
    // Fresh reads build the current version's index in the background; until it is ready, SQL answers.
    if (!ix && !cursor) indexes.warm(scope, setId, version);
    const indexed = ix && (await fromIndex(ix, setId, cursor, tokens, limit));
    if (indexed !== undefined) {
      // An indexed search costs tens of microseconds: keeping its answer would only churn the
      // cache (and the heap) with one-off queries. Plain pages are few per version and hot.
      if (tokens.length === 0) cache.set(key, indexed);
      return indexed;
    }
    const json = await fromDb(scope, setId, version, cursor, tokens, limit);
    cache.set(key, json);
    return json;
  }

  async function read(
    scope: Scope,
    setId: string,
    opts: { cursor?: string; q?: string; limit?: number } = {},
  ): Promise<OptionPage> {
    return (JSON.parse(await answer(scope, setId, opts)) as { data: OptionPage }).data;
  }

  /**
   * Big syncs leave search-index entries in the GIN pending list (scanned by every search) and
   * skew the planner's picture of the items table (a bad picture turns a 1 ms search into a full
   * scan). Fix both off the request once a burst of syncs (e.g. the merges of a large set) has
   * settled; autovacuum would get there too, but later.
   */
  function refreshStats(rowsWritten: number): void {
    if (rowsWritten < ANALYZE_AFTER_ROWS) return;
    if (analyzeTimer) clearTimeout(analyzeTimer);
    analyzeTimer = setTimeout(() => {
      analyzeTimer = null;
      store.maintain().catch(() => undefined);
    }, ANALYZE_DELAY_MS);
    analyzeTimer.unref();
  }

  /**
   * A set being read gets its new version indexed without waiting for its next read, once its
   * syncs pause: the merges of a large run then cost one build, not one each, and do not compete
   * with it for CPU.
   */
  const prewarmTimers = new Map<string, NodeJS.Timeout>();
  function prewarm(scope: Scope, setId: string, version: number): void {
    if (!indexes.has(scope, setId)) return;
    const k = `${scope.tenantId}\u0000${scope.appId}\u0000${setId}`;
    clearTimeout(prewarmTimers.get(k));
    const timer = setTimeout(() => {
      prewarmTimers.delete(k);
      indexes.warm(scope, setId, version);
    }, PREWARM_DELAY_MS);
    timer.unref();
    prewarmTimers.set(k, timer);
  }

  return {
    read,
    answer,
    indexStats: indexes.stats,

    /**
     * Applies one sync atomically: the set's version goes up by one and every accepted row lands
     * in that version; refused rows are reported and leave their item unchanged.
     */
    async sync(
      scope: Scope,
      setId: string,
      req: { mode: SyncMode; items: SyncRow[]; since_version?: number },
      actor: { keyId: string; environment: string },
    ): Promise<SyncResult> {
      const { mode, items: rows } = req;
      checkRows(rows);
      const result = await withTx(db, async (tx) => {
        const version = await store.bumpVersion(scope, setId, tx);
        const ids = [...new Set(rows.flatMap((r) => (r.id !== undefined ? [r.id] : [])))];
        const values = [...new Set(rows.map((r) => r.value))];
        const matched = matchRows(rows, await store.matching(scope, setId, ids, values, tx));
        const locked = await store.lockedValues(scope, setId, [...new Set(matched.renamedFrom)], tx);
        const plan = planSync(matched, locked);
        await store.closeItems(scope, setId, plan.close, version, tx);
        await store.writeVersions(scope, setId, plan.write, version, tx);
        const closed = new Set(plan.close);
        await store.markSent(
          scope,
          setId,
          [...new Set(plan.sent)].filter((id) => !closed.has(id)),
          version,
          tx,
        );
        // Replace keeps what this request named, plus what earlier syncs of the same run sent.
        const archived =
          mode === 'replace'
            ? await store.archiveUnsent(scope, setId, Math.min(req.since_version ?? version, version), version, tx)
            : 0;
        const item_count = await store.visibleCount(scope, setId, tx);
        await activity.record(
          scope,
          {
            entityType: 'option_set',
            entityId: setId,
            action: 'synced',
            description: `Option set ${setId} ${mode} sync (${actor.environment} key) -> version ${version}: ${plan.created} created, ${plan.updated} updated, ${archived} archived, ${plan.rejected.length} rejected`,
          },
          tx,
        );
        // Last: it takes the global change-sequence lock, held until commit.
        await recordChange?.(scope, { kind: 'option_set_synced', setId, setVersion: version }, tx);
        return {
          set_id: setId,
          mode,
          version,
          created: plan.created,
          updated: plan.updated,
          archived,
          rejected: plan.rejected,
          item_count,
        };
      });
      refreshStats(result.created + result.updated + result.archived);
      prewarm(scope, setId, result.version);
      if (onSetChanged) {
        await onSetChanged(scope, setId).catch((err: unknown) => onHookError?.(err, setId));
      }
      return result;
    },

    /** The first page (as GET without q answers it) of each set that exists; for config bundles. */
    async firstPages(
      scope: Scope,
      setIds: string[],
    ): Promise<Record<string, { version: number; items: unknown[]; next_cursor: string | null }>> {
      const out: Record<string, { version: number; items: unknown[]; next_cursor: string | null }> = {};
      for (const setId of [...new Set(setIds)]) {
        try {
          const p = await read(scope, setId);
          out[setId] = { version: p.version, items: p.items, next_cursor: p.next_cursor };
        } catch (err) {
          if (!(err instanceof AppError && err.code === 'not_found')) throw err;
        }
      }
      return out;
    },
  };
}

export type OptionSetService = ReturnType<typeof createOptionSetService>;
