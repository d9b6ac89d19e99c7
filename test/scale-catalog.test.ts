// The Citus plan (docs/scaling.md) distributes every tenant-owned table on app_id. Citus can only
// enforce a primary or unique key that contains the distribution column, so this reads the catalog
// of a migrated database and fails when a table's keys would not survive distribution, or when a
// new table has not been placed in the plan.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { migrate } from '../src/db/migrate.js';
import { createPool, type Db } from '../src/db/pool.js';
import { createTestDatabase } from './helpers/server.js';

/** Replicated to every node: small, read by joins from any shard, written rarely. */
const REFERENCE = [
  'platform_settings',
  'signing_keys',
  'users',
  'organizations',
  'memberships',
  'apps',
  'exchange_rates',
  'schema_migrations',
  // A console user's sign-in renewals, keyed by user like `users`.
  'refresh_families',
  'refresh_tokens',
];
/** Stay on the coordinator: service-wide state with no tenant, or keys that are not an app's. */
const LOCAL = [
  'an_rollup_state',
  'export_schema_state',
  'rate_limit_windows',
  'ad_network_call_log',
  'config_change_head',
  'encryption_key_check',
  'sign_in_throttle',
  'exp_fold_state',
];

/**
 * Keys that must change before distribution (docs/scaling.md, "What must change"). The list only
 * shrinks: a new key without app_id fails, and so does an entry that no longer needs to be here.
 */
const MUST_CHANGE = [
  // Surrogate ids: the key becomes (app_id, id); foreign keys to them gain app_id.
  'activity.activity_pkey',
  'ad_network_experiment_variants.ad_network_experiment_variants_pkey',
  'ad_network_experiment_variants.ad_network_experiment_variants_experiment_id_position_key',
  'ad_network_experiments.ad_network_experiments_pkey',
  'ad_network_writes.ad_network_writes_pkey',
  'api_keys.api_keys_pkey',
  'content_items.content_items_pkey',
  'exports.exports_pkey',
  'identity_links.identity_links_pkey',
  'outbox.outbox_pkey',
  'webhook_deliveries.webhook_deliveries_pkey',
  'webhook_endpoints.webhook_endpoints_pkey',
  'experiments.experiments_pkey',
  'exp_devices.exp_devices_pkey',
  'privacy_deletions.privacy_deletions_pkey',
  // Looked up without the app: the key is resolved through a reference table instead.
  'api_keys.api_keys_public_key_key',
  'ad_network_oauth_states.ad_network_oauth_states_pkey',
  // One global sequence across apps: the change stream stays on the coordinator or numbers per app.
  'config_changes.config_changes_pkey',
];

let db: Db;
before(async () => {
  db = createPool(await createTestDatabase(), 2);
  await migrate(db);
});
after(() => db.end());

async function tables(): Promise<{ name: string; cols: string[] }[]> {
  const { rows } = await db.query<{ name: string; cols: string[] }>(
    `SELECT c.relname AS name, array_agg(a.attname::text ORDER BY a.attnum) AS cols
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
       JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
      WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') AND NOT c.relispartition
      GROUP BY c.relname ORDER BY c.relname`,
  );
  return rows;
}

describe('catalog: ready to distribute on app_id', () => {
  it('every primary and unique key of a table with app_id contains app_id', async () => {
    const { rows } = await db.query<{ tbl: string; idx: string; cols: (string | null)[] }>(
      `SELECT t.relname AS tbl, i.relname AS idx, array_agg(a.attname::text) AS cols
         FROM pg_index x
         JOIN pg_class t ON t.oid = x.indrelid JOIN pg_namespace n ON n.oid = t.relnamespace
         JOIN pg_class i ON i.oid = x.indexrelid
         CROSS JOIN LATERAL unnest(x.indkey::int2[]) AS k(attnum)
         LEFT JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.attnum
        WHERE n.nspname = 'public' AND x.indisunique AND NOT t.relispartition
          AND EXISTS (SELECT 1 FROM pg_attribute b WHERE b.attrelid = t.oid AND b.attname = 'app_id' AND NOT b.attisdropped)
        GROUP BY 1, 2 ORDER BY 1, 2`,
    );
    assert.ok(rows.length > 10, 'the catalog was read');
    const lacking = rows.filter((r) => !r.cols.includes('app_id')).map((r) => `${r.tbl}.${r.idx}`);
    assert.deepEqual(
      lacking.filter((k) => !MUST_CHANGE.includes(k)),
      [],
      'unique keys without the distribution column (add app_id to them)',
    );
    assert.deepEqual(
      MUST_CHANGE.filter((k) => !lacking.includes(k)),
      [],
      'fixed: remove them from MUST_CHANGE and docs/scaling.md',
    );
  });

  it('every table is placed: distributed (has app_id), reference or local', async () => {
    const all = await tables();
    const unplaced = all
      .filter((t) => !t.cols.includes('app_id') && !REFERENCE.includes(t.name) && !LOCAL.includes(t.name))
      .map((t) => t.name);
    assert.deepEqual(unplaced, [], 'tables without app_id that docs/scaling.md does not place');
    const stale = [...REFERENCE, ...LOCAL].filter((n) => !all.some((t) => t.name === n));
    assert.deepEqual(stale, [], 'placed tables that no longer exist');
    const tenantButNoApp = all
      .filter((t) => t.cols.includes('tenant_id') && !t.cols.includes('app_id') && !REFERENCE.includes(t.name))
      .map((t) => t.name);
    assert.deepEqual(tenantButNoApp, [], 'tenant-owned tables must carry app_id or be reference tables');
  });
});
