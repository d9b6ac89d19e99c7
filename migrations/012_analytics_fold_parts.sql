-- The fold runs as device partitions in parallel: each partition folds the devices whose
-- anon_id hashes to it, in its own transaction on its own connection (store.ts). Every row keyed
-- by a device (devices, device-days, steps, purchases) only ever changes in its partition.

-- One fold position per partition: every event of the partition's devices with seq <= watermark
-- has been folded exactly once. Row id = partition number.
ALTER TABLE an_rollup_state DROP CONSTRAINT IF EXISTS an_rollup_state_id_check;
UPDATE an_rollup_state SET id = 0 WHERE id = 1;
ALTER TABLE an_rollup_state ADD CONSTRAINT an_rollup_state_part_check CHECK (id BETWEEN 0 AND 63);
INSERT INTO an_rollup_state (id, watermark, folded_at, events_folded)
SELECT 1, watermark, folded_at, 0 FROM an_rollup_state WHERE id = 0
ON CONFLICT (id) DO NOTHING;

-- Histogram cells are shared by all devices: each partition writes its own copy of a cell, so
-- concurrent partitions never wait on (or deadlock over) one row. Reads sum n over the copies as
-- they already sum over platforms and countries.
ALTER TABLE an_active_hist ADD COLUMN part smallint NOT NULL DEFAULT 0;
ALTER TABLE an_active_hist DROP CONSTRAINT an_active_hist_pkey,
  ADD PRIMARY KEY (app_id, environment, day, platform, country, gap, part);
ALTER TABLE an_session_hist ADD COLUMN part smallint NOT NULL DEFAULT 0;
ALTER TABLE an_session_hist DROP CONSTRAINT an_session_hist_pkey,
  ADD PRIMARY KEY (app_id, environment, start_day, end_day, platform, country, part);
ALTER TABLE an_cohort_hist ADD COLUMN part smallint NOT NULL DEFAULT 0;
ALTER TABLE an_cohort_hist DROP CONSTRAINT an_cohort_hist_pkey,
  ADD PRIMARY KEY (app_id, environment, first_day, platform, country, ret_mask, part);
ALTER TABLE an_onb_hist ADD COLUMN part smallint NOT NULL DEFAULT 0;
ALTER TABLE an_onb_hist DROP CONSTRAINT an_onb_hist_pkey,
  ADD PRIMARY KEY (app_id, environment, first_day, platform, country, onb_off, part);
ALTER TABLE an_flag_hist ADD COLUMN part smallint NOT NULL DEFAULT 0;
ALTER TABLE an_flag_hist DROP CONSTRAINT an_flag_hist_pkey,
  ADD PRIMARY KEY (app_id, environment, day, platform, country, flag, gap, part);

-- The device's last folded event and its session: a batch's session is looked up only when it can
-- already be stored (it starts before that event, or continues that session).
ALTER TABLE an_devices ADD COLUMN last_ts timestamptz, ADD COLUMN last_session uuid;

