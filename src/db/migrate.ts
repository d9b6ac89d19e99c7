import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Db } from './pool.js';
import { withTx } from './pool.js';

const MIGRATIONS_DIR = fileURLToPath(new URL('../../migrations/', import.meta.url));
// Any constant works; it only has to be the same for every instance of this service.
const MIGRATION_LOCK = 727_001;

const migrationFiles = () =>
  readdirSync(MIGRATIONS_DIR)
    .filter((f) => f.endsWith('.sql'))
    .sort();

/** The migration files not applied yet (readiness: an instance newer than its database is not ready). */
export async function pendingMigrations(db: Db): Promise<string[]> {
  const { rows } = await db.query<{ name: string }>('SELECT name FROM schema_migrations');
  const done = new Set(rows.map((r) => r.name));
  return migrationFiles().filter((f) => !done.has(f));
}

/**
 * Applies pending SQL files in name order, each in its own transaction. The advisory
 * lock makes concurrent starts of several instances wait for one another instead of racing.
 */
export async function migrate(db: Db, log: (m: string) => void = () => undefined): Promise<string[]> {
  const files = migrationFiles();
  return withTx(db, async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
    await tx.query(
      'CREATE TABLE IF NOT EXISTS schema_migrations (name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())',
    );
    const { rows } = await tx.query<{ name: string }>('SELECT name FROM schema_migrations');
    const done = new Set(rows.map((r) => r.name));
    const applied: string[] = [];
    for (const file of files) {
      if (done.has(file)) continue;
      await tx.query(readFileSync(MIGRATIONS_DIR + file, 'utf8'));
      await tx.query('INSERT INTO schema_migrations (name) VALUES ($1)', [file]);
      applied.push(file);
      log(`migration applied: ${file}`);
    }
    return applied;
  });
}
