import type { Scope } from '../../types/domain.js';
import { buildIndex, type SetIndex } from './search-index.js';
import type { OptionSetStore } from './store.js';

/** Versions of one set kept at once: the current one and the one cursors taken before the last sync read. */
const VERSIONS_PER_SET = 2;
/** The largest share of the budget one index may take (a larger set is always read through SQL). */
const MAX_SHARE = 0.75;
/** Builds at once (each holds its rows in memory and takes CPU): other sets wait for a later read. */
const MAX_BUILDS = 2;
/** A set too large to index is tried again after this long (it may have shrunk). */
const TOO_BIG_RETRY_MS = 10 * 60_000;
/** Folded non-ASCII words remembered (each costs a database round trip the first time). */
const MAX_FOLDS = 5000;
/** Rough heap bytes per indexed item; bounds how many rows a build may load at all. */
const MIN_ITEM_BYTES = 300;

/**
 * In-process search indexes, one per (set, version), built from the database rows of that
 * version and never changed afterwards: a set version is immutable, so an index of it can never
 * be stale, and every reader that resolved version v gets exactly v's content (no mix). A sync
 * makes a new version, hence a new index; nothing is invalidated in place, and several instances
 * need no coordination. Bounded by an estimate of bytes, least recently used first out.
 */
export function createIndexCache(
  store: OptionSetStore,
  maxBytes: number,
  onError: (err: unknown) => void = () => undefined,
) {
  const entries = new Map<string, SetIndex>();
  let bytes = 0;
  const building = new Set<string>();
  /** Sets found too large for the budget, until when they are not tried again (a try loads rows). */
  const tooBig = new Map<string, number>();
  const folds = new Map<string, string>();
  /** Whether option_fold of printable ASCII is plain toLowerCase (probed once from the database). */
  let asciiLower: Promise<boolean> | null = null;

  const setKey = (scope: Scope, setId: string) => `${scope.tenantId}\u0000${scope.appId}\u0000${setId}`;

  function insert(sk: string, ix: SetIndex): void {
    const key = `${sk}\u0000${ix.version}`;
    entries.set(key, ix);
    bytes += ix.bytes;
    // Older versions of the set beyond the newest VERSIONS_PER_SET go first.
    const mine = [...entries.keys()].filter(
      (k) => k.startsWith(`${sk}\u0000`) && k.lastIndexOf('\u0000') === sk.length,
    );
    const stale = mine
      .map((k) => [k, entries.get(k)!.version] as const)
      .sort((a, b) => b[1] - a[1])
      .slice(VERSIONS_PER_SET);
    for (const [k] of stale) drop(k);
    for (const [k] of entries) {
      if (bytes <= maxBytes) break;
      drop(k);
    }
  }

  function drop(key: string): void {
    const e = entries.get(key);
    if (!e) return;
    entries.delete(key);
    bytes -= e.bytes;
  }

  async function build(scope: Scope, setId: string, version: number, sk: string): Promise<void> {
    const maxRows = Math.floor((maxBytes * MAX_SHARE) / MIN_ITEM_BYTES);
    const rows = await store.versionRows(scope, setId, version, maxRows);
    const ix = rows.length > maxRows ? null : await buildIndex(version, rows);
    if (!ix || ix.bytes > maxBytes * MAX_SHARE) {
      if (tooBig.size >= 10_000) tooBig.clear();
      tooBig.set(sk, Date.now() + TOO_BIG_RETRY_MS);
      return;
    }
    insert(sk, ix);
  }

  return {
    /** The index of exactly this version, if built (and marks it recently used). */
    get(scope: Scope, setId: string, version: number): SetIndex | undefined {
      const key = `${setKey(scope, setId)}\u0000${version}`;
      const ix = entries.get(key);
      if (ix) {
        entries.delete(key);
        entries.set(key, ix);
      }
      return ix;
    },

    /**
     * Starts building the index of a version in the background (one build per set at a time);
     * readers use the database until it is ready.
     */
    warm(scope: Scope, setId: string, version: number): void {
      if (maxBytes <= 0) return;
      const sk = setKey(scope, setId);
      if (building.has(sk) || building.size >= MAX_BUILDS || entries.has(`${sk}\u0000${version}`)) return;
      if ((tooBig.get(sk) ?? 0) > Date.now()) return;
      building.add(sk);
      build(scope, setId, version, sk)
        .catch(onError)
        .finally(() => building.delete(sk));
    },

    /** Whether some version of the set is indexed (it is being read: worth indexing its next version early). */
    has(scope: Scope, setId: string): boolean {
      const prefix = `${setKey(scope, setId)}\u0000`;
      for (const k of entries.keys())
        if (k.startsWith(prefix) && k.lastIndexOf('\u0000') === prefix.length - 1) return true;
      return false;
    },

    /** Folds search words like option_fold: locally for ASCII once probed equal, else by the database (remembered). */
    async fold(words: string[]): Promise<string[]> {
      asciiLower ??= (async () => {
        let ascii = '';
        for (let c = 0x20; c < 0x7f; c++) ascii += String.fromCharCode(c);
        const [f] = await store.fold([ascii]);
        return f === ascii.toLowerCase();
      })().catch(() => ((asciiLower = null), false));
      const local = await asciiLower;
      const out = new Array<string>(words.length);
      const missing: number[] = [];
      words.forEach((w, i) => {
        const hit = local && /^[\x20-\x7e]*$/.test(w) ? w.toLowerCase() : folds.get(w);
        if (hit === undefined) missing.push(i);
        else out[i] = hit;
      });
      if (missing.length > 0) {
        const folded = await store.fold(missing.map((i) => words[i]!));
        missing.forEach((i, k) => {
          out[i] = folded[k]!;
          if (folds.size >= MAX_FOLDS) folds.delete(folds.keys().next().value!);
          folds.set(words[i]!, folded[k]!);
        });
      }
      return out;
    },

    stats: () => ({ sets: entries.size, bytes, building: building.size }),
  };
}

export type IndexCache = ReturnType<typeof createIndexCache>;
