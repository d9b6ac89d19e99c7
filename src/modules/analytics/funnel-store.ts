import type { Queryable } from '../../db/pool.js';
import type { Scope } from '../../types/domain.js';
import type { Env } from './read-model.js';

/** Data versions and materialized funnel answers (migration 011). */

export interface StoredFunnel {
  def_hash: string;
  version: number;
  date: string;
  users: number[];
  computed_at: Date;
}

/**
 * Bumps the data version of every app environment in `appEnvs` (those with events in the fold's
 * batch). Runs inside the fold's transaction, so versions and rollups commit together.
 */
export async function bumpAppVersions(
  tx: Queryable,
  appEnvs: { tenantId: string; appId: string; environment: string }[],
): Promise<void> {
  if (appEnvs.length === 0) return;
  await tx.query(
    `
INSERT INTO an_app_versions (tenant_id, app_id, environment, version)
SELECT t, a, e, 1 FROM unnest($1::uuid[], $2::uuid[], $3::text[]) AS x(t, a, e)
-- One order for every partition's transaction: two of them bumping the same apps wait, never deadlock.
 ORDER BY a, e
ON CONFLICT (app_id, environment) DO UPDATE SET version = an_app_versions.version + 1`,
    [appEnvs.map((x) => x.tenantId), appEnvs.map((x) => x.appId), appEnvs.map((x) => x.environment)],
  );
}

/** Forgets the app's stored funnel answers (a privacy erasure): the next read computes them anew. */
export async function dropAppAnswers(tx: Queryable, scope: Scope): Promise<void> {
  await tx.query('DELETE FROM an_funnel_results WHERE tenant_id = $1 AND app_id = $2', [scope.tenantId, scope.appId]);
}

export function createFunnelStore(db: Queryable) {
  return {
    async version(scope: Scope, env: Env): Promise<number> {
      const { rows } = await db.query<{ version: number }>(
        `SELECT version FROM an_app_versions WHERE tenant_id = $1 AND app_id = $2 AND environment = $3`,
        [scope.tenantId, scope.appId, env],
      );
      return rows[0]?.version ?? 0;
    },

    async get(scope: Scope, env: Env, funnel: string): Promise<StoredFunnel | null> {
      const { rows } = await db.query<StoredFunnel>(
        `SELECT def_hash, version, date::text AS date, users, computed_at FROM an_funnel_results
          WHERE tenant_id = $1 AND app_id = $2 AND environment = $3 AND funnel = $4`,
        [scope.tenantId, scope.appId, env, funnel],
      );
      return rows[0] ?? null;
    },

    /** Keeps the newest answer: one computed from an older version never replaces a newer one. */
    async save(scope: Scope, env: Env, funnel: string, r: Omit<StoredFunnel, 'computed_at'>): Promise<Date> {
      const { rows } = await db.query<{ computed_at: Date }>(
        `INSERT INTO an_funnel_results (tenant_id, app_id, environment, funnel, def_hash, version, date, users)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
         ON CONFLICT (app_id, environment, funnel) DO UPDATE
            SET def_hash = EXCLUDED.def_hash, version = EXCLUDED.version, date = EXCLUDED.date, users = EXCLUDED.users, computed_at = now()
          WHERE an_funnel_results.version <= EXCLUDED.version OR an_funnel_results.def_hash <> EXCLUDED.def_hash
         RETURNING computed_at`,
        [scope.tenantId, scope.appId, env, funnel, r.def_hash, r.version, r.date, r.users],
      );
      return rows[0]?.computed_at ?? new Date();
    },

    /**
     * App environments whose data moved past some stored answer (or that miss one of `count`
     * named funnels): the refresh's work list, oldest answers first.
     */
    async stale(count: number, limit: number): Promise<(Scope & { env: Env; version: number })[]> {
      const { rows } = await db.query(
        `SELECT v.tenant_id AS "tenantId", v.app_id AS "appId", v.environment AS env, v.version
           FROM an_app_versions v
           JOIN app_settings s ON s.tenant_id = v.tenant_id AND s.app_id = v.app_id
           LEFT JOIN LATERAL (SELECT count(*) AS n, min(r.version) AS lo, min(r.computed_at) AS at FROM an_funnel_results r
                               WHERE r.tenant_id = v.tenant_id AND r.app_id = v.app_id AND r.environment = v.environment) r ON true
          WHERE r.n < $1 OR r.lo < v.version
          ORDER BY r.at NULLS FIRST LIMIT $2`,
        [count, limit],
      );
      return rows;
    },
  };
}

export type FunnelStore = ReturnType<typeof createFunnelStore>;
