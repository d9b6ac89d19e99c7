import type { Db, Queryable } from '../../db/pool.js';
import { withTx } from '../../db/pool.js';
import { summarizeNewEvents } from '../ingest/store.js';
import { foldEvents } from './fold.js';
import { revenueDelta } from './fold-purchases.js';
import { ADD_TO_REVENUE_CELL } from './fold-sql.js';

/**
 * Rollup writes. The fold is platform maintenance across apps (watermarks over events.seq), but
 * every statement keys its rows by tenant_id + app_id + environment.
 */

/**
 * The fold runs as device partitions in parallel, one transaction and connection each (migration
 * 012); an_rollup_state has one row (watermark) per partition. A device's partition is the stable
 * hash PostgreSQL's own hash partitioning uses, modulo the partition count.
 */
const partOf = (anonId: string, parts: number) => `abs(uuid_hash_extended(${anonId}, 0) % ${parts})`;

/**
 * A batch session found stored only on insert (stageSessions): a unique violation. One reported by
 * devices of two partitions is inserted by both: the second waits for the first, then fails (or
 * deadlocks when both wait); one reported by two devices of one batch is inserted twice. A retry
 * after the other partitions committed, looking every session up and grouping per session id,
 * finds it and widens it.
 */
const isConflict = (e: unknown) => ['23505', '40P01'].includes((e as { code?: string }).code ?? '');

const ROLLUP_TABLES = [
  'an_devices', 'an_device_days', 'an_active_hist', 'an_sessions', 'an_session_hist', 'an_purchases', 'an_steps', 'an_cohort_hist', 'an_onb_hist', 'an_flag_hist',
  'an_rev_hist',
];

export interface FoldResult {
  folded: number;
  watermark: number;
}

/**
 * The first read of an event after a checkpoint sets its page's hint bits, and with data checksums
 * (PostgreSQL 18's default) that writes a full-page image to the WAL: after a backlog, most of the
 * pages the fold reads. Compressing those images (the embedded server's wal_compression, chosen for
 * ingestion) took twice the time of writing them as they are (measured: a 500,000-event chunk read
 * 7.3 s vs 3.4 s, against 0.6 s for pages already hinted). The rollups are unlogged, so these images
 * are nearly all the WAL a fold writes. Only a superuser may change the setting; on another role
 * the statement sets nothing and the server's own applies.
 */
const WAL_UNCOMPRESSED = `SELECT set_config('wal_compression', 'off', true) WHERE current_setting('is_superuser') = 'on'`;

/** foldPart's "every partition" value. */
const ALL = -1;

/**
 * `parts`: the configured partition count (ANALYTICS_FOLD_PARTITIONS); `parallelMin`: rounds of
 * fewer seqs fold all partitions in one transaction (ANALYTICS_FOLD_PARALLEL_MIN); `workMemMb`: the
 * fold transactions' work_mem (ANALYTICS_FOLD_WORK_MEM_MB).
 */
export function createRollupStore(db: Db, { parts, parallelMin, workMemMb }: { parts: number; parallelMin: number; workMemMb: number }) {
  /**
   * The fold's sorts and hash tables over a chunk fit in memory instead of spilling to disk. Hash
   * tables may take 4 x work_mem: the planner sizes an array_agg group at 8 kB (its real size is
   * tens of bytes) and spilled the fold's hash aggregates from about 30,000 groups on.
   */
  const memory = async (tx: Queryable) => {
    await tx.query(`SELECT set_config('work_mem', $1, true), set_config('hash_mem_multiplier', '4', true)`, [`${Math.trunc(workMemMb)}MB`]);
  };

  /**
   * Every app gets its rollup timezone recorded the first time the fold meets it. Returns the
   * timezone most apps use: the fold's transactions take it as theirs (stageSql).
   */
  async function registerApps(q: Queryable): Promise<string> {
    await q.query(`
INSERT INTO an_app_state (app_id, tenant_id, timezone)
SELECT a.id, a.tenant_id, coalesce(s.timezone, 'UTC') FROM apps a LEFT JOIN app_settings s ON s.app_id = a.id
ON CONFLICT (app_id) DO NOTHING`);
    const { rows } = await q.query<{ zone: string }>(`SELECT timezone AS zone FROM an_app_state GROUP BY 1 ORDER BY count(*) DESC, 1 LIMIT 1`);
    return rows[0]?.zone ?? 'UTC';
  }

  /**
   * Folds partition `part` of `n` (or, with `ALL`, every partition, provided they share one
   * watermark): its events in seq (its watermark, to], in one transaction. Null when `ALL` finds the
   * watermarks apart.
   */
  async function foldPart(part: number, n: number, to: number, zone: string, lookUpAll = false): Promise<FoldResult | null> {
    return withTx(db, async (tx) => {
      const { rows } = await tx.query<{ watermark: number }>(
        `SELECT watermark FROM an_rollup_state WHERE id = $1 OR $1 = ${ALL} ORDER BY id FOR UPDATE`, [part]);
      const from = Number(rows[0].watermark);
      if (rows.some((r) => Number(r.watermark) !== from)) return null;
      if (from >= to) return { folded: 0, watermark: from };
      // Rollups and watermark commit together; losing the tail of them in a crash only means refolding it.
      await tx.query(`SET LOCAL synchronous_commit = off`);
      await memory(tx);
      // The partitions already keep every core busy: parallel workers for the staging read (the
      // partition filter makes the planner expect few rows) only competed with them.
      await tx.query(`SET LOCAL max_parallel_workers_per_gather = 0`);
      await tx.query(WAL_UNCOMPRESSED);
      // Each partition reads the range itself: a shared staging table read once measured slower
      // (its write is serial; the two reads run in parallel).
      const mine = part === ALL ? '' : ` AND ${partOf('e.anon_id', n)} = ${part}`;
      const folded = await foldEvents(tx, { where: `e.seq > ${from} AND e.seq <= ${to}${mine}`, zone }, { lookUpAll, exact: lookUpAll });
      await tx.query(`
UPDATE an_rollup_state SET watermark = $1, folded_at = now(), events_folded = events_folded + CASE WHEN id = greatest($3, 0) THEN $2 ELSE 0 END
 WHERE id = $3 OR $3 = ${ALL}`, [to, folded, part]);
      return { folded, watermark: to };
    });
  }

  /**
   * The partitions' watermarks (index = partition). When the configured count differs from the
   * stored one and every partition has reached the same seq, the partitions are re-cut to the new
   * count at that seq: no device then has unfolded events anywhere. Until then the stored count
   * stays in use (the next round brings the watermarks level).
   */
  async function watermarks(): Promise<number[]> {
    const read = async (q: Queryable, lock = '') =>
      (await q.query<{ watermark: number }>(`SELECT watermark FROM an_rollup_state ORDER BY id ${lock}`)).rows.map((r) => Number(r.watermark));
    const marks = await read(db);
    if (marks.length === parts || marks.some((w) => w !== marks[0])) return marks;
    return withTx(db, async (tx) => {
      const locked = await read(tx, 'FOR UPDATE');
      if (locked.length === parts || locked.some((w) => w !== locked[0])) return locked;
      await tx.query(`DELETE FROM an_rollup_state WHERE id >= $1`, [parts]);
      await tx.query(`
INSERT INTO an_rollup_state (id, watermark, folded_at) SELECT g, $2, now() FROM generate_series(0, $1::int - 1) g
ON CONFLICT (id) DO NOTHING`, [parts, locked[0]]);
      return Array.from({ length: parts }, () => locked[0]);
    });
  }

  /** Runs the `n` partitions' folds up to `to` in parallel. */
  async function foldParts(n: number, to: number, zone: string): Promise<FoldResult> {
    const all = Array.from({ length: n }, (_, p) => p);
    const settled = await Promise.allSettled(all.map((p) => foldPart(p, n, to, zone)));
    const results: FoldResult[] = [];
    for (const [p, r] of settled.entries()) {
      if (r.status === 'fulfilled') results.push(r.value!);
      else if (isConflict(r.reason)) results.push((await foldPart(p, n, to, zone, true))!);
      else throw r.reason;
    }
    return {
      folded: results.reduce((n, r) => n + r.folded, 0),
      watermark: Math.min(...results.map((r) => r.watermark)),
    };
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
      const { rows } = await db.query<{ last: number | null }>(`SELECT coalesce(pg_sequence_last_value(pg_get_serial_sequence('events', 'seq')), 0) AS last`);
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
      await summarizeNewEvents(db, parts);
      const marks = await watermarks();
      const lo = Math.min(...marks);
      if (lo >= upper) return { folded: 0, watermark: lo };
      const to = Math.min(upper, lo + chunk);
      // A small round (the steady state) costs each partition its fixed per-statement overhead and
      // a read of every event of the round: one transaction folds it for all partitions.
      if (to - lo < parallelMin && marks.every((w) => w === lo)) {
        const r = await foldPart(ALL, marks.length, to, zone).catch((e) => (isConflict(e) ? foldPart(ALL, marks.length, to, zone, true) : Promise.reject(e)));
        if (r) return r;
      }
      return foldParts(marks.length, to, zone);
    },

    /**
     * Fresh statistics for the rollup tables. The fold's joins against them pick index look-ups
     * only when the planner knows they are big; autovacuum's analyze lags a long catch-up run.
     */
    async analyze(): Promise<void> {
      await db.query(`ANALYZE ${ROLLUP_TABLES.join(', ')}`);
    },

    /** Touches the freshness stamp when there was nothing to fold. */
    async markIdle(): Promise<void> {
      await db.query(`UPDATE an_rollup_state SET folded_at = now()`);
    },

    /** Apps whose settings timezone differs from the one their rollups were built with. */
    async appsNeedingRebuild(): Promise<{ app_id: string; timezone: string }[]> {
      // The state table is unlogged: after a crash it is empty along with the rollups (refold from 0).
      await db.query(`
INSERT INTO an_rollup_state (id) SELECT generate_series(0, $1::int - 1) WHERE NOT EXISTS (SELECT 1 FROM an_rollup_state)
ON CONFLICT (id) DO NOTHING`, [parts]);
      await registerApps(db);
      const { rows } = await db.query(`
SELECT st.app_id, s.timezone FROM an_app_state st JOIN app_settings s ON s.app_id = st.app_id
 WHERE s.timezone <> st.timezone`);
      return rows;
    },

    /**
     * Rebuilds one app's rollups from its raw events up to each partition's watermark, in one
     * transaction (holding every partition's state row): readers keep the old numbers until the
     * new ones commit.
     */
    async rebuildApp(appId: string, timezone: string): Promise<number> {
      return withTx(db, async (tx) => {
        const { rows } = await tx.query<{ id: number; watermark: number }>(`SELECT id, watermark FROM an_rollup_state ORDER BY id FOR UPDATE`);
        const wm = `CASE ${partOf('e.anon_id', rows.length)} ${rows.map((r) => `WHEN ${Number(r.id)} THEN ${Number(r.watermark)}`).join(' ')} END`;
        await memory(tx);
        await tx.query(WAL_UNCOMPRESSED);
        await tx.query(`UPDATE an_app_state SET timezone = $2, rebuilt_at = now() WHERE app_id = $1`, [appId, timezone]);
        for (const t of ROLLUP_TABLES) await tx.query(`DELETE FROM ${t} WHERE app_id = $1`, [appId]);
        // The app's rows were just deleted: every session is new (no look-ups; no retry either, so grouped exactly).
        const where = `e.app_id = '${appId.replace(/[^0-9a-f-]/gi, '')}' AND e.seq <= ${wm}`;
        return foldEvents(tx, { where, zone: timezone }, { lookUpAll: false, exact: true });
      });
    },

    /** Purchases stored before their currency had a rate get converted once one exists; their amounts enter the revenue histogram. */
    async convertPending(): Promise<void> {
      // One statement: the amounts and their cells change together. Cells are taken in key order,
      // as the fold's are, so a fold running in another process waits rather than deadlocks.
      await db.query(`
WITH y AS (
UPDATE an_purchases p SET amount_usd = p.price * r.rate,
       mrr_usd = CASE WHEN p.kind = 'paid' THEN an_monthly(p.price * r.rate, p.period) END
  FROM (SELECT app_id, environment, event_id, usd_rate(currency, day) AS rate FROM an_purchases WHERE amount_usd IS NULL) r
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
