-- Analytics fold throughput (issue 7), part 2.

-- Per device and flag bit, the latest day with that bit (flag_last_<bit>; NULL = never). A batch
-- whose new flagged days of a device all come after these (ingestion order: the normal case) adds
-- their flag-histogram rows directly, gap = day - previous flagged day, without re-reading the
-- device's history. IF NOT EXISTS: idempotent when applied by hand to a running database.
ALTER TABLE an_devices
  ADD COLUMN IF NOT EXISTS flag_last_1 date,
  ADD COLUMN IF NOT EXISTS flag_last_2 date,
  ADD COLUMN IF NOT EXISTS flag_last_4 date,
  ADD COLUMN IF NOT EXISTS flag_last_8 date,
  ADD COLUMN IF NOT EXISTS flag_last_16 date,
  ADD COLUMN IF NOT EXISTS flag_last_32 date;

UPDATE an_devices d
   SET flag_last_1 = s.f1, flag_last_2 = s.f2, flag_last_4 = s.f4, flag_last_8 = s.f8, flag_last_16 = s.f16, flag_last_32 = s.f32
  FROM (SELECT app_id, environment, anon_id,
               max(day) FILTER (WHERE flags & 1 <> 0) AS f1, max(day) FILTER (WHERE flags & 2 <> 0) AS f2,
               max(day) FILTER (WHERE flags & 4 <> 0) AS f4, max(day) FILTER (WHERE flags & 8 <> 0) AS f8,
               max(day) FILTER (WHERE flags & 16 <> 0) AS f16, max(day) FILTER (WHERE flags & 32 <> 0) AS f32
          FROM an_device_days WHERE flags <> 0 GROUP BY app_id, environment, anon_id) s
 WHERE d.app_id = s.app_id AND d.environment = s.environment AND d.anon_id = s.anon_id;
