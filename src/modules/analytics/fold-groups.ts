import { FLAG_DEV_COLS, FLAG_NEW_AGG } from './fold-flags.js';
import { FLAG } from './fold-sql.js';

/**
 * The batch's groupings the fold works from: per session (an_sg, then an_sv) and per device
 * (an_dev). They are hash aggregates: none needs the batch in order. Sorting the batch per device
 * (for its first and last event) and again per session cost 6.5 µs of statement time per event on
 * the bench's 2-active-day data at full size, these groupings 3.8 µs: the device's first event is
 * found by joining back on its earliest timestamp, and its last session from the session groups.
 *
 * Grouping keys name the random uuid (anon_id, session_id) first: where the planner still sorts,
 * abbreviated keys of the leading column then decide most comparisons.
 */

/**
 * The batch's sessions per device: extent in time and in (app timezone) days. A session id that two
 * devices of the batch report shows up twice here. As a new session its second insert then fails
 * (a unique violation: store.ts refolds the batch, grouping with SESSION_GROUPS_EXACT); as a stored
 * one both rows are found and SHARED_FOUND tells the fold to group again.
 */
export const SESSION_GROUPS = `
CREATE TEMP TABLE an_sg ON COMMIT DROP AS
SELECT session_id, anon_id, app_id, environment, tenant_id, min(ts) AS s, max(ts) AS e, min(day) AS sd, max(day) AS ed
  FROM an_ev WHERE session_id IS NOT NULL GROUP BY session_id, anon_id, app_id, environment, tenant_id`;

/** One row per session id, its device the one of its earliest event in the batch (retries, rebuilds). */
export const SESSION_GROUPS_EXACT = `
CREATE TEMP TABLE an_sg ON COMMIT DROP AS
SELECT session_id, (array_agg(anon_id ORDER BY ts, event_id))[1] AS anon_id, app_id, environment, tenant_id,
       min(ts) AS s, max(ts) AS e, min(day) AS sd, max(day) AS ed
  FROM an_ev WHERE session_id IS NOT NULL GROUP BY session_id, app_id, environment, tenant_id`;

/** A stored session found twice in an_sv (FIND_SESSIONS marked them). */
export const SHARED_FOUND = `SELECT 1 FROM an_sv WHERE existed GROUP BY session_id, app_id, environment HAVING count(*) > 1 LIMIT 1`;

const RET_BITS = `CASE nd - coalesce(o.first_day, c.f_day) WHEN 1 THEN 1 WHEN 3 THEN 2 WHEN 7 THEN 4 WHEN 14 THEN 8
                                  WHEN 30 THEN 16 WHEN 60 THEN 32 WHEN 90 THEN 64 ELSE 0 END`;

/**
 * The batch per device (an_dd grouped). A day is a monotonic function of the timestamp (one
 * timezone per app), so the first event's day is the earliest day.
 */
export const GROUP_DEVICES = `
CREATE TEMP TABLE an_dc ON COMMIT DROP AS
SELECT tenant_id, app_id, environment, anon_id, min(day) AS f_day, min(f_ts) AS f_ts, max(l_ts) AS l_ts, max(day) AS max_day,
       min(day) FILTER (WHERE is_new) AS min_new, min(day) FILTER (WHERE flags & ${FLAG.onbStarted} <> 0) AS onb,
       array_agg(day) FILTER (WHERE is_new) AS new_days,
       ${FLAG_NEW_AGG}
  FROM an_dd GROUP BY anon_id, app_id, environment, tenant_id`;

/**
 * Per device (an_dc, an_old as stored): its merged values and those before the batch. The first
 * event (platform, country: the earliest timestamp, event id breaking a tie) is joined back from
 * the batch; the last session is the one ending at the device's latest timestamp.
 */
export const STAGE_DEVICES = `
CREATE TEMP TABLE an_dev ON COMMIT DROP AS
WITH fe AS (
SELECT DISTINCT ON (e.anon_id, e.app_id, e.environment) e.anon_id, e.app_id, e.environment, e.platform, e.country
  FROM an_ev e JOIN an_dc c ON c.anon_id = e.anon_id AND c.app_id = e.app_id AND c.environment = e.environment AND c.f_ts = e.ts
 ORDER BY e.anon_id, e.app_id, e.environment, e.event_id),
ls AS (
SELECT DISTINCT ON (s.anon_id, s.app_id, s.environment) s.anon_id, s.app_id, s.environment, s.session_id
  FROM an_sg s JOIN an_dc c ON c.anon_id = s.anon_id AND c.app_id = s.app_id AND c.environment = s.environment AND c.l_ts = s.e
 ORDER BY s.anon_id, s.app_id, s.environment, s.session_id)
SELECT c.tenant_id, c.app_id, c.environment, c.anon_id,
       (o.anon_id IS NOT NULL AND c.f_ts < o.first_ts) AS moved,
       (o.anon_id IS NOT NULL AND (c.min_new < o.last_day OR c.f_ts < o.first_ts)) IS TRUE AS late,
       CASE WHEN o.anon_id IS NULL OR c.f_ts < o.first_ts THEN c.f_ts ELSE o.first_ts END AS first_ts,
       CASE WHEN o.anon_id IS NULL OR c.f_ts < o.first_ts THEN c.f_day ELSE o.first_day END AS first_day,
       CASE WHEN o.anon_id IS NULL OR c.f_ts < o.first_ts THEN fe.platform ELSE o.platform END AS platform,
       CASE WHEN o.anon_id IS NULL OR c.f_ts < o.first_ts THEN fe.country ELSE o.country END AS country,
       o.platform AS old_platform, o.country AS old_country, o.last_day AS old_last, (o.anon_id IS NOT NULL) AS existed,
       o.first_day AS old_first_day, o.ret_mask AS old_mask, o.onb_day AS old_onb,
       greatest(o.last_day, c.max_day) AS last_day,
       coalesce(o.ret_mask, 0) | (SELECT coalesce(bit_or(${RET_BITS}), 0) FROM unnest(c.new_days) nd) AS ret_mask,
       least(o.onb_day, c.onb) AS onb_day,
       o.last_ts AS old_last_ts, o.last_session AS old_last_session, o.tid AS old_tid,
       CASE WHEN o.last_ts IS NULL OR c.l_ts >= o.last_ts THEN c.l_ts ELSE o.last_ts END AS last_ts,
       CASE WHEN o.last_ts IS NULL OR c.l_ts >= o.last_ts THEN ls.session_id ELSE o.last_session END AS last_session,
       ${FLAG_DEV_COLS}
  FROM an_dc c
  JOIN fe ON fe.anon_id = c.anon_id AND fe.app_id = c.app_id AND fe.environment = c.environment
  LEFT JOIN ls ON ls.anon_id = c.anon_id AND ls.app_id = c.app_id AND ls.environment = c.environment
  LEFT JOIN an_old o ON o.anon_id = c.anon_id AND o.app_id = c.app_id AND o.environment = c.environment`;

/**
 * The batch's sessions with the device's platform/country (an_dev holds every batch device with the
 * final values an_devices got).
 *
 * Only sessions that can already be stored are looked up (`probe`), unless `all`: those of a stored
 * device that start before its last folded event or continue its last session. Any other stored
 * one is a session id shared with another device (or one a device left and resumed after another
 * session): its insert then fails, and the partition's fold is retried looking every session up
 * (store.ts).
 */
export const stageSessions = (all: boolean) => `
CREATE TEMP TABLE an_sv ON COMMIT DROP AS
SELECT v.tenant_id, v.app_id, v.environment, v.session_id, v.anon_id, v.s, v.e, v.sd, v.ed, false AS existed,
       ${all ? 'true' : `(d.existed AND (d.old_last_ts IS NULL OR v.s <= d.old_last_ts OR v.session_id = d.old_last_session)) IS TRUE`} AS probe,
       d.platform, d.country,
       NULL::timestamptz AS o_s, NULL::timestamptz AS o_e, NULL::date AS o_sd, NULL::date AS o_ed
  FROM an_sg v JOIN an_dev d ON d.app_id = v.app_id AND d.environment = v.environment AND d.anon_id = v.anon_id`;
