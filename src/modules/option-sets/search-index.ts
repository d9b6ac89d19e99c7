import type { IndexRow } from '../../types/option-set-rows.js';

export type { IndexRow };

/**
 * An immutable, in-process search index of ONE version of a set: the visible items in read order
 * (the database's ORDER BY sort_order, value, so no collation is reproduced here), each item's
 * answer JSON precomputed, and trigram postings over the stored folded text.
 *
 * Trigrams are hashed into a fixed number of buckets; a collision only adds candidates, and every
 * candidate is confirmed with a substring test on the folded text, so answers equal the SQL
 * `search_text LIKE '%word%'` for every word.
 */
export interface SetIndex {
  readonly version: number;
  readonly size: number;
  /** Estimated heap bytes (the cache budget counts this). */
  readonly bytes: number;
  /** The rows in read order (each row's answer JSON is made on first use: see itemJson). */
  readonly rows: IndexRow[];
  readonly json: (string | undefined)[];
  readonly values: string[];
  readonly sorts: Float64Array;
  readonly texts: string[];
  readonly position: Map<string, number>;
  readonly bits: number;
  /** CSR postings: bucket b holds postings[starts[b] .. starts[b + 1]), ascending positions. */
  readonly starts: Uint32Array;
  readonly postings: Int32Array;
}

const hash = (a: number, b: number, c: number, bits: number): number =>
  (Math.imul(a, 0x9e3779b1) ^ Math.imul(b, 0x85ebca77) ^ Math.imul(c, 0xc2b2ae3d)) >>> (32 - bits);

/** Bigrams hash with a third "character" no string has, so they share the trigram buckets. */
const BIGRAM = 0x10000;
/** Items handled between two yields to the event loop while building (keeps request latency flat). */
const CHUNK = 4096;
const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Builds in chunks, yielding between them: a 100,000-item set takes a few hundred ms of CPU. */
export async function buildIndex(version: number, rows: IndexRow[]): Promise<SetIndex> {
  const n = rows.length;
  const json = new Array<string | undefined>(n);
  const values = new Array<string>(n);
  const texts = new Array<string>(n);
  const sorts = new Float64Array(n);
  const position = new Map<string, number>();
  let grams = 0;
  let bytes = 256;
  for (let i = 0; i < n; i++) {
    if (i % CHUNK === CHUNK - 1) await tick();
    const r = rows[i]!;
    values[i] = r.value;
    texts[i] = r.search_text;
    sorts[i] = r.sort_order;
    position.set(r.value, i);
    grams += 2 * Math.max(0, r.search_text.length - 1);
    // An estimate: the row's strings (one byte a character for Latin-1 text, plus headers), its
    // option_data, the row object, map entry and array slots, and its answer JSON for the share of
    // items that get served (made on first use). Measured close to the real heap at 100,000 items.
    const strings = (r.id?.length ?? 0) + r.value.length + r.label.length + r.search_text.length;
    bytes += 1.5 * strings + 2 * (r.data_bytes ?? 0) + 264;
  }
  const bits = Math.min(18, Math.max(10, Math.ceil(Math.log2(Math.max(1, grams / 8)))));
  const buckets = 1 << bits;
  const starts = new Uint32Array(buckets + 1);
  const last = new Int32Array(buckets).fill(-1);
  // Pass 1 counts postings per bucket (an item once per bucket); pass 2 fills them, items in read
  // order, so every bucket's list comes out ascending. Each text's bigrams and trigrams.
  let postings = new Int32Array(0);
  let fill = starts;
  for (let pass = 1; pass <= 2; pass++) {
    if (pass === 2) {
      for (let b = 0; b < buckets; b++) starts[b + 1]! += starts[b]!;
      postings = new Int32Array(starts[buckets]!);
      fill = starts.slice(0, buckets);
      last.fill(-1);
    }
    for (let i = 0; i < n; i++) {
      if (i % CHUNK === CHUNK - 1) await tick();
      const t = texts[i]!;
      for (let k = 0; k + 1 < t.length; k++) {
        const x = t.charCodeAt(k);
        const y = t.charCodeAt(k + 1);
        for (let g = 0; g < 2; g++) {
          if (g === 1 && k + 2 >= t.length) break;
          const bucket = hash(x, y, g === 0 ? BIGRAM : t.charCodeAt(k + 2), bits);
          if (last[bucket] === i) continue;
          last[bucket] = i;
          if (pass === 1) starts[bucket + 1]!++;
          else postings[fill[bucket]!++] = i;
        }
      }
    }
  }
  bytes += starts.byteLength + postings.byteLength;
  return { version, size: n, bytes, rows, json, values, sorts, texts, position, bits, starts, postings };
}

/** The item's answer JSON, key order = the response schema's, made once on first use (most items never are). */
export function itemJson(ix: SetIndex, i: number): string {
  let j = ix.json[i];
  if (j === undefined) {
    const r = ix.rows[i]!;
    j = ix.json[i] = JSON.stringify({
      id: r.id,
      value: r.value,
      label: r.label,
      sort_order: r.sort_order,
      option_data: r.option_data,
    });
  }
  return j;
}

/** First index in postings[from, to) whose value is >= target (galloping, then binary search). */
function seek(p: Int32Array, from: number, to: number, target: number): number {
  let step = 1;
  let hi = from;
  while (hi < to && p[hi]! < target) {
    from = hi + 1;
    hi += step;
    step *= 2;
  }
  hi = Math.min(hi, to);
  while (from < hi) {
    const mid = (from + hi) >>> 1;
    if (p[mid]! < target) from = mid + 1;
    else hi = mid;
  }
  return from;
}

/**
 * Positions (ascending, from `start` on) of the items whose folded text contains every folded
 * word, at most `max` of them.
 */
export function searchIndex(ix: SetIndex, words: string[], start: number, max: number): number[] {
  const out: number[] = [];
  const texts = ix.texts;
  const matches = (i: number) => {
    const t = texts[i]!;
    for (const w of words) if (!t.includes(w)) return false;
    return true;
  };
  // Posting ranges of the words' n-grams, shortest first.
  const ranges: [number, number][] = [];
  const seen = new Set<number>();
  for (const w of words) {
    // Trigrams of longer words (selective); a two-character word has its bigram; one character, nothing.
    const buckets: number[] = [];
    if (w.length === 2) buckets.push(hash(w.charCodeAt(0), w.charCodeAt(1), BIGRAM, ix.bits));
    for (let k = 0; k + 2 < w.length; k++)
      buckets.push(hash(w.charCodeAt(k), w.charCodeAt(k + 1), w.charCodeAt(k + 2), ix.bits));
    for (const b of buckets) {
      if (seen.has(b)) continue;
      seen.add(b);
      const lo = ix.starts[b]!;
      const hi = ix.starts[b + 1]!;
      if (lo === hi) return out;
      ranges.push([lo, hi]);
    }
  }
  if (ranges.length === 0) {
    // Only one-character words (or none): walk in read order; such searches match densely.
    for (let i = start; i < ix.size && out.length < max; i++) if (words.length === 0 || matches(i)) out.push(i);
    return out;
  }
  ranges.sort((a, b) => a[1] - a[0] - (b[1] - b[0]));
  // Leapfrog over at most four lists; the substring test settles the rest.
  const lists = ranges.slice(0, 4);
  const p = ix.postings;
  const cur = lists.map(([lo, hi]) => seek(p, lo, hi, start));
  const hi0 = lists[0]![1];
  outer: for (let c0 = cur[0]!; c0 < hi0 && out.length < max; c0++) {
    const target = p[c0]!;
    for (let l = 1; l < lists.length; l++) {
      const hi = lists[l]![1];
      const c = (cur[l] = seek(p, cur[l]!, hi, target));
      if (c >= hi) break outer;
      // Another list skips ahead: so does the driver (the loop's ++ lands on its next candidate).
      if (p[c] !== target) {
        c0 = seek(p, c0 + 1, hi0, p[c]!) - 1;
        continue outer;
      }
    }
    if (matches(target)) out.push(target);
  }
  return out;
}
