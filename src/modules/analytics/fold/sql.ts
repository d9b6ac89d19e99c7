import type { Conn, Queryable } from '../../../db/pool.js';
import {
  DEFAULT_FUNNEL_EVENTS,
  flagSql,
  monthlySql,
  periodEndSql,
  STEP_TIMES_KEPT,
  usdRateSql,
} from '../definitions.js';

/**
 * The fold's SQL (bucket.ts, round.ts, state.ts and sessions.ts run it). The fold reads a round's events with one COPY,
 * groups and merges them in JavaScript (devices.ts, sessions.ts), and writes rows back
 * with COPY into the rollup tables or into temp tables that one statement each then applies.
 */

/** The events' flag bits (definitions.ts FLAGS), built once. */
const FLAG_SQL = flagSql();

/**
 * The events matching `where` (a seq range, or one app for a rebuild) as events.ts reads
 * them: seq, fold partition (`part`, an SQL expression), keys, name, time, day in the app's rollup
 * timezone, device, session, platform, country, flag bits, and the properties of purchases. Only
 * consented events enter analytics. Events of apps in `zone` take the plain date cast, which the
 * caller makes mean that zone (the transaction's TimeZone): AT TIME ZONE resolves the zone's name
 * on every row. `oneApp`: every event is of an app in `zone` (a rebuild), and `tail` follows the
 * WHERE clause (its ORDER BY and LIMIT: no join may come between the index and the limit).
 */
export function eventsQuery(where: string, zone: string, part: string, { oneApp = false, tail = '' } = {}): string {
  const day = oneApp
    ? 'e.ts::date'
    : `CASE WHEN st.timezone = '${zone.replace(/'/g, "''")}' THEN e.ts::date
            ELSE (e.ts AT TIME ZONE coalesce(st.timezone, 'UTC'))::date END`;
  return `
SELECT e.seq, (${part})::int4, e.tenant_id, e.app_id, e.environment, e.event_id, e.event_name, e.ts, ${day},
       e.anon_id, e.session_id, e.platform, e.country,
       ${FLAG_SQL},
       CASE WHEN e.event_name IN ('purchase_completed', 'purchase_refunded') THEN coalesce(p.props::text, 'null') END
  FROM events e
  ${oneApp ? '' : 'LEFT JOIN an_app_state st ON st.app_id = e.app_id'}
  -- Purchase properties are parsed once (jsonb): every -> on the stored json text parses it again.
  CROSS JOIN LATERAL (SELECT CASE WHEN e.event_name IN ('purchase_completed', 'purchase_refunded')
                                  THEN (e.payload->'properties')::jsonb END AS props) p
 WHERE e.consent AND ${where}${tail}`;
}

/** Every rollup table the fold writes (a rebuild empties an app's rows of each). */
export const ROLLUP_TABLES = [
  'an_devices',
  'an_active_hist',
  'an_sessions',
  'an_session_hist',
  'an_purchases',
  'an_steps',
  'an_cohort_hist',
  'an_onb_hist',
  'an_flag_hist',
  'an_rev_hist',
];

/** The fold partition of a device: the stable hash PostgreSQL's hash partitioning uses, modulo the count. */
export const partOf = (anonId: string, parts: number) => `abs(uuid_hash_extended(${anonId}, 0) % ${parts})`;

/**
 * Event names any funnel can use: the defaults plus those named in apps' overrides. Only these
 * are kept in an_steps (high-volume names such as screen_view never are). An override naming a
 * new event sees that event from the next fold on; a rebuild (timezone change) backfills it.
 */
export async function funnelEventNames(q: Queryable): Promise<string[]> {
  const { rows } = await q.query<{ e: string }>(`
SELECT DISTINCT st->>'event' AS e FROM app_settings s
 CROSS JOIN LATERAL jsonb_each(CASE WHEN jsonb_typeof(s.extra->'funnels') = 'object' THEN s.extra->'funnels' ELSE '{}' END) f
 CROSS JOIN LATERAL jsonb_array_elements(CASE WHEN jsonb_typeof(f.value) = 'array' THEN f.value ELSE '[]' END) st
 WHERE jsonb_typeof(st) = 'object' AND st->>'event' IS NOT NULL`);
  return [...new Set([...DEFAULT_FUNNEL_EVENTS, ...rows.map((r) => r.e)])];
}

// --- Devices (state.ts, devices.ts) ---

export const DEVICE_KEYS_TEMP = `CREATE TEMP TABLE an_keys (anon_id uuid, app_id uuid, environment text) ON COMMIT DROP`;

/** The stored rows of the batch's devices, with their addresses. */
export const LOAD_DEVICES = `
SELECT d.ctid, d.anon_id, d.app_id, d.environment, d.tenant_id, d.first_ts, d.first_day, d.platform, d.country, d.last_ts, d.last_session, d.days
  FROM an_keys k JOIN an_devices d ON d.anon_id = k.anon_id AND d.app_id = k.app_id AND d.environment = k.environment`;

const DEVICE_STATE = 'first_ts, first_day, platform, country, ret_mask, onb_day, last_day, last_ts, last_session, days';

/** COPY target of new devices (devices.ts writes the columns in this order). */
export const DEVICE_INSERT = `an_devices (tenant_id, app_id, environment, anon_id, ${DEVICE_STATE})`;

export const DEVICE_UPDATE_TEMP = `
CREATE TEMP TABLE an_dev_upd (tid tid, app_id uuid, environment text, anon_id uuid, first_ts timestamptz, first_day date,
  platform text, country text, ret_mask int, onb_day date, last_day date, last_ts timestamptz, last_session uuid, days int[]) ON COMMIT DROP`;
export const DEVICE_UPDATE_COPY = `an_dev_upd (tid, app_id, environment, anon_id, ${DEVICE_STATE})`;

/**
 * Stored devices are updated at the address the load read (only this partition writes these
 * rows, under its state row lock): one heap fetch each, run as a nested loop of TID scans
 * (bucket.ts switches the other join methods off for it).
 */
export const UPDATE_DEVICES = `
UPDATE an_devices d SET (${DEVICE_STATE}) = (${DEVICE_STATE.split(', ')
  .map((c) => `u.${c}`)
  .join(', ')})
  FROM an_dev_upd u WHERE d.ctid = u.tid AND d.anon_id = u.anon_id AND d.app_id = u.app_id AND d.environment = u.environment`;

// --- Devices moved to another platform or country by a late first event ---

const MOVED_TEMP = `CREATE TEMP TABLE an_mv (app_id uuid, environment text, anon_id uuid, platform text, country text) ON COMMIT DROP`;
const MOVED_COPY = 'an_mv (app_id, environment, anon_id, platform, country)';

const MOVED_PURCHASES = `an_mv m JOIN an_purchases y ON y.app_id = m.app_id AND y.environment = m.environment AND y.anon_id = m.anon_id`;

/**
 * The moved devices' stored sessions and purchases follow them to their new cells. an_sessions
 * has no index by device (migration 014): the sessions are found with one read of the table, a
 * rare path (a late first event with another platform or country).
 */
const MOVE_DEVICES = [
  `CREATE TEMP TABLE an_mvs ON COMMIT DROP AS
SELECT y.session_id, y.tenant_id, y.app_id, y.environment, y.start_day, y.end_day, y.start_ts, y.end_ts, y.platform, y.country,
       m.platform AS new_platform, m.country AS new_country
  FROM an_mv m JOIN an_sessions y ON y.app_id = m.app_id AND y.environment = m.environment AND y.anon_id = m.anon_id`,
  sessionDelta('-', 'an_mvs y'),
  revenueDelta('-', MOVED_PURCHASES),
  `UPDATE an_purchases t SET platform = m.platform, country = m.country
     FROM an_mv m WHERE t.app_id = m.app_id AND t.environment = m.environment AND t.anon_id = m.anon_id`,
  revenueDelta('+', MOVED_PURCHASES),
  `UPDATE an_sessions t SET platform = y.new_platform, country = y.new_country
     FROM an_mvs y WHERE t.session_id = y.session_id AND t.app_id = y.app_id AND t.environment = y.environment`,
  sessionDelta(
    '+',
    `(SELECT tenant_id, app_id, environment, start_day, end_day, start_ts, end_ts, new_platform AS platform,
                             new_country AS country FROM an_mvs) y`,
  ),
  `DROP TABLE an_mvs`,
];

// --- Sessions (sessions.ts) ---

export const SESSION_PROBE_TEMP = `CREATE TEMP TABLE an_probe (session_id uuid, app_id uuid, environment text) ON COMMIT DROP`;

/** Stored sessions among the probed ones: extent, days, platform and country. */
export const FIND_SESSIONS = `
SELECT s.session_id, s.app_id, s.environment, s.tenant_id, s.start_ts, s.end_ts, s.start_day, s.end_day, s.platform, s.country
  FROM an_probe p JOIN an_sessions s ON s.session_id = p.session_id AND s.app_id = p.app_id AND s.environment = p.environment`;

/** COPY target of new sessions, in key order (a plain insert: sessions.ts knows they are new). */
export const SESSION_INSERT =
  'an_sessions (tenant_id, app_id, environment, session_id, anon_id, platform, country, start_ts, end_ts, start_day, end_day)';

const SESSION_WIDEN_TEMP = `
CREATE TEMP TABLE an_sw (session_id uuid, app_id uuid, environment text, start_ts timestamptz, end_ts timestamptz, start_day date, end_day date) ON COMMIT DROP`;
const SESSION_WIDEN_COPY = 'an_sw (session_id, app_id, environment, start_ts, end_ts, start_day, end_day)';
const WIDEN_SESSIONS = `
UPDATE an_sessions t SET start_ts = w.start_ts, end_ts = w.end_ts, start_day = w.start_day, end_day = w.end_day
  FROM an_sw w WHERE t.session_id = w.session_id AND t.app_id = w.app_id AND t.environment = w.environment`;

// --- Funnel steps ---

/** COPY target of new funnel-step rows (device-days the device did not have before the batch). */
export const STEPS_INSERT = 'an_steps (tenant_id, app_id, environment, event_name, day, anon_id, tss)';

const STEPS_TEMP = `
CREATE TEMP TABLE an_stp (tenant_id uuid, app_id uuid, environment text, event_name text, day date, anon_id uuid, tss timestamptz[]) ON COMMIT DROP`;
const STEPS_COPY = 'an_stp (tenant_id, app_id, environment, event_name, day, anon_id, tss)';

/**
 * Step rows of device-days stored before the batch may exist: merged, keeping the earliest
 * STEP_TIMES_KEPT distinct times (enough to find "the earliest step-k event at or after step k-1" for any
 * realistic funnel).
 */
const MERGE_STEPS = `
INSERT INTO an_steps (tenant_id, app_id, environment, event_name, day, anon_id, tss)
SELECT tenant_id, app_id, environment, event_name, day, anon_id, tss FROM an_stp
ON CONFLICT (app_id, environment, event_name, day, anon_id) DO UPDATE
   SET tss = CASE WHEN cardinality(an_steps.tss) >= ${STEP_TIMES_KEPT} AND an_steps.tss[${STEP_TIMES_KEPT}] <= EXCLUDED.tss[1] THEN an_steps.tss
             ELSE ARRAY(SELECT t FROM (SELECT DISTINCT t FROM unnest(an_steps.tss || EXCLUDED.tss) t) u ORDER BY t LIMIT ${STEP_TIMES_KEPT}) END`;

// --- Purchases ---

const PURCHASES_TEMP = `
CREATE TEMP TABLE an_pu (tenant_id uuid, app_id uuid, environment text, event_id uuid, anon_id uuid, ts timestamptz, day date,
  kind text, price float8, currency text, period text, period_n int, period_unit text, platform text, country text) ON COMMIT DROP`;
const PURCHASES_COPY = `an_pu (tenant_id, app_id, environment, event_id, anon_id, ts, day, kind, price, currency, period, period_n,
  period_unit, platform, country)`;

/**
 * The batch's purchases (purchases.ts parsed their properties), in USD at their day's rate
 * (the latest rate on or before it; NULL until their currency has one), with a paid subscription's
 * period end and monthly amount (definitions.ts revenue rules). The new ones enter the revenue histogram's delta (a retried event
 * is not new: no row returned).
 */
const INSERT_PURCHASES = `
WITH ins AS (
INSERT INTO an_purchases (tenant_id, app_id, environment, event_id, anon_id, platform, country, kind, ts, day,
                          price, currency, amount_usd, period, period_end, mrr_usd)
SELECT v.tenant_id, v.app_id, v.environment, v.event_id, v.anon_id, v.platform, v.country, v.kind, v.ts, v.day,
       v.price, v.currency, v.price * r.rate, v.period, ${periodEndSql('v')}, ${monthlySql('v', 'v.price * r.rate')}
  FROM an_pu v
  CROSS JOIN LATERAL (SELECT ${usdRateSql('v.currency', 'v.day')} AS rate) r
ON CONFLICT (app_id, environment, event_id) DO NOTHING
RETURNING tenant_id, app_id, environment, day, platform, country, kind, period_end, amount_usd, mrr_usd)
${revenueDelta('+', 'ins y')}`;

/**
 * A set of rows the fold sends through a temp table (created per batch), then applies to the rollups
 * with `apply`'s statements.
 */
export interface TempStage {
  temp: string;
  copy: string;
  apply: readonly string[];
}

export const MOVE_STAGE: TempStage = { temp: MOVED_TEMP, copy: MOVED_COPY, apply: MOVE_DEVICES };
export const WIDEN_STAGE: TempStage = { temp: SESSION_WIDEN_TEMP, copy: SESSION_WIDEN_COPY, apply: [WIDEN_SESSIONS] };
export const PURCHASE_STAGE: TempStage = { temp: PURCHASES_TEMP, copy: PURCHASES_COPY, apply: [INSERT_PURCHASES] };
export const STEP_MERGE_STAGE: TempStage = { temp: STEPS_TEMP, copy: STEPS_COPY, apply: [MERGE_STEPS] };

/** The fold's temp tables (dropped after each batch, so a rebuild can fold several in one transaction). */
export const FOLD_TEMPS = ['an_keys', 'an_dev_upd', 'an_mv', 'an_probe', 'an_sw', 'an_stp', 'an_pu'];

// --- Histograms ---

/**
 * The histograms the fold maintains by deltas: table, per-transaction delta table, cell key (after
 * app and environment), summed columns. The fold writes its changes to the delta tables;
 * APPLY_HIST_DELTAS adds them to the cells at the end of the batch, in one fixed order (table, then
 * cell key). Two partitions' transactions sharing cells then wait for each other only there and
 * never deadlock, and every cell stays one row for the readers.
 */
const HISTS = [
  ['an_active_hist', 'an_d_active', 'day, platform, country, gap', ['n']],
  ['an_session_hist', 'an_d_session', 'start_day, end_day, platform, country', ['n', 'dur']],
  ['an_cohort_hist', 'an_d_cohort', 'first_day, platform, country, ret_mask', ['n']],
  ['an_onb_hist', 'an_d_onb', 'first_day, platform, country, onb_off', ['n']],
  ['an_flag_hist', 'an_d_flag', 'day, platform, country, flag, gap', ['n']],
  ['an_rev_hist', 'an_d_rev', 'day, platform, country, kind, period_end', ['n', 'usd', 'mrr']],
] as const;

export const CREATE_HIST_DELTAS = HISTS.map(
  ([table, delta]) => `CREATE TEMP TABLE ${delta} (LIKE ${table}) ON COMMIT DROP`,
).join(';\n');
export const DROP_HIST_DELTAS = `DROP TABLE ${HISTS.map(([, delta]) => delta).join(', ')}`;

/** COPY target of a delta table (deltas.ts writes the columns in this order). */
export function deltaCopy(delta: string): string {
  const [, , cell, sums] = HISTS.find(([, d]) => d === delta)!;
  return `${delta} (tenant_id, app_id, environment, ${cell}, ${sums.join(', ')})`;
}

/** Adds conflicting rows' sums to the stored cell's. */
function addToCell([table, , cell, sums]: (typeof HISTS)[number]): string {
  return `ON CONFLICT (app_id, environment, ${cell}) DO UPDATE SET ${sums.map((c) => `${c} = ${table}.${c} + EXCLUDED.${c}`).join(', ')}`;
}

export const APPLY_HIST_DELTAS = HISTS.map((h) => {
  const [table, delta, cell, sums] = h;
  const key = `app_id, environment, ${cell}`;
  return `
INSERT INTO ${table} (tenant_id, ${key}, ${sums.join(', ')})
SELECT tenant_id, ${key}, ${sums.map((c) => `sum(${c})`).join(', ')} FROM ${delta}
 GROUP BY ${key}, tenant_id HAVING ${sums.map((c) => `sum(${c}) <> 0`).join(' OR ')}
 ORDER BY ${key}
${addToCell(h)}`;
});

/** The revenue histogram's conflict clause, for a writer outside the fold adding to its cells directly (convertPending). */
export const ADD_TO_REVENUE_CELL = addToCell(HISTS.find(([table]) => table === 'an_rev_hist')!);

/** Adds (+) or removes (-) the sessions `y` of `from` to / from the session histogram (its delta table). */
export function sessionDelta(sign: '+' | '-', from: string): string {
  return `
INSERT INTO an_d_session (tenant_id, app_id, environment, start_day, end_day, platform, country, n, dur)
SELECT y.tenant_id, y.app_id, y.environment, y.start_day, y.end_day, coalesce(y.platform, 'unknown'), coalesce(y.country, 'unknown'),
       ${sign}count(*)::int, ${sign}coalesce(sum(extract(epoch FROM y.end_ts - y.start_ts)), 0)::float8
  FROM ${from}
 GROUP BY 1, 2, 3, 4, 5, 6, 7`;
}

/**
 * Adds (+) or removes (-) the purchases `y` of `from` to / from the revenue histogram's delta table
 * (or `into`); `counted: false` adds their amounts alone (purchases already counted, converted later).
 */
export function revenueDelta(sign: '+' | '-', from: string, { counted = true, into = 'an_d_rev' } = {}): string {
  return `
INSERT INTO ${into} (tenant_id, app_id, environment, day, platform, country, kind, period_end, n, usd, mrr)
SELECT y.tenant_id, y.app_id, y.environment, y.day, coalesce(y.platform, 'unknown'), coalesce(y.country, 'unknown'), y.kind,
       coalesce(y.period_end, 'infinity'), ${counted ? `${sign}count(*)::int` : '0'},
       ${sign}coalesce(sum(y.amount_usd), 0), ${sign}coalesce(sum(y.mrr_usd), 0)
  FROM ${from}
 GROUP BY 1, 2, 3, 4, 5, 6, 7, 8`;
}

/**
 * Runs `fn` with the given planner methods switched off around it. No restore on failure: the
 * rollback (of the transaction or the savepoint) restores them.
 */
export async function without<T>(
  tx: Conn,
  methods: ('nestloop' | 'hashjoin' | 'mergejoin' | 'seqscan')[],
  fn: () => Promise<T>,
): Promise<T> {
  for (const m of methods) await tx.query(`SET LOCAL enable_${m} = off`);
  const result = await fn();
  for (const m of methods) await tx.query(`SET LOCAL enable_${m} = on`);
  return result;
}

// --- Erasure of devices (privacy, erase.ts) ---

const SUBJECT_ROWS = 'tenant_id = $1 AND app_id = $2 AND anon_id = ANY ($3::uuid[])';

/** The erased devices' stored rows: days as numbers since 2000-01-01 (the fold's), as device-cells.ts reads them. */
export const ERASE_LOAD_DEVICES = `
SELECT environment, platform, country, (first_day - date '2000-01-01') AS first_day, days
  FROM an_devices WHERE ${SUBJECT_ROWS}`;

/** A device-level delta table filled from arrays ($4.. by column): the erased devices' cells, negative. */
function deviceDeltaInsert(delta: DeltaTableName, dayColumn: string, rest: string[]): string {
  const cols = ['environment', dayColumn, 'platform', 'country', ...rest, 'n'];
  const types = ['text', 'int', 'text', 'text', ...rest.map(() => 'int'), 'int'];
  const args = types.map((t, i) => `$${i + 3}::${t}[]`).join(', ');
  const values = cols.map((c) => (c === dayColumn ? `date '2000-01-01' + x.${c}` : `x.${c}`)).join(', ');
  return `
INSERT INTO ${delta} (tenant_id, app_id, ${cols.join(', ')})
SELECT $1, $2, ${values} FROM unnest(${args}) AS x(${cols.join(', ')})`;
}

type DeltaTableName = (typeof HISTS)[number][1];

export const ERASE_DEVICE_DELTAS = {
  active: deviceDeltaInsert('an_d_active', 'day', ['gap']),
  flag: deviceDeltaInsert('an_d_flag', 'day', ['flag', 'gap']),
  cohort: deviceDeltaInsert('an_d_cohort', 'first_day', ['ret_mask']),
  onb: deviceDeltaInsert('an_d_onb', 'first_day', ['onb_off']),
};

const counted = (gone: string, delta?: string) =>
  `WITH y AS (${gone})${delta ? `, d AS (${delta})` : ''} SELECT count(*)::int AS n FROM y`;

/**
 * The erased devices' sessions, purchases and funnel-step rows go, sessions and purchases leaving
 * their cells (delta tables) as the fold's own deltas compute them; each answers its row count.
 * an_sessions has no index by device: one read of the table (as a moved device's).
 */
export const ERASE_ROWS = [
  counted(`DELETE FROM an_sessions WHERE ${SUBJECT_ROWS} RETURNING *`, sessionDelta('-', 'y')),
  counted(`DELETE FROM an_purchases WHERE ${SUBJECT_ROWS} RETURNING *`, revenueDelta('-', 'y')),
  counted(`DELETE FROM an_steps WHERE ${SUBJECT_ROWS} RETURNING 1`),
  counted(`DELETE FROM an_devices WHERE ${SUBJECT_ROWS} RETURNING 1`),
];
