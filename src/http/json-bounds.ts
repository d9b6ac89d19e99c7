/**
 * Bounds and the text rule for every JSON value a client sends (docs/api-conventions.md, "Hostile
 * input"). JSON.parse in V8 is iterative, so parsing cannot overflow the stack (its cost is bounded by
 * the body limit); everything recursive that comes after it (JSON.stringify, PostgreSQL's jsonb
 * input) runs only on values this iterative walk has accepted.
 */

import { numberProblem } from './numbers.js';

/** Nesting levels of a request body (for ingestion: of each event), the root object being level 1. */
export const MAX_JSON_DEPTH = 32;
/** Keys of one object. */
export const MAX_JSON_KEYS = 1000;
/**
 * Characters of one string or key. Above every field's own limit (a content item may be one 256 KB
 * string, which then gets that limit's 413), so it only matters where bodies may be larger.
 */
export const MAX_JSON_STRING = 1024 * 1024;

// NUL cannot be stored in PostgreSQL text or jsonb, nor can a lone UTF-16 surrogate (it has no UTF-8
// form): both are refused, never replaced, so what is stored is what was sent.
const SUSPECT = /[\u0000\ud800-\udfff]/;
const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Why a text cannot be stored, or null when it can. */
export function textProblem(s: string): string | null {
  if (!SUSPECT.test(s)) return null;
  if (s.includes('\u0000')) return 'holds a NUL character (U+0000)';
  return UNSTORABLE.test(s) ? 'holds an unpaired UTF-16 surrogate' : null;
}

export const storableText = (s: string): boolean => textProblem(s) === null;

export interface JsonViolation {
  /** JSON pointer below the walked value's own path. */
  path: string;
  message: string;
}

interface Frame {
  value: unknown;
  depth: number;
  parent: Frame | null;
  key: string | number;
}

const escapeToken = (k: string | number) => String(k).replaceAll('~', '~0').replaceAll('/', '~1');

function pointer(frame: Frame | null, last?: string): string {
  const parts: string[] = last === undefined ? [] : [escapeToken(last)];
  for (let f = frame; f && f.parent; f = f.parent) parts.push(escapeToken(f.key));
  return parts.length ? `/${parts.reverse().join('/')}` : '';
}

function stringProblem(s: string): string | null {
  if (s.length > MAX_JSON_STRING) return `is longer than ${MAX_JSON_STRING} characters`;
  return textProblem(s);
}

/**
 * The first value of `root` that breaks a bound or the text rule (depth-first, iterative), or null.
 * Keys are checked like strings: they end up in SQL and jsonb too.
 */
export function findJsonViolation(root: unknown): JsonViolation | null {
  if (typeof root === 'string') {
    const why = stringProblem(root);
    return why ? { path: '', message: why } : null;
  }
  if (typeof root === 'number') {
    const why = numberProblem(root);
    return why ? { path: '', message: why } : null;
  }
  if (root === null || typeof root !== 'object') return null;
  const stack: Frame[] = [{ value: root, depth: 1, parent: null, key: '' }];
  // Only objects and arrays take a frame; strings are checked where they are met.
  const visit = (f: Frame, key: string | number, c: unknown): JsonViolation | null => {
    if (typeof c === 'string') {
      const why = stringProblem(c);
      return why ? { path: pointer(f, String(key)), message: why } : null;
    }
    if (typeof c === 'number') {
      // JSON.parse reads 1e999 as Infinity, which JSON.stringify would store as null.
      const why = numberProblem(c);
      return why ? { path: pointer(f, String(key)), message: why } : null;
    }
    if (c !== null && typeof c === 'object') stack.push({ value: c, depth: f.depth + 1, parent: f, key });
    return null;
  };
  while (stack.length > 0) {
    const f = stack.pop()!;
    const v = f.value as object;
    if (f.depth > MAX_JSON_DEPTH)
      return { path: pointer(f), message: `is nested deeper than ${MAX_JSON_DEPTH} levels` };
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) {
        const bad = visit(f, i, v[i]);
        if (bad) return bad;
      }
      continue;
    }
    const keys = Object.keys(v);
    if (keys.length > MAX_JSON_KEYS) return { path: pointer(f), message: `has more than ${MAX_JSON_KEYS} keys` };
    for (const k of keys) {
      const why = stringProblem(k);
      if (why) return { path: pointer(f, k), message: `key ${why}` };
      const bad = visit(f, k, (v as Record<string, unknown>)[k]);
      if (bad) return bad;
    }
  }
  return null;
}
