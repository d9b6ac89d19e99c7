import type { Logger } from 'pino';
import { ConfigError } from '../config.js';
import { createSecretBox, KEY_ID_LENGTH, keyCheck } from '../lib/secret-box.js';
import { type Db, type Tx, withTx } from './pool.js';
import { countUnopenable, opens, resealStoredSecrets, sampleSealed, sealStoredSecrets } from './seal-secrets.js';

// Any constant works; it only has to be the same for every instance (migrate.ts takes 727_001).
const SECRETS_LOCK = 727_026;

const kidOf = (check: string) => check.slice(0, KEY_ID_LENGTH);

/** The check value of the key a database from before key checks was sealed with, from its stored secrets. */
async function probe(tx: Tx, current: Buffer, previous: Buffer | undefined, log: Logger): Promise<string | null> {
  const samples = await sampleSealed(tx);
  if (samples.length === 0) {
    log.info({ keyId: kidOf(keyCheck(current)) }, 'ENCRYPTION_KEY adopted by this database (no sealed secret yet)');
    return keyCheck(current);
  }
  for (const key of previous ? [current, previous] : [current]) {
    const opened = samples.filter((s) => opens(createSecretBox(key), s)).length;
    if (opened === 0) continue;
    const others = samples.filter((s) => !opens(createSecretBox(current, previous), s)).length;
    // Two instances with different keys before this check existed each sealed their own apps' secrets.
    if (others > 0)
      log.warn(
        `${others} of ${samples.length} sampled secrets are sealed under another key than ENCRYPTION_KEY: set that key as ENCRYPTION_KEY_PREVIOUS once to re-seal them (docs/operations.md)`,
      );
    log.info({ keyId: kidOf(keyCheck(key)) }, 'encryption key check recorded from the stored secrets');
    return keyCheck(key);
  }
  return null;
}

function mismatch(sealedWith: string | null, current: Buffer, previous?: Buffer): ConfigError {
  const db = sealedWith ? `key id ${kidOf(sealedWith)}` : 'a key that opens none of its sampled secrets';
  const ours = `${kidOf(keyCheck(current))}${previous ? `, ENCRYPTION_KEY_PREVIOUS ${kidOf(keyCheck(previous))}` : ''}`;
  return new ConfigError(
    `ENCRYPTION_KEY is not the key this database's secrets are sealed with (database: ${db}; this instance: key id ${ours}): start every instance on this database with the same ENCRYPTION_KEY (a generated one is in the first instance's DATA_DIR/encryption.key), or, to change keys, set the new key as ENCRYPTION_KEY and the database's key as ENCRYPTION_KEY_PREVIOUS (docs/operations.md)`,
  );
}

/**
 * At start-up, before any secret is sealed or opened: refuses a key other than the database's
 * (a ConfigError naming ENCRYPTION_KEY), records the first key of an empty database, and with
 * ENCRYPTION_KEY_PREVIOUS re-seals every secret under ENCRYPTION_KEY and moves the check to it.
 * One transaction under an advisory lock: instances starting together take turns, and a failed
 * re-seal leaves the secrets and the check as they were.
 */
export async function prepareSecrets(db: Db, keys: { current: Buffer; previous?: Buffer }, log: Logger) {
  const { current, previous } = keys;
  const box = createSecretBox(current, previous);
  await withTx(db, async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock($1)', [SECRETS_LOCK]);
    const { rows } = await tx.query<{ check_value: string }>('SELECT check_value FROM encryption_key_check');
    const recorded = rows[0]?.check_value;
    const sealedWith = recorded ?? (await probe(tx, current, previous, log));
    const rotating = previous !== undefined && sealedWith === keyCheck(previous);
    if (sealedWith !== keyCheck(current) && !rotating) throw mismatch(sealedWith, current, previous);
    if (previous) {
      // Every start with both keys re-seals what is left (values an instance on the old key wrote meanwhile).
      const { resealed, left } = await resealStoredSecrets(tx, box);
      log.info({ resealed, keyId: box.kid }, 'secrets re-sealed under ENCRYPTION_KEY');
      if (left > 0)
        log.warn(
          `${left} stored secrets open with neither ENCRYPTION_KEY nor ENCRYPTION_KEY_PREVIOUS; left as they are`,
        );
    } else {
      await sealStoredSecrets(tx, box);
      const unopenable = await countUnopenable(tx, box);
      if (unopenable > 0)
        log.warn(
          `${unopenable} stored secrets are sealed under another key than ENCRYPTION_KEY: start one instance with that key as ENCRYPTION_KEY_PREVIOUS to re-seal them (docs/operations.md)`,
        );
    }
    if (recorded !== keyCheck(current)) {
      await tx.query(
        `INSERT INTO encryption_key_check (check_value, key_id) VALUES ($1, $2)
         ON CONFLICT (singleton) DO UPDATE SET check_value = EXCLUDED.check_value, key_id = EXCLUDED.key_id, updated_at = now()`,
        [keyCheck(current), box.kid],
      );
      if (rotating) log.info({ from: kidOf(sealedWith), to: box.kid }, 'encryption key rotated');
    }
  });
}
