-- Analytics fold in the worker process (issue 7): the fold groups a round's events in JavaScript
-- and keeps each device's active days in its an_devices row, as one sorted int4[]:
-- (day - 2000-01-01) x 64 + the day's flag bits (1 onboarding_flow_started, 2 onboarding_flow_completed,
-- 4 paywall_view, 8 trial, 16 paid purchase, 32 app_crash). One row per device replaces a row per
-- device and active day (an_device_days): a device's history is read and written as one row, and
-- no index entry is written per device-day. The per-flag latest days are derived from the array.
ALTER TABLE an_devices ADD COLUMN IF NOT EXISTS days integer[] NOT NULL DEFAULT '{}';
UPDATE an_devices d SET days = s.days
  FROM (SELECT anon_id, app_id, environment, array_agg((day - date '2000-01-01') * 64 + (flags & 63) ORDER BY day) AS days
          FROM an_device_days GROUP BY 1, 2, 3) s
 WHERE d.anon_id = s.anon_id AND d.app_id = s.app_id AND d.environment = s.environment;
ALTER TABLE an_devices
  DROP COLUMN IF EXISTS flag_last_1, DROP COLUMN IF EXISTS flag_last_2, DROP COLUMN IF EXISTS flag_last_4,
  DROP COLUMN IF EXISTS flag_last_8, DROP COLUMN IF EXISTS flag_last_16, DROP COLUMN IF EXISTS flag_last_32;
DROP TABLE IF EXISTS an_device_days;
