import type { Queryable, Tx } from '../../db/pool.js';
import type { Scope } from '../../types/domain.js';

export interface BundleMeta {
  bundle_version: number;
  sdk_min_version: string;
  size_bytes: number;
  generated_at: Date;
  reason: string;
  rolled_back_from: number | null;
  actor_user_id: string | null;
}

/** A bundle with its content as the exact JSON text that is served. */
export interface StoredBundle extends BundleMeta {
  content: string;
}

const META = `bundle_version, sdk_min_version, size_bytes, generated_at, reason, rolled_back_from, actor_user_id`;

export function createBundleStore(db: Queryable) {
  const q = (tx?: Queryable) => tx ?? db;
  return {
    /**
     * Takes the app's next version under the head row's lock (held until commit): concurrent
     * generations, from any instance, queue here and get distinct, increasing numbers.
     */
    async nextVersion(scope: Scope, tx: Tx): Promise<{ version: number; floor: string | null } | null> {
      const r = await tx.query(
        `INSERT INTO bundle_heads (tenant_id, app_id, last_version) VALUES ($1, $2, 1)
         ON CONFLICT (app_id) DO UPDATE SET last_version = bundle_heads.last_version + 1, updated_at = now()
           WHERE bundle_heads.tenant_id = EXCLUDED.tenant_id
         RETURNING last_version, sdk_min_version`,
        [scope.tenantId, scope.appId],
      );
      return r.rows[0] ? { version: r.rows[0].last_version, floor: r.rows[0].sdk_min_version } : null;
    },

    /** Creates the head with version 1 when the app has none; null when it already existed. */
    async initHead(scope: Scope, tx: Tx): Promise<{ version: number; floor: string | null } | null> {
      const r = await tx.query(
        `INSERT INTO bundle_heads (tenant_id, app_id, last_version) VALUES ($1, $2, 1) ON CONFLICT (app_id) DO NOTHING RETURNING last_version, sdk_min_version`,
        [scope.tenantId, scope.appId],
      );
      return r.rows[0] ? { version: r.rows[0].last_version, floor: r.rows[0].sdk_min_version } : null;
    },

    /** Sets the app's sdk_min_version floor; false when it already had that value. */
    async setFloor(scope: Scope, floor: string | null, tx: Tx): Promise<boolean> {
      const r = await tx.query(
        `INSERT INTO bundle_heads (tenant_id, app_id, last_version, sdk_min_version) VALUES ($1, $2, 0, $3)
         ON CONFLICT (app_id) DO UPDATE SET sdk_min_version = EXCLUDED.sdk_min_version, updated_at = now()
           WHERE bundle_heads.tenant_id = EXCLUDED.tenant_id AND bundle_heads.sdk_min_version IS DISTINCT FROM EXCLUDED.sdk_min_version
         RETURNING 1`,
        [scope.tenantId, scope.appId, floor],
      );
      return (r.rowCount ?? 0) > 0;
    },

    async getFloor(scope: Scope): Promise<string | null> {
      const r = await db.query(`SELECT sdk_min_version FROM bundle_heads WHERE tenant_id = $1 AND app_id = $2`, [
        scope.tenantId,
        scope.appId,
      ]);
      return r.rows[0]?.sdk_min_version ?? null;
    },

    async insert(scope: Scope, b: StoredBundle, tx: Tx): Promise<void> {
      await tx.query(
        `INSERT INTO bundles (tenant_id, app_id, bundle_version, sdk_min_version, size_bytes, content, reason, rolled_back_from, actor_user_id, generated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
        [
          scope.tenantId,
          scope.appId,
          b.bundle_version,
          b.sdk_min_version,
          b.size_bytes,
          b.content,
          b.reason,
          b.rolled_back_from,
          b.actor_user_id,
          b.generated_at,
        ],
      );
    },

    /** The cheap check behind cache revalidation: one primary-key read. */
    async headVersion(scope: Scope): Promise<number | null> {
      const r = await db.query(`SELECT last_version FROM bundle_heads WHERE tenant_id = $1 AND app_id = $2`, [
        scope.tenantId,
        scope.appId,
      ]);
      return r.rows[0]?.last_version ?? null;
    },

    async current(scope: Scope, tx?: Queryable): Promise<StoredBundle | null> {
      const r = await q(tx).query(
        `SELECT b.bundle_version, b.sdk_min_version, b.size_bytes, b.generated_at, b.reason, b.rolled_back_from, b.actor_user_id, b.content::text AS content
         FROM bundle_heads h JOIN bundles b ON b.app_id = h.app_id AND b.bundle_version = h.last_version
         WHERE h.tenant_id = $1 AND h.app_id = $2 AND b.tenant_id = $1`,
        [scope.tenantId, scope.appId],
      );
      return r.rows[0] ?? null;
    },

    async version(scope: Scope, version: number, tx?: Queryable): Promise<StoredBundle | null> {
      const r = await q(tx).query(
        `SELECT ${META}, content::text AS content FROM bundles WHERE tenant_id = $1 AND app_id = $2 AND bundle_version = $3`,
        [scope.tenantId, scope.appId, version],
      );
      return r.rows[0] ?? null;
    },

    async history(scope: Scope, limit: number, offset: number): Promise<{ rows: BundleMeta[]; total: number }> {
      const [rows, total] = await Promise.all([
        db.query(
          `SELECT ${META} FROM bundles WHERE tenant_id = $1 AND app_id = $2 ORDER BY bundle_version DESC LIMIT $3 OFFSET $4`,
          [scope.tenantId, scope.appId, limit, offset],
        ),
        db.query(`SELECT count(*)::int AS n FROM bundles WHERE tenant_id = $1 AND app_id = $2`, [
          scope.tenantId,
          scope.appId,
        ]),
      ]);
      return { rows: rows.rows, total: total.rows[0].n };
    },

    async notify(scope: Scope, version: number, tx: Tx): Promise<void> {
      await tx.query(`SELECT pg_notify('bundle_changed', $1)`, [`${scope.appId}:${version}`]);
    },
  };
}

export type BundleStore = ReturnType<typeof createBundleStore>;
