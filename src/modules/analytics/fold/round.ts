import { inTx, type Conn } from '../../../db/pool.js';
import { DEFINITIONS_VERSION } from '../definitions.js';
import { Bucket, EventReader, RoundDicts, uuidText } from './events.js';
import { eventsQuery, funnelEventNames, partOf, ROLLUP_TABLES, without } from './sql.js';
import { foldBucket, type FoldProfile } from './bucket.js';

/**
 * The fold's transactions (run by worker.ts): a partition's state row, settings and reads,
 * a small round of every partition, and the rebuild of one app.
 * The fold runs as device partitions (migration 012); an_rollup_state has one row (watermark) per
 * partition: every event of the partition's devices up to it is folded.
 */

/** lockState's "every partition" value. */
export const ALL = -1;

/** Locks the state row of partition `part` (ALL: every row) in the open transaction; their watermarks. */
export async function lockState(tx: Conn, part: number): Promise<number[]> {
  const { rows } = await tx.query<{ w: number }>(
    `SELECT watermark AS w FROM an_rollup_state WHERE id = $1 OR $1 = ${ALL} ORDER BY id FOR UPDATE`,
    [part],
  );
  return rows.map((r) => Number(r.w));
}

/** Moves partition `part` (ALL: every one) to `to`, counting `folded` events for it (ALL: for partition 0). */
export async function advanceState(tx: Conn, part: number, to: number, folded: number): Promise<void> {
  await tx.query(
    `
UPDATE an_rollup_state SET watermark = greatest(watermark, $1), folded_at = now(),
       events_folded = events_folded + CASE WHEN id = greatest($3, 0) THEN $2 ELSE 0 END
 WHERE id = $3 OR $3 = ${ALL}`,
    [to, folded, part],
  );
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

/**
 * Settings of a fold transaction. `zone` becomes its TimeZone: eventsQuery's plain date cast of
 * the apps in that zone. `workMemMb` (ANALYTICS_FOLD_WORK_MEM_MB) is the memory of its merges'
 * sorts and hash tables.
 */
export async function prepareFold(tx: Conn, zone: string, workMemMb: number): Promise<void> {
  // Rollups and watermark commit together; losing the tail of them in a crash only means refolding it.
  await tx.query(`SET LOCAL synchronous_commit = off`);
  await tx.query(`SELECT set_config('work_mem', $1, true), set_config('hash_mem_multiplier', '4', true)`, [
    `${Math.trunc(workMemMb)}MB`,
  ]);
  // The partitions already keep every core busy: parallel workers only competed with them.
  await tx.query(`SET LOCAL max_parallel_workers_per_gather = 0`);
  await tx.query(WAL_UNCOMPRESSED);
  await tx.query(`SELECT set_config('TimeZone', $1, true)`, [zone]);
  // The fold analyzes its temp tables for their row counts alone (the joins' methods): a small
  // sample gives those (the default one cost 50 ms per round for the stored devices' keys).
  await tx.query(`SET LOCAL default_statistics_target = 10`);
}

/**
 * Reads the events of `query` (eventsQuery) into `reader`, in the open transaction. Through an
 * index (the seq BRIN, or the app's for a rebuild): on partitions not analyzed yet (a bulk load, a
 * new month) the planner scanned whole partitions for every round. A seq range joins the apps'
 * timezones by hash (`hashJoin`): the planner's choice, an index probe of an_app_state per event,
 * cost 40% of the read (measured).
 */
export function readInto(tx: Conn, reader: EventReader, query: string, { hashJoin = true } = {}): Promise<number> {
  return without(tx, hashJoin ? ['seqscan', 'nestloop'] : ['seqscan'], () => reader.read(tx, query));
}

export interface FoldResult {
  folded: number;
  watermark: number;
}

/**
 * A round over seq (watermark, to] of every partition in one transaction, when all share one
 * watermark (null otherwise): small rounds (ANALYTICS_FOLD_PARALLEL_MIN, the steady state) would
 * cost each partition the fixed cost of its statements for work that takes a fraction of a second.
 */
export function foldTogether(
  conn: Conn,
  { to, zone, workMemMb, profile }: { to: number; zone: string; workMemMb: number; profile?: FoldProfile },
): Promise<FoldResult | null> {
  return inTx(conn, async () => {
    const marks = await lockState(conn, ALL);
    if (marks.some((w) => w !== marks[0])) return null;
    const lo = marks[0];
    if (lo >= to) return { folded: 0, watermark: lo };
    await prepareFold(conn, zone, workMemMb);
    const reader = new EventReader(new RoundDicts(), new Bucket(to - lo), 0, 1, lo);
    await readInto(conn, reader, eventsQuery(`e.seq > ${lo} AND e.seq <= ${to}`, zone, '0'));
    const folded = await foldBucket(conn, reader.bucket, reader.dicts, await funnelEventNames(conn), profile);
    await advanceState(conn, ALL, to, folded);
    return { folded, watermark: to };
  });
}

/**
 * Rebuilds one app's rollups from its raw events up to each partition's watermark, in one
 * transaction (holding every partition's state row): readers keep the old numbers until the new
 * ones commit. The events are read in time order, `chunk` at a time (keyset on the app's index):
 * every batch after the first continues the devices and sessions the earlier ones stored.
 */
export function rebuildApp(
  conn: Conn,
  {
    appId,
    timezone,
    chunk,
    workMemMb,
    profile,
  }: { appId: string; timezone: string; chunk: number; workMemMb: number; profile?: FoldProfile },
): Promise<number> {
  return inTx(conn, async () => {
    const { rows } = await conn.query<{ id: number; watermark: number }>(
      `SELECT id, watermark FROM an_rollup_state ORDER BY id FOR UPDATE`,
    );
    const wm = `CASE ${partOf('e.anon_id', rows.length)} ${rows.map((r) => `WHEN ${Number(r.id)} THEN ${Number(r.watermark)}`).join(' ')} END`;
    await prepareFold(conn, timezone, workMemMb);
    await conn.query(`UPDATE an_app_state SET timezone = $2, defs = $3, rebuilt_at = now() WHERE app_id = $1`, [
      appId,
      timezone,
      DEFINITIONS_VERSION,
    ]);
    for (const t of ROLLUP_TABLES) await conn.query(`DELETE FROM ${t} WHERE app_id = $1`, [appId]);
    const names = await funnelEventNames(conn);
    let folded = 0;
    let after = '';
    for (;;) {
      const reader = new EventReader(new RoundDicts(), new Bucket(chunk), 0, 1, -1);
      const where = `e.app_id = '${appId.replace(/[^0-9a-f-]/gi, '')}' AND e.seq <= ${wm}${after}`;
      const tail = ` ORDER BY e.environment, e.ts, e.event_id LIMIT ${Math.trunc(chunk)}`;
      const n = await readInto(conn, reader, eventsQuery(where, timezone, '0', { oneApp: true, tail }), {
        hashJoin: false,
      });
      const { bucket, dicts } = reader;
      folded += await foldBucket(conn, bucket, dicts, names, profile);
      if (n < chunk) return folded;
      const last = n - 1;
      const env = dicts.appEnvs[bucket.devices.tags[bucket.dev[last]]].environment;
      after = ` AND (e.environment, e.ts, e.event_id) > ('${env.replace(/'/g, "''")}', '${tsLiteral(bucket.ts[last])}', '${uuidText(bucket.eid, last * 16)}')`;
    }
  });
}

/** A timestamptz literal of microseconds since 2000-01-01 UTC. */
function tsLiteral(us: number): string {
  const ms = Math.floor(us / 1000);
  return new Date(Date.UTC(2000, 0, 1) + ms).toISOString().replace('Z', `${String(us - ms * 1000).padStart(3, '0')}Z`);
}
