import { AppError } from '../../http/errors.js';
import { findJsonViolation } from '../../http/json-bounds.js';
import { violationError } from '../../http/json-body.js';

/** Free-form JSON of one item (layout, steps, rules...) may take at most this many bytes. */
export const MAX_ITEM_JSON_BYTES = 256 * 1024;
export const MAX_ITEMS_PER_KIND = 1000;
export const MAX_FLAGS = 1000;
export const MAX_REMOTE_CONFIG_KEYS = 1000;

export const SEMVER_PATTERN = '^[0-9]{1,6}\\.[0-9]{1,6}\\.[0-9]{1,6}$';
export const KEY_PATTERN = '^[A-Za-z0-9_.:-]{1,128}$';

/** Bounds the free-form parts of one item: total serialized size and nesting depth. */
export function checkFreeForm(parts: Record<string, unknown>): void {
  let size = 0;
  for (const [field, value] of Object.entries(parts)) {
    if (value === undefined) continue;
    // Already checked on the whole body by the JSON parser; kept for callers that are not HTTP.
    const violation = findJsonViolation(value);
    if (violation) throw violationError(`/body/${field}`, violation);
    size += Buffer.byteLength(JSON.stringify(value));
  }
  if (size > MAX_ITEM_JSON_BYTES) {
    throw new AppError(
      'payload_too_large',
      `The item's free-form JSON is ${size} bytes; at most ${MAX_ITEM_JSON_BYTES} are allowed per item`,
      [{ path: '/body', message: `free-form JSON over ${MAX_ITEM_JSON_BYTES} bytes` }],
    );
  }
}

/** Numeric semantic-version compare of x.y.z strings. */
export function compareSemver(a: string, b: string): number {
  const pa = a.split('.').map(Number);
  const pb = b.split('.').map(Number);
  for (let i = 0; i < 3; i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}

export function maxSemver(versions: (string | null | undefined)[], fallback: string): string {
  let best: string | null = null;
  for (const v of versions) if (v && (best === null || compareSemver(v, best) > 0)) best = v;
  return best ?? fallback;
}
