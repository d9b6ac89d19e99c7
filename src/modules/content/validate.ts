import { AppError } from '../../http/errors.js';

/** Free-form JSON of one item (layout, steps, rules...) may take at most this many bytes. */
export const MAX_ITEM_JSON_BYTES = 256 * 1024;
/** Nesting beyond this is refused: deep JSON costs stack and is never a real design. */
export const MAX_JSON_DEPTH = 32;
export const MAX_ITEMS_PER_KIND = 1000;
export const MAX_FLAGS = 1000;
export const MAX_REMOTE_CONFIG_KEYS = 1000;

export const SEMVER_PATTERN = '^[0-9]{1,6}\\.[0-9]{1,6}\\.[0-9]{1,6}$';
export const KEY_PATTERN = '^[A-Za-z0-9_.:-]{1,128}$';

// NUL and lone surrogates cannot be stored by PostgreSQL (text or jsonb): refused up front, never a 500.
const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

export function storableText(s: string): boolean {
  return !UNSTORABLE.test(s);
}

/** Nesting depth, or MAX_JSON_DEPTH + 1 early; -1 when a string or key cannot be stored. */
function depthOf(value: unknown): number {
  // Iterative, so hostile nesting cannot overflow the stack before it is measured.
  let max = 0;
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length) {
    const [v, d] = stack.pop()!;
    if (typeof v === 'string') {
      if (!storableText(v)) return -1;
      continue;
    }
    if (v === null || typeof v !== 'object') continue;
    if (d > max) max = d;
    if (max > MAX_JSON_DEPTH) return max;
    if (!Array.isArray(v)) for (const k of Object.keys(v)) if (!storableText(k)) return -1;
    for (const child of Array.isArray(v) ? v : Object.values(v as object)) stack.push([child, d + 1]);
  }
  return max;
}

/** Bounds the free-form parts of one item: total serialized size and nesting depth. */
export function checkFreeForm(parts: Record<string, unknown>): void {
  let size = 0;
  for (const [field, value] of Object.entries(parts)) {
    if (value === undefined) continue;
    const depth = depthOf(value);
    if (depth < 0) throw new AppError('validation_failed', `${field} holds a NUL character or an unpaired surrogate`, [{ path: `/body/${field}`, message: 'unstorable character' }]);
    if (depth > MAX_JSON_DEPTH) {
      throw new AppError('validation_failed', `${field} is nested deeper than ${MAX_JSON_DEPTH} levels`, [{ path: `/body/${field}`, message: 'too deeply nested' }]);
    }
    size += Buffer.byteLength(JSON.stringify(value));
  }
  if (size > MAX_ITEM_JSON_BYTES) {
    throw new AppError('payload_too_large', `The item's free-form JSON is ${size} bytes; at most ${MAX_ITEM_JSON_BYTES} are allowed per item`, [
      { path: '/body', message: `free-form JSON over ${MAX_ITEM_JSON_BYTES} bytes` },
    ]);
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

/**
 * For POST actions without a body (publish, unpublish, generate): a client that sends
 * `content-type: application/json` with an empty body gets the action, not a JSON parse error.
 */
export async function allowEmptyBody(req: { headers: Record<string, string | string[] | undefined> }): Promise<void> {
  const len = req.headers['content-length'];
  if (req.headers['transfer-encoding'] === undefined && (len === undefined || len === '0')) delete req.headers['content-type'];
}
