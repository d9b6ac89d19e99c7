import type { Queryable } from '../../db/pool.js';
import { FUNNELS } from './funnels.js';

/** SQL building blocks of the fold (store.ts runs them). */

/** Bits of an_device_days.flags. */
export const FLAG = { onbStarted: 1, onbCompleted: 2, paywall: 4, trial: 8, paid: 16, crash: 32 } as const;

const DEFAULT_FUNNEL_EVENTS = [...new Set(Object.values(FUNNELS).flatMap((steps) => steps.flatMap((s) => (s.event ? [s.event] : []))))];

const IS_TRIAL = `(json_typeof(props->'is_trial') = 'boolean' AND props->>'is_trial' = 'true')`;

/**
 * Stages the events of one source (a seq range, or one app for a rebuild) with their day in the
 * app's rollup timezone. Only consented events enter analytics.
 */
export function stageSql(where: string): string {
  return `
CREATE TEMP TABLE an_ev ON COMMIT DROP AS
SELECT e.tenant_id, e.app_id, e.environment, e.event_id, e.event_name, e.ts,
       (e.ts AT TIME ZONE coalesce(st.timezone, 'UTC'))::date AS day,
       e.anon_id, e.session_id, e.platform, e.country, p.props,
       CASE e.event_name
         WHEN 'onboarding_flow_started' THEN ${FLAG.onbStarted}
         WHEN 'onboarding_flow_completed' THEN ${FLAG.onbCompleted}
         WHEN 'paywall_view' THEN ${FLAG.paywall}
         WHEN 'app_crash' THEN ${FLAG.crash}
         WHEN 'purchase_completed' THEN CASE WHEN ${IS_TRIAL} THEN ${FLAG.trial} ELSE ${FLAG.paid} END
         ELSE 0 END AS flag
  FROM events e
  LEFT JOIN an_app_state st ON st.app_id = e.app_id
  CROSS JOIN LATERAL (SELECT CASE WHEN e.event_name IN ('purchase_completed', 'purchase_refunded')
                                  THEN e.payload->'properties' END AS props) p
 WHERE e.consent AND ${where}`;
}

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

/** Adds (+) or removes (-) the device-day rows `y` of `from` to / from the active-user histogram. */
export function histDelta(sign: '+' | '-', from: string): string {
  return `
INSERT INTO an_active_hist (tenant_id, app_id, environment, day, platform, country, gap, n)
SELECT y.tenant_id, y.app_id, y.environment, y.day, coalesce(y.platform, 'unknown'), coalesce(y.country, 'unknown'),
       coalesce(y.day - y.prev_day, 100000), ${sign}count(*)::int
  FROM ${from}
 GROUP BY 1, 2, 3, 4, 5, 6, 7
ON CONFLICT (app_id, environment, day, platform, country, gap) DO UPDATE SET n = an_active_hist.n + EXCLUDED.n`;
}


/** Adds (+) or removes (-) the sessions `y` of `from` to / from the session histogram. */
export function sessionDelta(sign: '+' | '-', from: string): string {
  return `
INSERT INTO an_session_hist (tenant_id, app_id, environment, start_day, end_day, platform, country, n, dur)
SELECT y.tenant_id, y.app_id, y.environment, y.start_day, y.end_day, coalesce(y.platform, 'unknown'), coalesce(y.country, 'unknown'),
       ${sign}count(*)::int, ${sign}coalesce(sum(extract(epoch FROM y.end_ts - y.start_ts)), 0)::float8
  FROM ${from}
 GROUP BY 1, 2, 3, 4, 5, 6, 7
ON CONFLICT (app_id, environment, start_day, end_day, platform, country) DO UPDATE
   SET n = an_session_hist.n + EXCLUDED.n, dur = an_session_hist.dur + EXCLUDED.dur`;
}

/**
 * Moves the devices of the batch (an_dev, with their values before it) between new-user cohort
 * cells: an_devices holds their final values once the late ones are recomputed. Devices whose
 * cell did not change (the usual in-order case) cost nothing but the join.
 */
export function cohortDelta(): string {
  const changed = `(c.first_day, c.platform, c.country, c.ret_mask, c.onb_day) IS DISTINCT FROM (c.old_first_day, c.old_platform, c.old_country, c.old_mask, c.old_onb)`;
  return `
WITH c AS (
SELECT a.tenant_id, a.app_id, a.environment, a.existed, a.old_first_day, a.old_platform, a.old_country, a.old_mask, a.old_onb,
       d.first_day, d.platform, d.country, d.ret_mask, d.onb_day
  FROM an_dev a JOIN an_devices d ON d.app_id = a.app_id AND d.environment = a.environment AND d.anon_id = a.anon_id),
delta AS (
SELECT c.tenant_id, c.app_id, c.environment, c.first_day AS fd, coalesce(c.platform, 'unknown') AS p, coalesce(c.country, 'unknown') AS k,
       c.ret_mask AS mask, c.onb_day - c.first_day AS onb, 1 AS sg
  FROM c WHERE NOT c.existed OR ${changed}
UNION ALL
SELECT c.tenant_id, c.app_id, c.environment, c.old_first_day, coalesce(c.old_platform, 'unknown'), coalesce(c.old_country, 'unknown'),
       c.old_mask, c.old_onb - c.old_first_day, -1
  FROM c WHERE c.existed AND ${changed}),
cohorts AS (
INSERT INTO an_cohort_hist (tenant_id, app_id, environment, first_day, platform, country, ret_mask, n)
SELECT tenant_id, app_id, environment, fd, p, k, mask, sum(sg)::int FROM delta GROUP BY 1, 2, 3, 4, 5, 6, 7 HAVING sum(sg) <> 0
ON CONFLICT (app_id, environment, first_day, platform, country, ret_mask) DO UPDATE SET n = an_cohort_hist.n + EXCLUDED.n)
INSERT INTO an_onb_hist (tenant_id, app_id, environment, first_day, platform, country, onb_off, n)
SELECT tenant_id, app_id, environment, fd, p, k, onb, sum(sg)::int FROM delta WHERE onb IS NOT NULL GROUP BY 1, 2, 3, 4, 5, 6, 7 HAVING sum(sg) <> 0
ON CONFLICT (app_id, environment, first_day, platform, country, onb_off) DO UPDATE SET n = an_onb_hist.n + EXCLUDED.n`;
}

/**
 * Adds (+) or removes (-) the flagged days of the devices in an_fr to / from the flag histogram:
 * per flag bit, each flagged day with its gap to the device's previous day with that bit.
 */
export function flagDelta(sign: '+' | '-'): string {
  const bits = Object.values(FLAG).join(',');
  return `
INSERT INTO an_flag_hist (tenant_id, app_id, environment, day, platform, country, flag, gap, n)
SELECT tenant_id, app_id, environment, day, coalesce(platform, 'unknown'), coalesce(country, 'unknown'), bit,
       coalesce(day - prev, 100000), ${sign}count(*)::int
  FROM (SELECT y.tenant_id, y.app_id, y.environment, y.day, y.platform, y.country, f.bit,
               lag(y.day) OVER (PARTITION BY y.app_id, y.environment, y.anon_id, f.bit ORDER BY y.day) AS prev
          FROM an_fr r JOIN an_device_days y ON y.app_id = r.app_id AND y.environment = r.environment AND y.anon_id = r.anon_id
         CROSS JOIN unnest('{${bits}}'::int[]) AS f(bit) WHERE y.flags & f.bit <> 0) z
 GROUP BY 1, 2, 3, 4, 5, 6, 7, 8
ON CONFLICT (app_id, environment, day, platform, country, flag, gap) DO UPDATE SET n = an_flag_hist.n + EXCLUDED.n`;
}
