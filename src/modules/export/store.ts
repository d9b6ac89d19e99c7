import type { Queryable, Tx } from '../../db/pool.js';
import type { Scope } from '../../types/domain.js';
import type { Environment } from '../../types/domain.js';

export type ExportStatus = 'processing' | 'completed' | 'failed';

export interface ExportRow {
  id: string;
  tenant_id: string;
  app_id: string;
  environment: Environment;
  status: ExportStatus;
  start_date: Date;
  end_date: Date;
  event_names: string[];
  callback_url: string | null;
  attempts: number;
  storage_key: string | null;
  event_count: number | null;
  file_size_bytes: number | null;
  failure_reason: string | null;
  callback_queued_at: Date | null;
  created_at: Date;
  started_at: Date | null;
  completed_at: Date | null;
  expires_at: Date | null;
  file_deleted_at: Date | null;
}

export interface NewExport {
  environment: Environment;
  start: Date;
  end: Date;
  eventNames: string[];
  callbackUrl: string | null;
  keyId: string;
}

export function createExportStore(db: Queryable) {
  return {
    async insert(scope: Scope, e: NewExport, tx?: Tx): Promise<ExportRow> {
      const { rows } = await (tx ?? db).query<ExportRow>(
        `INSERT INTO exports (tenant_id, app_id, environment, start_date, end_date, event_names, callback_url, created_by_key)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING *`,
        [scope.tenantId, scope.appId, e.environment, e.start, e.end, e.eventNames, e.callbackUrl, e.keyId],
      );
      return rows[0];
    },

    async get(scope: Scope, environment: Environment, id: string, tx?: Tx): Promise<ExportRow | null> {
      const { rows } = await (tx ?? db).query<ExportRow>(
        `SELECT * FROM exports WHERE tenant_id = $1 AND app_id = $2 AND environment = $3 AND id = $4`,
        [scope.tenantId, scope.appId, environment, id],
      );
      return rows[0] ?? null;
    },

    /** Starts a run: takes the next attempt number (the run's fencing token) if still processing. */
    async claim(scope: Scope, id: string): Promise<ExportRow | null> {
      const { rows } = await db.query<ExportRow>(
        `UPDATE exports SET attempts = attempts + 1, started_at = now()
          WHERE tenant_id = $1 AND app_id = $2 AND id = $3 AND status = 'processing' RETURNING *`,
        [scope.tenantId, scope.appId, id],
      );
      return rows[0] ?? null;
    },

    /** Finishes a run; false when a later run holds the export (this run's file is then discarded). */
    async complete(
      scope: Scope,
      id: string,
      attempt: number,
      r: { storageKey: string; eventCount: number; sizeBytes: number; ttlHours: number },
      tx?: Tx,
    ): Promise<ExportRow | null> {
      const { rows } = await (tx ?? db).query<ExportRow>(
        `UPDATE exports SET status = 'completed', storage_key = $5, event_count = $6, file_size_bytes = $7,
                completed_at = now(), expires_at = now() + make_interval(hours => $8), failure_reason = NULL
          WHERE tenant_id = $1 AND app_id = $2 AND id = $3 AND attempts = $4 AND status = 'processing' RETURNING *`,
        [scope.tenantId, scope.appId, id, attempt, r.storageKey, r.eventCount, r.sizeBytes, r.ttlHours],
      );
      return rows[0] ?? null;
    },

    async markCallbackQueued(scope: Scope, id: string): Promise<void> {
      await db.query(`UPDATE exports SET callback_queued_at = now() WHERE tenant_id = $1 AND app_id = $2 AND id = $3`, [
        scope.tenantId,
        scope.appId,
        id,
      ]);
    },

    /** Any environment: used by the job, which acts for the export whatever key created it. */
    async getById(scope: Scope, id: string): Promise<ExportRow | null> {
      const { rows } = await db.query<ExportRow>(
        `SELECT * FROM exports WHERE tenant_id = $1 AND app_id = $2 AND id = $3`,
        [scope.tenantId, scope.appId, id],
      );
      return rows[0] ?? null;
    },

    async fail(scope: Scope, id: string, attempt: number, reason: string, tx?: Tx): Promise<ExportRow | null> {
      const { rows } = await (tx ?? db).query<ExportRow>(
        `UPDATE exports SET status = 'failed', failure_reason = $5, completed_at = now()
          WHERE tenant_id = $1 AND app_id = $2 AND id = $3 AND attempts = $4 AND status = 'processing' RETURNING *`,
        [scope.tenantId, scope.appId, id, attempt, reason.slice(0, 500)],
      );
      return rows[0] ?? null;
    },
  };
}

export type ExportStore = ReturnType<typeof createExportStore>;

/** Platform maintenance across apps (each row keeps its scope): files past their expiry. */
export async function expiredFiles(
  db: Queryable,
  limit: number,
): Promise<Pick<ExportRow, 'id' | 'tenant_id' | 'app_id' | 'storage_key'>[]> {
  const { rows } = await db.query(
    `SELECT id, tenant_id, app_id, storage_key FROM exports
      WHERE status = 'completed' AND file_deleted_at IS NULL AND expires_at <= now()
      ORDER BY expires_at LIMIT $1`,
    [limit],
  );
  return rows;
}

export async function markFileDeleted(
  db: Queryable,
  row: { id: string; tenant_id: string; app_id: string },
): Promise<void> {
  await db.query(`UPDATE exports SET file_deleted_at = now() WHERE tenant_id = $1 AND app_id = $2 AND id = $3`, [
    row.tenant_id,
    row.app_id,
    row.id,
  ]);
}
