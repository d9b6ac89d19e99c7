/**
 * The analytics benches' generated app: $3 events for $4 devices over the last 90 days, inserted
 * in event-time order (as SDK traffic arrives) into app $2 of tenant $1. A device's first day is
 * its number mod 90. With $5 = 0 its events spread over the days from then to today, so most
 * device-days and sessions hold about one event (the worst case for the fold: one session and one
 * device-day row per event). With $5 = N > 0 the device is active on at most N days (picked from
 * the same range), each day one session of up to 30 minutes: with 10 events per device and N = 2,
 * sessions of about 5 events, as SDK traffic has (session_start, app_open, screen views...). 10% session_start, 10% app_open, 5% paywall_view, onboarding and
 * purchase events (a quarter of purchases are trials, a third in EUR), 65% screen_view.
 */
export const GENERATE = `
INSERT INTO events (tenant_id, app_id, environment, event_id, event_name, ts, anon_id, session_id, platform, country, consent, payload, received_at)
SELECT $1, $2, 'production', gen_random_uuid(), g.name, g.ts, g.anon, g.sess, g.plat, g.ctry, true,
       json_build_object('schema_version', 1, 'event_name', g.name, 'ts_ms', (extract(epoch FROM g.ts) * 1000)::bigint,
         'user', json_build_object('anon_id', g.anon),
         'device', json_build_object('platform', g.plat, 'os', '17.4', 'app_version', '1.2.3', 'sdk_version', '2.0.0', 'locale', 'en_US', 'country', g.ctry),
         'context', json_build_object('session_id', g.sess, 'screen', 'home'),
         'properties', CASE WHEN g.name LIKE 'purchase_%' THEN json_build_object('price', 9.99, 'currency', CASE WHEN g.k % 3 = 0 THEN 'EUR' ELSE 'USD' END,
                                                                            'period', 'P1M', 'is_trial', g.k % 4 = 0)
                            ELSE json_build_object('button', 'continue') END,
         'privacy', json_build_object('consent', json_build_object('analytics', true))),
       now()
  FROM (
    SELECT k, d, md5('dev' || d)::uuid AS anon, md5(d || '-' || day)::uuid AS sess,
           CASE WHEN d % 2 = 0 THEN 'ios' ELSE 'android' END AS plat,
           (ARRAY['US', 'DE', 'FR', 'JP', 'BR', 'IN', 'GB', 'CA'])[1 + d % 8] AS ctry,
           least(date_trunc('day', now()) - interval '89 days' + day * interval '1 day'
                   + CASE WHEN $5::int = 0 THEN abs(hashint4(k * 13)) % 86400
                          ELSE abs(hashint4(d * 17 + day)) % 84600 + abs(hashint4(k * 13)) % 1800 END * interval '1 second',
                 now() - interval '1 minute') AS ts,
           CASE WHEN r < 100 THEN 'session_start' WHEN r < 200 THEN 'app_open' WHEN r < 250 THEN 'paywall_view'
                WHEN r < 280 THEN 'onboarding_flow_started' WHEN r < 300 THEN 'onboarding_step_completed'
                WHEN r < 320 THEN 'onboarding_flow_completed' WHEN r < 330 THEN 'purchase_started'
                WHEN r < 340 THEN 'purchase_completed' WHEN r < 341 THEN 'purchase_refunded'
                WHEN r < 346 THEN 'app_crash' ELSE 'screen_view' END AS name
      FROM generate_series(1, $3::int) AS k
      CROSS JOIN LATERAL (SELECT abs(hashint4(k)) % $4::int AS d, abs(hashint4(k * 7)) % 1000 AS r) a
      -- A device's first day is d % 90; its events spread over the days from then to today ($5 = 0) or over at most $5 of them.
      CROSS JOIN LATERAL (SELECT (d % 90) + CASE WHEN $5::int = 0 THEN abs(hashint4(k * 31)) % (90 - d % 90)
                                                 ELSE abs(hashint4(d * 31 + abs(hashint4(k * 31)) % $5::int)) % (90 - d % 90) END AS day) b
  ) g
 -- Ingestion order follows event time, as it does for real SDK traffic (late events are the exception).
 ORDER BY g.ts`;
