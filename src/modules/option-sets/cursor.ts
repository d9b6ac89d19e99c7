import { invalid } from '../../http/errors.js';
import { unstorable } from './text.js';

/** What a cursor pins: the set, the version paging started on, and the last item returned. */
export interface Cursor {
  setId: string;
  version: number;
  sortOrder: number;
  value: string;
}

// base64url of a small JSON array; opaque to clients, validated strictly on the way in.
export function encodeCursor(c: Cursor): string {
  return Buffer.from(JSON.stringify([1, c.setId, c.version, c.sortOrder, c.value])).toString('base64url');
}

export function decodeCursor(raw: string, setId: string): Cursor {
  const bad = () => invalid('cursor is not valid for this option set', '/querystring/cursor');
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(raw, 'base64url').toString('utf8'));
  } catch {
    throw bad();
  }
  if (!Array.isArray(parsed) || parsed.length !== 5 || parsed[0] !== 1) throw bad();
  const [, s, version, sortOrder, value] = parsed as unknown[];
  if (
    s !== setId ||
    !Number.isInteger(version) ||
    (version as number) < 1 ||
    (version as number) > 2_147_483_647 ||
    typeof sortOrder !== 'number' ||
    !Number.isFinite(sortOrder) ||
    typeof value !== 'string' ||
    unstorable(value)
  ) {
    throw bad();
  }
  return { setId, version: version as number, sortOrder, value };
}
