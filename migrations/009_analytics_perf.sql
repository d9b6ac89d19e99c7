-- Analytics fold performance (issue 7).

-- The rollups are derived data: every row can be recomputed from `events`. UNLOGGED skips the WAL
-- for the fold's writes (a large share of its cost). After a crash PostgreSQL empties unlogged
-- tables; the fold state is unlogged too, so it empties with them, the runner re-creates the state
-- row at watermark 0 and refolds every event: rollups and watermark never disagree. (Unlogged
-- tables are not replicated: dashboards read the primary.)
ALTER TABLE an_rollup_state SET UNLOGGED;
ALTER TABLE an_devices SET UNLOGGED;
ALTER TABLE an_device_days SET UNLOGGED;
ALTER TABLE an_active_hist SET UNLOGGED;
ALTER TABLE an_sessions SET UNLOGGED;
ALTER TABLE an_session_hist SET UNLOGGED;
ALTER TABLE an_purchases SET UNLOGGED;
ALTER TABLE an_steps SET UNLOGGED;

-- No read uses it; every index costs the fold one random insert per session.
DROP INDEX IF EXISTS an_sessions_day_idx;

-- Per-device look-ups (late devices, a moved first event, funnel steps) are equality only. A btree
-- on anon_id takes one random insert per row (measured: the costliest part of the fold's
-- inserts); a hash index is about 3x cheaper to maintain and serves the same look-ups.
DROP INDEX IF EXISTS an_sessions_device_idx;
CREATE INDEX an_sessions_anon_idx ON an_sessions USING hash (anon_id);
DROP INDEX IF EXISTS an_device_days_device_idx;
CREATE INDEX an_device_days_anon_idx ON an_device_days USING hash (anon_id);
DROP INDEX IF EXISTS an_steps_device_idx;
CREATE INDEX an_steps_anon_idx ON an_steps USING hash (anon_id);

-- New-user cohorts pre-aggregated per first day: `new_users`, `retention_dN` and the retention
-- endpoint sum a few cells per day instead of visiting every device row. Kept in step with
-- an_devices by the fold (the devices a batch touches leave their old cell and enter the new one).
CREATE UNLOGGED TABLE an_cohort_hist (
  tenant_id uuid NOT NULL,
  app_id uuid NOT NULL,
  environment text NOT NULL,
  first_day date NOT NULL,
  platform text NOT NULL,
  country text NOT NULL,
  ret_mask integer NOT NULL,
  n integer NOT NULL,
  PRIMARY KEY (app_id, environment, first_day, platform, country, ret_mask)
);
-- Devices with onboarding started, per first day and days from first day to the first start
-- (onboarding_start_rate: started by the window's end).
CREATE UNLOGGED TABLE an_onb_hist (
  tenant_id uuid NOT NULL,
  app_id uuid NOT NULL,
  environment text NOT NULL,
  first_day date NOT NULL,
  platform text NOT NULL,
  country text NOT NULL,
  onb_off integer NOT NULL,
  n integer NOT NULL,
  PRIMARY KEY (app_id, environment, first_day, platform, country, onb_off)
);
INSERT INTO an_cohort_hist (tenant_id, app_id, environment, first_day, platform, country, ret_mask, n)
SELECT tenant_id, app_id, environment, first_day, coalesce(platform, 'unknown'), coalesce(country, 'unknown'), ret_mask, count(*)
  FROM an_devices GROUP BY 1, 2, 3, 4, 5, 6, 7;
INSERT INTO an_onb_hist (tenant_id, app_id, environment, first_day, platform, country, onb_off, n)
SELECT tenant_id, app_id, environment, first_day, coalesce(platform, 'unknown'), coalesce(country, 'unknown'), onb_day - first_day, count(*)
  FROM an_devices WHERE onb_day IS NOT NULL GROUP BY 1, 2, 3, 4, 5, 6, 7;

-- Distinct users with a flag (onboarding started/completed, paywall, trial, paid, crash) over any
-- window, as for active users: flagged device-days per day, platform, country, flag bit and gap
-- (days since the device's previous day with that flag; 100000 on its first). Users with flag f in
-- [s, e] = sum of n over days in [s, e] with gap > day - s. Replaces the read of flagged device-days.
CREATE UNLOGGED TABLE an_flag_hist (
  tenant_id uuid NOT NULL,
  app_id uuid NOT NULL,
  environment text NOT NULL,
  day date NOT NULL,
  platform text NOT NULL,
  country text NOT NULL,
  flag integer NOT NULL,
  gap integer NOT NULL,
  n integer NOT NULL,
  PRIMARY KEY (app_id, environment, day, platform, country, flag, gap)
);
INSERT INTO an_flag_hist (tenant_id, app_id, environment, day, platform, country, flag, gap, n)
SELECT tenant_id, app_id, environment, day, coalesce(platform, 'unknown'), coalesce(country, 'unknown'), bit, coalesce(day - prev, 100000), count(*)
  FROM (SELECT y.tenant_id, y.app_id, y.environment, y.day, y.platform, y.country, f.bit,
               lag(y.day) OVER (PARTITION BY y.app_id, y.environment, y.anon_id, f.bit ORDER BY y.day) AS prev
          FROM an_device_days y CROSS JOIN unnest('{1,2,4,8,16,32}'::int[]) AS f(bit) WHERE y.flags & f.bit <> 0) z
 GROUP BY 1, 2, 3, 4, 5, 6, 7, 8;
-- No read uses flagged device-days any more.
DROP INDEX IF EXISTS an_device_days_flags_idx;
