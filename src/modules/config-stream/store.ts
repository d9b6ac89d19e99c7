import type { Queryable, Tx } from '../../db/pool.js';
import type { Scope } from '../../types/domain.js';
import type { Environment } from '../../types/domain.js';

/** The NOTIFY channel; the payload is the new seq (a wake-up: listeners re-read the table). */
export const CHANNEL = 'config_changes';

/** What changed, as recorded by the writer (bundles, option sets). */
export type ConfigChange =
  | { kind: 'bundle_generated' | 'bundle_rolled_back'; bundleVersion: number }
  | { kind: 'option_set_synced'; setId: string; setVersion: number };

/** Records a change in the writer's transaction: it commits (and is announced) with the write. */
export type ChangeRecorder = (scope: Scope, change: ConfigChange, tx: Tx) => Promise<void>;

export interface ChangeRow {
  seq: number;
  tenant_id: string;
  app_id: string;
  /** null: every environment of the app. */
  environment: Environment | null;
  kind: ConfigChange['kind'];
  bundle_version: number | null;
  option_set_id: string | null;
  option_set_version: number | null;
}

/** The app's current versions, for a stream's first event and for a resync. */
export interface Snapshot {
  bundle_version: number | null;
  option_sets: Record<string, number>;
}

const COLS = `seq, tenant_id, app_id, environment, kind, bundle_version, option_set_id, option_set_version`;
/** Option sets listed in a snapshot; an app with more gets the most recently synced ones. */
export const SNAPSHOT_MAX_SETS = 1000;

export function createConfigChangeStore(db: Queryable) {
  return {
    /**
     * Takes the next seq under the head row's lock (held until commit, so seqs commit in order;
     * keep this the transaction's last statement), inserts the change and queues the NOTIFY,
     * which PostgreSQL delivers only if and when the transaction commits.
     */
    async record(scope: Scope, change: ConfigChange, tx: Tx): Promise<void> {
      const bundle = change.kind === 'option_set_synced' ? null : change.bundleVersion;
      const set = change.kind === 'option_set_synced' ? change : null;
      await tx.query(
        `WITH s AS (UPDATE config_change_head SET last_seq = last_seq + 1 RETURNING last_seq),
         ins AS (
           INSERT INTO config_changes (seq, tenant_id, app_id, kind, bundle_version, option_set_id, option_set_version)
           SELECT last_seq, $1, $2, $3, $4, $5, $6 FROM s RETURNING seq)
         SELECT pg_notify('${CHANNEL}', seq::text) FROM ins`,
        [scope.tenantId, scope.appId, change.kind, bundle, set?.setId ?? null, set?.setVersion ?? null],
      );
    },

    /** The app's changes after `afterSeq`, oldest first. */
    async since(scope: Scope, afterSeq: number, limit: number): Promise<ChangeRow[]> {
      const r = await db.query<ChangeRow>(
        `SELECT ${COLS} FROM config_changes WHERE app_id = $2 AND seq > $3 AND tenant_id = $1 ORDER BY seq LIMIT $4`,
        [scope.tenantId, scope.appId, afterSeq, limit],
      );
      return r.rows;
    },

    /** Every app's changes after `afterSeq` (the instance's listener fans them out). */
    async after(afterSeq: number, limit: number): Promise<ChangeRow[]> {
      const r = await db.query<ChangeRow>(`SELECT ${COLS} FROM config_changes WHERE seq > $1 ORDER BY seq LIMIT $2`, [
        afterSeq,
        limit,
      ]);
      return r.rows;
    },

    /** The last seq given out and the highest one retention deleted. */
    async head(): Promise<{ lastSeq: number; prunedThrough: number }> {
      const r = await db.query(`SELECT last_seq, pruned_through FROM config_change_head`);
      return { lastSeq: r.rows[0].last_seq, prunedThrough: r.rows[0].pruned_through };
    },

    /**
     * The app's current bundle version and option-set versions. Read-only look at the bundles'
     * and option sets' own tables: one statement, one snapshot.
     */
    async snapshot(scope: Scope): Promise<Snapshot> {
      const r = await db.query(
        `SELECT (SELECT nullif(last_version, 0) FROM bundle_heads WHERE app_id = $2 AND tenant_id = $1) AS bundle_version,
                (SELECT coalesce(jsonb_object_agg(set_id, version), '{}') FROM (
                   SELECT set_id, version FROM option_sets WHERE app_id = $2 AND tenant_id = $1
                   ORDER BY updated_at DESC LIMIT $3) s) AS option_sets`,
        [scope.tenantId, scope.appId, SNAPSHOT_MAX_SETS],
      );
      return { bundle_version: r.rows[0].bundle_version ?? null, option_sets: r.rows[0].option_sets };
    },

    /** Deletes changes older than the retention; remembers how far, so older ids get a resync. */
    async prune(retentionHours: number): Promise<number> {
      const r = await db.query(
        `WITH d AS (DELETE FROM config_changes WHERE created_at < now() - make_interval(hours => $1) RETURNING seq)
         UPDATE config_change_head SET pruned_through = greatest(pruned_through, (SELECT max(seq) FROM d))
         WHERE EXISTS (SELECT 1 FROM d) RETURNING (SELECT count(*) FROM d)::int AS n`,
        [retentionHours],
      );
      return r.rows[0]?.n ?? 0;
    },
  };
}

export type ConfigChangeStore = ReturnType<typeof createConfigChangeStore>;
