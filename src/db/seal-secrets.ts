import { SEALED_PREFIX, type SecretBox } from '../lib/secret-box.js';
import type { Db } from './pool.js';

/** Text columns that hold signing secrets, each sealed with ENCRYPTION_KEY. */
const SECRET_COLUMNS = [
  ['webhook_endpoints', 'id', 'secret'],
  ['webhook_endpoints', 'id', 'previous_secret'],
  ['webhook_deliveries', 'id', 'secret'],
  ['app_settings', 'app_id', 'callback_signing_secret'],
] as const;

const BATCH = 500;

/**
 * Seals the secrets written in clear before migration 018. Idempotent and safe with several
 * instances starting at once: a row is only replaced while it still holds the clear value.
 */
export async function sealStoredSecrets(db: Db, box: SecretBox): Promise<number> {
  let sealed = 0;
  for (const [table, id, column] of SECRET_COLUMNS) {
    for (;;) {
      const { rows } = await db.query<{ id: string; v: string }>(
        `SELECT ${id} AS id, ${column} AS v FROM ${table} WHERE ${column} IS NOT NULL AND ${column} NOT LIKE $1 LIMIT ${BATCH}`,
        [`${SEALED_PREFIX}%`],
      );
      if (rows.length === 0) break;
      await db.query(
        `UPDATE ${table} t SET ${column} = x.sealed
           FROM unnest($1::uuid[], $2::text[], $3::text[]) AS x(id, clear, sealed)
          WHERE t.${id} = x.id AND t.${column} = x.clear`,
        [rows.map((r) => r.id), rows.map((r) => r.v), rows.map((r) => box.seal(r.v))],
      );
      sealed += rows.length;
    }
  }
  return sealed;
}
