import {
  SEALED_PREFIX,
  sealedBytesHeader,
  sealedTextPrefix,
  type SecretBox,
  UnknownKeyError,
} from '../lib/secret-box.js';
import type { Queryable } from './pool.js';

/** Columns that hold secrets sealed with ENCRYPTION_KEY: text (signing secrets) or bytes (ad-network tokens). */
const SECRET_COLUMNS = [
  { table: 'webhook_endpoints', column: 'secret', bytes: false },
  { table: 'webhook_endpoints', column: 'previous_secret', bytes: false },
  { table: 'webhook_deliveries', column: 'secret', bytes: false },
  { table: 'app_settings', column: 'callback_signing_secret', bytes: false },
  { table: 'ad_network_connections', column: 'refresh_token_enc', bytes: true },
  { table: 'ad_network_connections', column: 'access_token_enc', bytes: true },
  { table: 'ad_network_oauth_states', column: 'verifier_enc', bytes: true },
] as const;
type Column = (typeof SECRET_COLUMNS)[number];

const BATCH = 500;
/** Sealed values per column tried when a database from before key checks is first opened. */
const SAMPLE = 20;

const sealedFilter = ({ column, bytes }: Column) =>
  bytes ? `${column} IS NOT NULL` : `${column} LIKE '${SEALED_PREFIX}%'`;

/** Sealed values, up to SAMPLE per column: which key opens them tells which key sealed the database. */
export async function sampleSealed(q: Queryable): Promise<{ v: string | Buffer; bytes: boolean }[]> {
  const out: { v: string | Buffer; bytes: boolean }[] = [];
  for (const c of SECRET_COLUMNS) {
    const { rows } = await q.query<{ v: string | Buffer }>(
      `SELECT ${c.column} AS v FROM ${c.table} WHERE ${sealedFilter(c)} LIMIT ${SAMPLE}`,
    );
    out.push(...rows.map((r) => ({ v: r.v, bytes: c.bytes })));
  }
  return out;
}

export function opens(box: SecretBox, s: { v: string | Buffer; bytes: boolean }): boolean {
  try {
    if (s.bytes) box.openBytes(s.v as Buffer);
    else box.open(s.v as string);
    return true;
  } catch {
    return false;
  }
}

/**
 * Visits, once each, the rows of every secret column that `where` selects (ctid order, so a rewritten
 * row, which moves, is not counted twice) and replaces each value by `redo(value)` (null: leave it).
 */
async function rewrite(
  q: Queryable,
  where: (c: Column) => { sql: string; param: string | Buffer } | null,
  redo: (v: string | Buffer, c: Column) => string | Buffer | null,
): Promise<{ rewritten: number; left: number }> {
  let rewritten = 0;
  let left = 0;
  for (const c of SECRET_COLUMNS) {
    const w = where(c);
    if (!w) continue;
    const type = c.bytes ? 'bytea' : 'text';
    for (let after = '(0,0)'; ; ) {
      const { rows } = await q.query<{ id: string; v: string | Buffer }>(
        `SELECT ctid AS id, ${c.column} AS v FROM ${c.table}
          WHERE ${c.column} IS NOT NULL AND ${w.sql} AND ctid > $2::tid ORDER BY ctid LIMIT ${BATCH}`,
        [w.param, after],
      );
      if (rows.length === 0) break;
      after = rows[rows.length - 1].id;
      const done = rows.map((r) => ({ r, next: redo(r.v, c) })).filter((x) => x.next !== null);
      left += rows.length - done.length;
      if (done.length === 0) continue;
      // Guarded by the old value: a row changed meanwhile (by an instance still running) keeps its new value.
      await q.query(
        `UPDATE ${c.table} t SET ${c.column} = x.next
           FROM unnest($1::tid[], $2::${type}[], $3::${type}[]) AS x(id, old, next)
          WHERE t.ctid = x.id AND t.${c.column} = x.old`,
        [done.map((x) => x.r.id), done.map((x) => x.r.v), done.map((x) => x.next)],
      );
      rewritten += done.length;
    }
  }
  return { rewritten, left };
}

/** Not sealed under box's key: clear, v1, under another key id, or older bytes. */
const notUnderCurrent = (box: SecretBox) => (c: Column) =>
  c.bytes
    ? { sql: `substring(${c.column} from 1 for 5) <> $1`, param: sealedBytesHeader(box.kid) }
    : { sql: `${c.column} NOT LIKE $1`, param: `${sealedTextPrefix(box.kid)}%` };

const reseal = (box: SecretBox) => (v: string | Buffer, c: Column) => {
  try {
    return c.bytes ? box.sealBytes(box.openBytes(v as Buffer)) : box.seal(box.open(v as string));
  } catch (err) {
    if (err instanceof UnknownKeyError) return null;
    throw err;
  }
};

/**
 * Seals the text secrets written in clear before migration 018. Idempotent and safe with several
 * instances starting at once: a row is only replaced while it still holds the clear value.
 */
export async function sealStoredSecrets(q: Queryable, box: SecretBox): Promise<number> {
  const clear = (c: Column) => (c.bytes ? null : { sql: `${c.column} NOT LIKE $1`, param: `${SEALED_PREFIX}%` });
  return (await rewrite(q, clear, (v) => box.seal(v as string))).rewritten;
}

/**
 * Key rotation: every secret not sealed under box's current key (ENCRYPTION_KEY) is opened with
 * either key and sealed again under it. Idempotent; `left` counts values neither key opens.
 */
export async function resealStoredSecrets(q: Queryable, box: SecretBox): Promise<{ resealed: number; left: number }> {
  const { rewritten, left } = await rewrite(q, notUnderCurrent(box), reseal(box));
  return { resealed: rewritten, left };
}

/** Sealed values this instance's keys do not open (written under another key id): counted, not changed. */
export async function countUnopenable(q: Queryable, box: SecretBox): Promise<number> {
  const other = (c: Column) =>
    c.bytes
      ? {
          sql: `get_byte(${c.column}, 0) = 2 AND substring(${c.column} from 1 for 5) <> $1`,
          param: sealedBytesHeader(box.kid),
        }
      : { sql: `${c.column} LIKE 'sealed:v2:%' AND ${c.column} NOT LIKE $1`, param: `${sealedTextPrefix(box.kid)}%` };
  let n = 0;
  await rewrite(q, other, (v, c) => {
    if (!opens(box, { v, bytes: c.bytes })) n++;
    return null;
  });
  return n;
}
