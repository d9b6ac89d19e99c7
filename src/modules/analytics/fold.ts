import type { Tx } from '../../db/pool.js';
import { bumpAppVersions } from './funnel-store.js';
import {
  APPLY_HIST_DELTAS, cohortDelta, CREATE_HIST_DELTAS, FIND_SESSIONS, FLAG, flagDelta, funnelEventNames, histDelta,
  INSERT_NEW_DAYS, INSERT_SESSIONS, SESSION_HIST, sessionDelta, STAGE_NEW_DAYS, stageSql, UPDATE_OLD_DAYS, UPDATE_SESSIONS, UPSERT_STEPS,
} from './fold-sql.js';
import { INSERT_PURCHASES, revenueDelta } from './fold-purchases.js';
import { GROUP_DEVICES, SESSION_GROUPS, SESSION_GROUPS_EXACT, SHARED_FOUND, STAGE_DEVICES, stageSessions } from './fold-groups.js';
import { FLAG_LAST_COLS, flagFast } from './fold-flags.js';

/** The fold of one batch of events into the rollups (store.ts runs it per round and partition). */

/** an_devices columns the fold maintains (besides the key). */
const DEVICE_COLS = [
  'first_ts', 'first_day', 'platform', 'country', 'last_day', 'ret_mask', 'onb_day', 'last_ts', 'last_session', ...FLAG_LAST_COLS,
];

const MOVED = `m.moved AND (m.platform IS DISTINCT FROM m.old_platform OR m.country IS DISTINCT FROM m.old_country)`;

/**
 * How the batch's sessions are taken: `lookUpAll` looks every one up in an_sessions (stageSessions);
 * `exact` groups them per session id at once (SESSION_GROUPS_EXACT). The retry of a batch whose
 * session insert failed takes both; a rebuild, whose sessions are all new, `exact` alone.
 */
export interface SessionMode {
  lookUpAll: boolean;
  exact: boolean;
}

/** The batch: its events (an SQL condition on events `e`) and the timezone most of their apps use (stageSql). */
export interface Batch {
  where: string;
  zone: string;
}

/** Folds the events of `batch` (staged in the temp table an_ev) into every rollup table. Returns the number of events folded. */
export async function foldEvents(tx: Tx, batch: Batch, { lookUpAll, exact }: SessionMode): Promise<number> {
  // The app's timezone joins by hash: the planner's choice, an index probe of an_app_state per
  // event, was 40% of the staging (measured: 1.6 s of 3.9 s for 1,500,000 events). Events are read
  // through an index (seq BRIN, or the app's for a rebuild): on partitions not analyzed yet (a bulk
  // load, a new month) the planner scanned whole partitions for every round.
  // The fold's other statements take days from an_ev, never from a timestamp: the zone is theirs too.
  await tx.query(`SELECT set_config('TimeZone', $1, true)`, [batch.zone]);
  const n = (await without(tx, ['nestloop', 'seqscan'], stageSql(batch.where, batch.zone))).rowCount ?? 0;
  if (n === 0) return 0;
  // The fold's temp tables are analyzed for row counts and fractions (new, late, looked up):
  // a small sample gives those; the default one costs more than some of the statements.
  await tx.query(`SET LOCAL default_statistics_target = 10`);
  await tx.query(`ANALYZE an_ev`);
  await tx.query(CREATE_HIST_DELTAS);

  // 0. The batch's devices as stored (one look-up per device).
  await tx.query(`
CREATE TEMP TABLE an_old ON COMMIT DROP AS
SELECT o.*, o.ctid AS tid FROM (SELECT DISTINCT anon_id, app_id, environment FROM an_ev) b
  JOIN an_devices o ON o.app_id = b.app_id AND o.environment = b.environment AND o.anon_id = b.anon_id`);
  await tx.query(`ANALYZE an_old`);

  // 1. The batch per device-day, marking the days the device did not have yet. Only a day up to the
  // device's stored last day can exist: in ingestion order few do, and only those are looked up.
  // The device's previous day in the batch comes from the grouping's own order.
  await tx.query(`
CREATE TEMP TABLE an_dd ON COMMIT DROP AS
SELECT v.*, true AS is_new, 0 AS old_flags, (v.day <= o.last_day) IS TRUE AS probe
  FROM (SELECT tenant_id, app_id, environment, anon_id, day, count(*)::int AS n, bit_or(flag) AS flags, min(ts) AS f_ts, max(ts) AS l_ts,
               lag(day) OVER (PARTITION BY anon_id, app_id, environment ORDER BY day) AS prev_in_batch
          FROM an_ev GROUP BY anon_id, app_id, environment, day, tenant_id) v
  LEFT JOIN an_old o ON o.app_id = v.app_id AND o.environment = v.environment AND o.anon_id = v.anon_id`);
  await tx.query(`ANALYZE an_dd`);
  const { rowCount: oldDays } = await tx.query(`
UPDATE an_dd v SET is_new = false, old_flags = x.flags
  FROM an_device_days x WHERE v.probe AND x.app_id = v.app_id AND x.environment = v.environment AND x.day = v.day AND x.anon_id = v.anon_id`);

  // The batch's sessions (fold-groups.ts); an_dev takes each device's last one from them.
  await tx.query(exact ? SESSION_GROUPS_EXACT : SESSION_GROUPS);

  // 2. Per device: merge the batch into the stored device row. A device is "late" when the batch
  // adds a day before its last known day (its first event, platform, country, previous-day chain
  // or retention bits may change); late devices are recomputed from their full history below.
  // In-order devices (the normal case) update incrementally.
  await tx.query(GROUP_DEVICES);
  await tx.query(`ANALYZE an_dc`);
  // The join-backs' multi-column estimates come out at one row: nested loops over the batch.
  await without(tx, ['nestloop'], STAGE_DEVICES);
  await tx.query(`ANALYZE an_dev`);
  // Flag histogram: devices gaining a flag bit before their latest day with it, or moving
  // platform/country, leave it with their stored flagged days now and re-enter, recomputed, at the
  // end. In-order devices add their newly flagged days directly (fold-flags.ts). Other devices'
  // flagged days keep their gaps (days without flags do not count in a flag's chain).
  await tx.query(`
CREATE TEMP TABLE an_fr ON COMMIT DROP AS
SELECT m.app_id, m.environment, m.anon_id FROM an_dev m WHERE m.flag_slow OR (${MOVED})`);
  await tx.query(`ANALYZE an_fr`);
  await tx.query(flagDelta('-'));
  await tx.query(flagFast(MOVED));
  // Late devices leave the active-user histogram now and re-enter it, recomputed, at the end.
  await tx.query(histDelta('-', 'an_dev a JOIN an_device_days y ON y.app_id = a.app_id AND y.environment = a.environment AND y.anon_id = a.anon_id WHERE a.late'));
  // Stored devices (an_old said which) are updated at the row address an_old read (this is the
  // transaction's first write to an_devices, and only this partition writes these rows): one heap
  // fetch each, where a join by key hashed the whole table. New ones are plain inserts.
  const cols = DEVICE_COLS.join(', ');
  await without(tx, ['hashjoin', 'mergejoin'], `
UPDATE an_devices d SET (${cols}) = (${DEVICE_COLS.map((c) => `m.${c}`).join(', ')})
  FROM an_dev m
 WHERE m.existed AND d.ctid = m.old_tid AND d.anon_id = m.anon_id AND d.app_id = m.app_id AND d.environment = m.environment
   AND (${DEVICE_COLS.map((c) => `d.${c}`).join(', ')}) IS DISTINCT FROM (${DEVICE_COLS.map((c) => `m.${c}`).join(', ')})`);
  await tx.query(`
INSERT INTO an_devices (tenant_id, app_id, environment, anon_id, ${cols})
SELECT tenant_id, app_id, environment, anon_id, ${cols} FROM an_dev WHERE NOT existed ORDER BY anon_id, app_id, environment`);

  // A late first event can change the device's platform/country: its copies follow (and its
  // sessions move between histogram cells).
  const { rows: [special] } = await tx.query<{ moved: number; late: number }>(
    `SELECT count(*) FILTER (WHERE ${MOVED})::int AS moved, count(*) FILTER (WHERE m.late)::int AS late FROM an_dev m`);
  if (special.moved > 0) {
    // an_sessions has no index by device (migration 014): the moved devices' sessions are found
    // with one read of the table, then updated by key.
    await tx.query(`
CREATE TEMP TABLE an_mvs ON COMMIT DROP AS
SELECT y.session_id, y.tenant_id, y.app_id, y.environment, y.start_day, y.end_day, y.start_ts, y.end_ts, y.platform, y.country,
       m.platform AS new_platform, m.country AS new_country
  FROM an_dev m JOIN an_sessions y ON y.app_id = m.app_id AND y.environment = m.environment AND y.anon_id = m.anon_id WHERE ${MOVED}`);
    await tx.query(`ANALYZE an_mvs`);
    await tx.query(sessionDelta('-', 'an_mvs y'));
    const movedPurchases = `an_dev m JOIN an_purchases y ON y.app_id = m.app_id AND y.environment = m.environment AND y.anon_id = m.anon_id WHERE ${MOVED}`;
    await tx.query(revenueDelta('-', movedPurchases));
    for (const table of ['an_device_days', 'an_purchases']) {
      await tx.query(`
UPDATE ${table} t SET platform = m.platform, country = m.country
  FROM an_dev m WHERE ${MOVED} AND t.app_id = m.app_id AND t.environment = m.environment AND t.anon_id = m.anon_id`);
    }
    await tx.query(revenueDelta('+', movedPurchases));
    await tx.query(`
UPDATE an_sessions t SET platform = y.new_platform, country = y.new_country
  FROM an_mvs y WHERE t.app_id = y.app_id AND t.environment = y.environment AND t.session_id = y.session_id`);
    await tx.query(sessionDelta('+', `(SELECT tenant_id, app_id, environment, start_day, end_day, start_ts, end_ts, new_platform AS platform,
                                             new_country AS country FROM an_mvs) y`));
  }

  // 3. Device-days: existing days are updated, new ones inserted with their previous active day;
  // the new days of in-order devices enter the active-user histogram from the staged rows.
  await tx.query(STAGE_NEW_DAYS);
  if (oldDays) await tx.query(UPDATE_OLD_DAYS);
  await tx.query(INSERT_NEW_DAYS);
  await tx.query(histDelta('+', 'an_ddn y WHERE NOT y.late'));

  // 4. Late devices: previous-day chain, retention bits and onboarding day from the full history.
  if (special.late > 0) {
    await tx.query(`
UPDATE an_device_days t SET prev_day = x.prev
  FROM (SELECT y.app_id, y.environment, y.anon_id, y.day, y.prev_day AS old,
               lag(y.day) OVER (PARTITION BY y.app_id, y.environment, y.anon_id ORDER BY y.day) AS prev
          FROM an_dev a JOIN an_device_days y ON y.app_id = a.app_id AND y.environment = a.environment AND y.anon_id = a.anon_id
         WHERE a.late) x
 WHERE t.app_id = x.app_id AND t.environment = x.environment AND t.day = x.day AND t.anon_id = x.anon_id
   AND x.old IS DISTINCT FROM x.prev`);
    await tx.query(`
UPDATE an_devices d SET ret_mask = s.mask, onb_day = s.onb
  FROM (SELECT a.app_id, a.environment, a.anon_id,
               coalesce(bit_or(CASE y.day - a.first_day WHEN 1 THEN 1 WHEN 3 THEN 2 WHEN 7 THEN 4 WHEN 14 THEN 8
                                 WHEN 30 THEN 16 WHEN 60 THEN 32 WHEN 90 THEN 64 ELSE 0 END), 0) AS mask,
               min(y.day) FILTER (WHERE y.flags & ${FLAG.onbStarted} <> 0) AS onb
          FROM an_dev a JOIN an_device_days y ON y.app_id = a.app_id AND y.environment = a.environment AND y.anon_id = a.anon_id
         WHERE a.late GROUP BY 1, 2, 3) s
 WHERE d.app_id = s.app_id AND d.environment = s.environment AND d.anon_id = s.anon_id`);
    // an_dev keeps every batch device's final values (the cohort delta reads them there).
    await tx.query(`
UPDATE an_dev a SET ret_mask = d.ret_mask, onb_day = d.onb_day
  FROM an_devices d WHERE a.late AND d.app_id = a.app_id AND d.environment = a.environment AND d.anon_id = a.anon_id`);
    await tx.query(histDelta('+', 'an_dev a JOIN an_device_days y ON y.app_id = a.app_id AND y.environment = a.environment AND y.anon_id = a.anon_id WHERE a.late'));
  }

  // New-user cohorts: touched devices whose cohort cell changed leave the old one and enter the new.
  await tx.query(cohortDelta());
  await tx.query(flagDelta('+'));

  // Sessions: the batch's sessions with their device's platform/country and their stored extent,
  // then update / insert / histogram delta.
  let found = await stageAndFindSessions(tx, lookUpAll);
  if (found && (await tx.query(SHARED_FOUND)).rowCount) {
    // A stored session that two devices of the batch report: grouped exactly, it is one row.
    await tx.query(`DROP TABLE an_sv, an_sg`);
    await tx.query(SESSION_GROUPS_EXACT);
    found = await stageAndFindSessions(tx, lookUpAll);
  }
  if (found) await tx.query(UPDATE_SESSIONS);
  await tx.query(INSERT_SESSIONS);
  await tx.query(SESSION_HIST);

  // New purchases enter the revenue histogram (a retried event is not new: no row returned).
  await tx.query(INSERT_PURCHASES);

  await tx.query(UPSERT_STEPS, [await funnelEventNames(tx)]);
  for (const sql of APPLY_HIST_DELTAS) await tx.query(sql);
  // Stored funnel answers of these apps are no longer exact (funnel-answers.ts).
  await bumpAppVersions(tx);
  return n;
}

/** Stages the batch's sessions (an_sv) and marks those already stored; returns how many are. */
async function stageAndFindSessions(tx: Tx, lookUpAll: boolean): Promise<number> {
  await tx.query(stageSessions(lookUpAll));
  // Statistics first: unanalyzed, the planner hash-joins the few looked-up / existing ones with all of an_sessions.
  await tx.query(`ANALYZE an_sv`);
  return (await tx.query(FIND_SESSIONS)).rowCount ?? 0;
}

/**
 * Runs `sql` with the given planner methods switched off for it alone. No restore on failure:
 * the transaction is then aborted, which drops SET LOCAL anyway, and a query there would replace
 * the error (a unique violation store.ts retries on) with "transaction aborted".
 */
async function without(tx: Tx, methods: ('nestloop' | 'hashjoin' | 'mergejoin' | 'seqscan')[], sql: string) {
  for (const m of methods) await tx.query(`SET LOCAL enable_${m} = off`);
  const result = await tx.query(sql);
  for (const m of methods) await tx.query(`SET LOCAL enable_${m} = on`);
  return result;
}
