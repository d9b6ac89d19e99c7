import { FLAG } from './fold-sql.js';

/** The fold's purchase statements: purchase rows and the revenue histogram's deltas. */

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
 * The batch's purchases, in USD at their day's rate (NULL until their currency has one), with the
 * subscription's period end and monthly amount; the new ones enter the revenue histogram's delta.
 */
export const INSERT_PURCHASES = `
WITH ins AS (
INSERT INTO an_purchases (tenant_id, app_id, environment, event_id, anon_id, platform, country, kind, ts, day,
                          price, currency, amount_usd, period, period_end, mrr_usd)
SELECT v.tenant_id, v.app_id, v.environment, v.event_id, v.anon_id, d.platform, d.country, v.kind, v.ts, v.day,
       v.price, v.currency, v.price * r.rate, v.period,
       CASE WHEN v.kind = 'paid' THEN an_period_end(v.day, v.period) END,
       CASE WHEN v.kind = 'paid' THEN an_monthly(v.price * r.rate, v.period) END
  FROM (SELECT tenant_id, app_id, environment, event_id, anon_id, ts, day,
               CASE WHEN event_name = 'purchase_refunded' THEN 'refund' WHEN flag = ${FLAG.trial} THEN 'trial' ELSE 'paid' END AS kind,
               CASE WHEN jsonb_typeof(props->'price') = 'number' AND (props->>'price')::float8 BETWEEN 0 AND 1e12
                    THEN (props->>'price')::float8 ELSE 0 END AS price,
               upper(left(CASE WHEN jsonb_typeof(props->'currency') = 'string' THEN props->>'currency' ELSE 'USD' END, 8)) AS currency,
               CASE WHEN jsonb_typeof(props->'period') = 'string' THEN left(props->>'period', 16) END AS period
          FROM an_ev WHERE event_name IN ('purchase_completed', 'purchase_refunded')) v
  -- an_dev (small, analyzed) has the devices' final platform/country; joining the big an_devices
  -- right after it was emptied (a rebuild, a crash) planned a nested loop of seq scans: minutes.
  JOIN an_dev d ON d.app_id = v.app_id AND d.environment = v.environment AND d.anon_id = v.anon_id
  CROSS JOIN LATERAL (SELECT usd_rate(v.currency, v.day) AS rate) r
ON CONFLICT (app_id, environment, event_id) DO NOTHING
RETURNING tenant_id, app_id, environment, day, platform, country, kind, period_end, amount_usd, mrr_usd)
${revenueDelta('+', 'ins y')}`;
