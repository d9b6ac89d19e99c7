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
