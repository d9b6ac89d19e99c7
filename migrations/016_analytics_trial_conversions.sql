-- trial_to_paid kept on the trial rows: paid_ts is the device's first paid purchase at or after the
-- trial and within 720 h (the fold's TRIAL_CONVERSIONS keeps it). The read then counts conversions
-- from the window's trials alone, where it hash-joined every paid purchase of the window and two
-- months after it with them (measured at 10M events: 100 ms of the KPI request's 290 ms of queries).
ALTER TABLE an_purchases ADD COLUMN paid_ts timestamptz;
UPDATE an_purchases t SET paid_ts = c.fp
  FROM (SELECT t.app_id, t.environment, t.event_id, min(p.ts) AS fp
          FROM an_purchases t
          JOIN an_purchases p ON p.app_id = t.app_id AND p.environment = t.environment AND p.anon_id = t.anon_id
           AND p.kind = 'paid' AND p.ts >= t.ts AND p.ts <= t.ts + interval '720 hours'
         WHERE t.kind = 'trial'
         GROUP BY 1, 2, 3) c
 WHERE t.app_id = c.app_id AND t.environment = c.environment AND t.event_id = c.event_id;
DROP INDEX IF EXISTS an_purchases_trial_idx;
CREATE INDEX an_purchases_trial_idx ON an_purchases (app_id, environment, day)
  INCLUDE (anon_id, ts, paid_ts, platform, country, tenant_id) WHERE kind = 'trial';
