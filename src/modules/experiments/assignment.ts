import murmur from 'murmurhash3js';

/** Buckets of the assignment space (decisions §9/§10): a bucket is murmur3 % BUCKETS. */
export const BUCKETS = 10_000;

export interface WeightedVariant {
  key: string;
  weight: number;
}

/**
 * murmur3_x86_32(utf8(unit + ":" + key), seed 0) % 10000, as the SDK computes it. murmurhash3js
 * hashes one byte per char code, so the string is first turned into its UTF-8 bytes (latin1 maps
 * each byte to one char).
 */
export function bucketOf(unit: string, experimentKey: string): number {
  const bytes = Buffer.from(`${unit}:${experimentKey}`, 'utf8').toString('latin1');
  return murmur.x86.hash32(bytes, 0) % BUCKETS;
}

/** Start of variant i's range: 100 x (w_0 + ... + w_(i-1)). */
const startOf = (variants: WeightedVariant[], i: number) =>
  100 * variants.slice(0, i).reduce((s, v) => s + v.weight, 0);

/** The variant index a bucket falls in, or null when it is in no range (not in the experiment). */
export function variantIndexOf(variants: WeightedVariant[], coveragePct: number, bucket: number): number | null {
  for (let i = 0; i < variants.length; i++) {
    const s = startOf(variants, i);
    if (bucket >= s && bucket < s + variants[i].weight * coveragePct) return i;
  }
  return null;
}

/** The variant key of a unit (user id, else anon id), or null when not in the experiment. */
export function assign(
  exp: { key: string; variants: WeightedVariant[]; coverage_pct: number },
  unit: string,
): string | null {
  const i = variantIndexOf(exp.variants, exp.coverage_pct, bucketOf(unit, exp.key));
  return i === null ? null : exp.variants[i].key;
}

/** Above any coverage: an exposure that no coverage makes match. */
export const NEVER_MATCHES = 101;

/**
 * The smallest coverage_pct at which `unit` is assigned `variant` (weights are frozen once
 * started, coverage only grows): an exposure is a mismatch exactly when the current coverage is
 * below this. NEVER_MATCHES when the bucket lies outside the variant's full range or the variant
 * is unknown.
 */
export function coverageNeeded(
  exp: { key: string; variants: WeightedVariant[] },
  unit: string,
  variant: string,
): number {
  const i = exp.variants.findIndex((v) => v.key === variant);
  if (i < 0) return NEVER_MATCHES;
  const b = bucketOf(unit, exp.key);
  const s = startOf(exp.variants, i);
  const w = exp.variants[i].weight;
  if (b < s || b >= s + 100 * w) return NEVER_MATCHES;
  return Math.floor((b - s) / w) + 1;
}
