import { type Db, withTx } from '../../db/pool.js';
import type { Scope } from '../../types/domain.js';

/** The bounds of the app setting `retention_days` (null: keep for ever); the migration's CHECK says the same. */
export const RETENTION_MIN_DAYS = 30;
export const RETENTION_MAX_DAYS = 3650;
/** Events deleted per statement: a day's worth of a big app goes in short transactions, not one long one. */
const BATCH = 50_000;

/** An old partition is not emptied while another job reads or writes it longer than this: its rows go one by one. */
const PARTITION_LOCK_TIMEOUT = '5s';

/** Each app's events a partition emptied whole held. */
export type PartitionDrop = { partition: string; apps: (Scope & { events: number })[] };

/** SQL of the daily retention job (docs/privacy.md, "Retention"). */
export function createRetentionStore(db: Db) {
  return {
    /**
     * Event partitions (by event time, shared by every app) that ended before the shortest
     * retention and whose every row arrived before its own app's cutoff are emptied whole (one
     * TRUNCATE instead of a DELETE per row; the partition stays, so a late event of that month can
     * still land). Checked and emptied under the partition's exclusive lock, so no row arrives
     * between the check and the TRUNCATE.
     */
    async truncatePartitions(): Promise<PartitionDrop[]> {
      const { rows: parts } = await db.query<{ name: string }>(
        `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
          WHERE i.inhparent = 'events'::regclass
            AND (regexp_match(pg_get_expr(c.relpartbound, c.oid), 'TO \\(''([^'']+)''\\)'))[1]::timestamptz
                < now() - make_interval(days => $1)
          ORDER BY 1`,
        [RETENTION_MIN_DAYS],
      );
      const dropped: PartitionDrop[] = [];
      for (const { name } of parts) {
        const table = `"${name.replace(/"/g, '""')}"`;
        try {
          const apps = await withTx(db, async (tx) => {
            await tx.query(`SET LOCAL lock_timeout = '${PARTITION_LOCK_TIMEOUT}'`);
            await tx.query(`LOCK TABLE ${table} IN ACCESS EXCLUSIVE MODE`);
            const { rows } = await tx.query<{ tenant_id: string; app_id: string; n: string; expired: boolean }>(
              `SELECT e.tenant_id, e.app_id, count(*) AS n,
                      bool_and(s.retention_days IS NOT NULL
                               AND e.received_at < now() - make_interval(days => s.retention_days)) AS expired
                 FROM ${table} e LEFT JOIN app_settings s ON s.app_id = e.app_id GROUP BY 1, 2`,
            );
            if (rows.length === 0 || !rows.every((r) => r.expired)) return null;
            await tx.query(`TRUNCATE ${table}`);
            return rows.map((r) => ({ tenantId: r.tenant_id, appId: r.app_id, events: Number(r.n) }));
          });
          if (apps) dropped.push({ partition: name, apps });
        } catch (e) {
          // Busy (lock timeout): its old rows go with the per-app deletes below.
          if ((e as { code?: string }).code !== '55P03') throw e;
        }
      }
      return dropped;
    },

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

/** The daily job: old partitions emptied whole where every row is past its app's cutoff, then each app's other old events in batches, then its old exports, then the files. */
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
    const emptied = new Map<string, number>();
    for (const p of await store.truncatePartitions())
      for (const a of p.apps) emptied.set(a.appId, (emptied.get(a.appId) ?? 0) + a.events);
    for (const app of await store.apps()) {
      let events = emptied.get(app.appId) ?? 0;
      for (let n = BATCH; n === BATCH; events += n) n = await store.dropEvents(app, app.days);
      const exports = await store.expireExports(app, app.days);
      if (events + exports > 0) onApp?.(app, { events, exports });
    }
    await purgeExportFiles();
  };
}
