import type { Db, Queryable } from '../../db/pool.js';
import { withTx } from '../../db/pool.js';
import { summarizeNewEvents } from '../ingest/store.js';
import type { FoldResult } from './fold/round.js';
import { ADD_TO_REVENUE_CELL, revenueDelta, ROLLUP_TABLES } from './fold/sql.js';
import type { FoldWorkers } from './fold/workers.js';
import type { FoldProfile } from './fold/bucket.js';
import { DEFINITIONS_VERSION, monthlySql, PERIOD_PATTERN, usdRateSql } from './definitions.js';

/**
 * Rollup writes. The fold is platform maintenance across apps (watermarks over events.seq), but
 * every statement keys its rows by tenant_id + app_id + environment.
 */

/**
 * The fold runs as device partitions in parallel, one thread, transaction and connection each
 * (fold/workers.ts); an_rollup_state has one row (watermark) per partition (migration 012). A
 * device's partition is the stable hash PostgreSQL's own hash partitioning uses, modulo the
 * partition count (fold/sql.ts partOf).
 *
 * `parts`: the configured partition count (ANALYTICS_FOLD_PARTITIONS); `parallelMin`: rounds of
 * fewer seqs fold all partitions in one transaction (ANALYTICS_FOLD_PARALLEL_MIN); `profile`
 * receives the time of each step of a fold (bench:analytics-fold-profile).
 */
export function createRollupStore(
  db: Db,
  {
    workers,
    parts,
    parallelMin,
    profile,
  }: { workers: FoldWorkers; parts: number; parallelMin: number; profile?: FoldProfile },
) {
  /**
   * Every app gets its rollup timezone recorded the first time the fold meets it. Returns the
   * timezone most apps use: the fold's transactions take it as theirs (fold/sql.ts eventsQuery).
   */
  async function registerApps(q: Queryable): Promise<string> {
    await q.query(
      `
INSERT INTO an_app_state (app_id, tenant_id, timezone, defs)
SELECT a.id, a.tenant_id, coalesce(s.timezone, 'UTC'), $1 FROM apps a LEFT JOIN app_settings s ON s.app_id = a.id
ON CONFLICT (app_id) DO NOTHING`,
      [DEFINITIONS_VERSION],
    );
    const { rows } = await q.query<{ zone: string }>(
      `SELECT timezone AS zone FROM an_app_state GROUP BY 1 ORDER BY count(*) DESC, 1 LIMIT 1`,
    );
    return rows[0]?.zone ?? 'UTC';
  }

  /**
   * The partitions' watermarks (index = partition). When the configured count differs from the
   * stored one and every partition has reached the same seq, the partitions are re-cut to the new
   * count at that seq: no device then has unfolded events anywhere. Until then the stored count
   * stays in use (the next round brings the watermarks level).
   */
  async function watermarks(): Promise<number[]> {
    const read = async (q: Queryable, lock = '') =>
      (await q.query<{ watermark: number }>(`SELECT watermark FROM an_rollup_state ORDER BY id ${lock}`)).rows.map(
        (r) => Number(r.watermark),
      );
    const marks = await read(db);
    if (marks.length === parts || marks.some((w) => w !== marks[0])) return marks;
    return withTx(db, async (tx) => {
      const locked = await read(tx, 'FOR UPDATE');
      if (locked.length === parts || locked.some((w) => w !== locked[0])) return locked;
      await tx.query(`DELETE FROM an_rollup_state WHERE id >= $1`, [parts]);
      await tx.query(
        `
INSERT INTO an_rollup_state (id, watermark, folded_at) SELECT g, $2, now() FROM generate_series(0, $1::int - 1) g
ON CONFLICT (id) DO NOTHING`,
        [parts, locked[0]],
      );
      return Array.from({ length: parts }, () => locked[0]);
    });
  }

  return {
    /** The fold position: the lowest partition watermark (every event up to it is folded) and the oldest fold time. */
    async state(): Promise<{ watermark: number; folded_at: Date | null; events_folded: number }> {
      const { rows } = await db.query(`
SELECT min(watermark)::bigint AS watermark, min(folded_at) AS folded_at, sum(events_folded)::bigint AS events_folded FROM an_rollup_state`);
      return rows[0];
    },

    /** Highest seq handed out so far and the sessions currently holding a write lock on events. */
    async seqHorizon(): Promise<{ last: number; writers: { pid: number; xact_start: string }[] }> {
      const { rows } = await db.query<{ last: number | null }>(
        `SELECT coalesce(pg_sequence_last_value(pg_get_serial_sequence('events', 'seq')), 0) AS last`,
      );
      const w = await db.query<{ pid: number; xact_start: string }>(`
SELECT a.pid, a.xact_start::text AS xact_start FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
 WHERE l.locktype = 'relation' AND l.relation = 'events'::regclass AND l.mode = 'RowExclusiveLock'
   AND l.granted AND l.pid <> pg_backend_pid() AND a.xact_start IS NOT NULL`);
      return { last: Number(rows[0].last), writers: w.rows };
    },

    /** Which of these writer transactions are still open. */
    async stillOpen(writers: { pid: number; xact_start: string }[]): Promise<number> {
      if (writers.length === 0) return 0;
      const { rows } = await db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_stat_activity a
           JOIN unnest($1::int[], $2::text[]) AS w(pid, xs) ON a.pid = w.pid AND a.xact_start::text = w.xs`,
        [writers.map((w) => w.pid), writers.map((w) => w.xact_start)],
      );
      return rows[0].n;
    },

    /**
     * One round: every partition folds its devices' events in seq (its watermark, min(upper,
     * lowest watermark + chunk)], in parallel. Returns the events folded and the lowest watermark.
     */
    async foldChunk(upper: number, chunk: number): Promise<FoldResult> {
      const zone = await registerApps(db);
      // Each partition's read of a chunk would otherwise take in every range written since the
      // last vacuum (whole monthly partitions after a bulk load). Cheap when nothing is new.
      const t = performance.now();
      await summarizeNewEvents(db, parts);
      profile?.('summarize the events BRIN', performance.now() - t);
      const marks = await watermarks();
      const lo = Math.min(...marks);
      if (lo >= upper) return { folded: 0, watermark: lo };
      const to = Math.min(upper, lo + chunk);
      if (to - lo < parallelMin && marks.every((w) => w === lo)) {
        const r = await workers.together(to, zone, profile);
        if (r) return r;
      }
      const folded = await workers.round(marks, to, zone, profile);
      return { folded, watermark: Math.min(...(await watermarks())) };
    },

    /**
     * Fresh statistics for the rollup tables. The fold's joins against them pick index look-ups
     * only when the planner knows they are big; autovacuum's analyze lags a long catch-up run.
     * Devices and sessions are only ever joined by their key: their row counts are what matters,
     * and a small sample gives them (the default sample took 1-2 s per table at 10M events).
     */
    async analyze(): Promise<void> {
      await withTx(db, async (tx) => {
        await tx.query(`SET LOCAL default_statistics_target = 10`);
        await tx.query(`ANALYZE an_devices, an_sessions`);
      });
      await db.query(`ANALYZE ${ROLLUP_TABLES.filter((t) => t !== 'an_devices' && t !== 'an_sessions').join(', ')}`);
    },

    /** Touches the freshness stamp when there was nothing to fold. */
    async markIdle(): Promise<void> {
      await db.query(`UPDATE an_rollup_state SET folded_at = now()`);
    },

    /**
     * Apps whose settings timezone, or whose analytics definitions (definitions.ts
     * DEFINITIONS_VERSION), differ from those their rollups were built with.
     */
    async appsNeedingRebuild(): Promise<{ app_id: string; timezone: string }[]> {
      // The state table is unlogged: after a crash it is empty along with the rollups (refold from 0).
      await db.query(
        `
INSERT INTO an_rollup_state (id) SELECT generate_series(0, $1::int - 1) WHERE NOT EXISTS (SELECT 1 FROM an_rollup_state)
ON CONFLICT (id) DO NOTHING`,
        [parts],
      );
      await registerApps(db);
      const { rows } = await db.query(
        `
SELECT st.app_id, coalesce(s.timezone, st.timezone) AS timezone FROM an_app_state st LEFT JOIN app_settings s ON s.app_id = st.app_id
 WHERE s.timezone <> st.timezone OR st.defs IS DISTINCT FROM $1`,
        [DEFINITIONS_VERSION],
      );
      return rows;
    },

    /** Rebuilds one app's rollups with `timezone` and the current definitions (fold/round.ts rebuildApp). */
    rebuildApp(appId: string, timezone: string, chunk: number): Promise<number> {
      return workers.rebuild(appId, timezone, chunk, profile);
    },

    /** Purchases stored before their currency had a rate get converted once one exists; their amounts enter the revenue histogram. */
    async convertPending(): Promise<void> {
      // One statement: the amounts and their cells change together. Cells are taken in key order,
      // as the fold's are, so a fold running in another process waits rather than deadlocks.
      await db.query(`
WITH y AS (
UPDATE an_purchases p SET amount_usd = p.price * r.rate, mrr_usd = ${monthlySql('r', 'p.price * r.rate')}
  FROM (SELECT a.app_id, a.environment, a.event_id, a.kind, ${usdRateSql('a.currency', 'a.day')} AS rate,
               m[1]::int AS period_n, m[2] AS period_unit
          FROM an_purchases a LEFT JOIN LATERAL regexp_match(a.period, '${PERIOD_PATTERN}') m ON true WHERE a.amount_usd IS NULL) r
 WHERE r.rate IS NOT NULL AND p.app_id = r.app_id AND p.environment = r.environment AND p.event_id = r.event_id
   AND p.amount_usd IS NULL
RETURNING p.tenant_id, p.app_id, p.environment, p.day, p.platform, p.country, p.kind, p.period_end, p.amount_usd, p.mrr_usd)
${revenueDelta('+', 'y', { counted: false, into: 'an_rev_hist' })}
 ORDER BY 2, 3, 4, 5, 6, 7, 8
${ADD_TO_REVENUE_CELL}`);
    },
  };
}

export type RollupStore = ReturnType<typeof createRollupStore>;
