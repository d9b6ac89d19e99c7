import type { Queryable } from '../../db/pool.js';
import type { Scope } from '../../http/auth.js';

/** What the console shows of a set besides its visible items (those come from the SDK's read). */
export const OVERVIEW_LIMIT = 100;
export const LOCKED_LIMIT = 1000;

/** The console's reads of option sets: the app's sets, a set's archived items, locked values and syncs. */
export function createOptionSetReadModel(db: Queryable) {
  return {
    async sets(scope: Scope) {
      const { rows } = await db.query<{
        set_id: string;
        version: number;
        updated_at: Date;
        item_count: number;
        archived_count: number;
      }>(
        `SELECT s.set_id, s.version, s.updated_at,
                (SELECT count(*) FROM option_items i WHERE i.tenant_id = s.tenant_id AND i.app_id = s.app_id AND i.set_id = s.set_id
                    AND i.valid_to IS NULL AND NOT i.archived)::int AS item_count,
                (SELECT count(*) FROM option_items i WHERE i.tenant_id = s.tenant_id AND i.app_id = s.app_id AND i.set_id = s.set_id
                    AND i.valid_to IS NULL AND i.archived)::int AS archived_count
           FROM option_sets s WHERE s.tenant_id = $1 AND s.app_id = $2 ORDER BY s.set_id`,
        [scope.tenantId, scope.appId],
      );
      return rows.map((r) => ({ ...r, updated_at: r.updated_at.toISOString() }));
    },

    async overview(scope: Scope, setId: string) {
      const args = [scope.tenantId, scope.appId, setId];
      const [set, archived, locked, syncs] = await Promise.all([
        db.query<{ version: number }>(
          `SELECT version FROM option_sets WHERE tenant_id = $1 AND app_id = $2 AND set_id = $3`,
          args,
        ),
        db.query<{ id: string | null; value: string; label: string }>(
          `SELECT ext_id AS id, value, label FROM option_items
            WHERE tenant_id = $1 AND app_id = $2 AND set_id = $3 AND valid_to IS NULL AND archived
            ORDER BY sort_order, value LIMIT ${OVERVIEW_LIMIT}`,
          args,
        ),
        db.query<{ value: string }>(
          `SELECT value FROM option_value_locks WHERE tenant_id = $1 AND app_id = $2 AND set_id = $3 ORDER BY value LIMIT ${LOCKED_LIMIT}`,
          args,
        ),
        db.query<{ at: Date; description: string }>(
          `SELECT created_at AS at, description FROM activity
            WHERE tenant_id = $1 AND app_id = $2 AND entity_type = 'option_set' AND entity_id = $3
            ORDER BY created_at DESC, id DESC LIMIT ${OVERVIEW_LIMIT}`,
          args,
        ),
      ]);
      if (!set.rows[0]) return null;
      return {
        set_id: setId,
        version: set.rows[0].version,
        archived: archived.rows,
        locked_values: locked.rows.map((r) => r.value),
        syncs: syncs.rows.map((r) => ({ at: r.at.toISOString(), description: r.description })),
      };
    },
  };
}

export type OptionSetReadModel = ReturnType<typeof createOptionSetReadModel>;
