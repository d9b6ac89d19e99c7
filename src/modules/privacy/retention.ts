import type { Queryable } from '../../db/pool.js';
import type { Scope } from '../../types/domain.js';

/** The bounds of the app setting `retention_days` (null: keep for ever); the migration's CHECK says the same. */
export const RETENTION_MIN_DAYS = 30;
export const RETENTION_MAX_DAYS = 3650;
/** Events deleted per statement: a day's worth of a big app goes in short transactions, not one long one. */
const BATCH = 50_000;

/** SQL of the daily retention job (docs/privacy.md, "Retention"). */
export function createRetentionStore(db: Queryable) {
  return {
    /** Every app with a retention (the job runs across tenants, as a platform job). */
    async apps(): Promise<(Scope & { days: number })[]> {
      const { rows } = await db.query<{ tenant_id: string; app_id: string; days: number }>(
        'SELECT tenant_id, app_id, retention_days AS days FROM app_settings WHERE retention_days IS NOT NULL',
      );
      return rows.map((r) => ({ tenantId: r.tenant_id, appId: r.app_id, days: r.days }));
    },

    /** Deletes up to BATCH of the app's events received before the cutoff; answers how many went. */
    async dropEvents(scope: Scope, days: number): Promise<number> {
      const { rowCount } = await db.query(
        `DELETE FROM events e USING (
           SELECT tableoid, ctid FROM events
            WHERE tenant_id = $1 AND app_id = $2 AND received_at < now() - make_interval(days => $3)
            LIMIT $4) old
          WHERE e.tableoid = old.tableoid AND e.ctid = old.ctid`,
        [scope.tenantId, scope.appId, days, BATCH],
      );
      return rowCount ?? 0;
    },

    /** Completed exports older than the retention expire now (their files go with the export clean-up). */
    async expireExports(scope: Scope, days: number): Promise<number> {
      const { rowCount } = await db.query(
        `UPDATE exports SET expires_at = now() - interval '1 millisecond'
          WHERE tenant_id = $1 AND app_id = $2 AND status = 'completed' AND expires_at > now()
            AND completed_at < now() - make_interval(days => $3)`,
        [scope.tenantId, scope.appId, days],
      );
      return rowCount ?? 0;
    },
  };
}

/** The daily job: each app's old events in batches, then its old exports, then the files. */
export function createRetentionJob({
  store,
  purgeExportFiles,
  onApp,
}: {
  store: ReturnType<typeof createRetentionStore>;
  purgeExportFiles(): Promise<unknown>;
  onApp?(scope: Scope, dropped: { events: number; exports: number }): void;
}) {
  return async (): Promise<void> => {
    for (const app of await store.apps()) {
      let events = 0;
      for (let n = BATCH; n === BATCH; events += n) n = await store.dropEvents(app, app.days);
      const exports = await store.expireExports(app, app.days);
      if (events + exports > 0) onApp?.(app, { events, exports });
    }
    await purgeExportFiles();
  };
}
