import type { Queryable, Tx } from '../../db/pool.js';
import type { Scope } from '../../types/domain.js';

export interface ActivityEntry {
  entityType: string;
  entityId?: string;
  action: string;
  description: string;
  actorUserId?: string | null;
}

/** The app's activity feed; every capability records its notable changes here. */
export function createActivityStore(db: Queryable) {
  return {
    async record(scope: Scope, e: ActivityEntry, tx?: Tx): Promise<void> {
      await (tx ?? db).query(
        `INSERT INTO activity (tenant_id, app_id, entity_type, entity_id, action, description, actor_user_id)
         VALUES ($1, $2, $3, $4, $5, $6, $7)`,
        [
          scope.tenantId,
          scope.appId,
          e.entityType,
          e.entityId ?? null,
          e.action,
          e.description.slice(0, 500),
          e.actorUserId ?? null,
        ],
      );
    },
  };
}

export type ActivityStore = ReturnType<typeof createActivityStore>;
