-- The fold runs as device partitions in parallel: each partition folds the devices whose
-- anon_id hashes to it, in its own transaction on its own connection (store.ts). Every row keyed
-- by a device (devices, device-days, steps, purchases) only ever changes in its partition; the
-- shared histogram cells are updated at the end of each transaction in one fixed order (fold-sql.ts).

-- One fold position per partition: every event of the partition's devices with seq <= watermark
-- has been folded exactly once. Row id = partition number.
ALTER TABLE an_rollup_state DROP CONSTRAINT IF EXISTS an_rollup_state_id_check;
UPDATE an_rollup_state SET id = 0 WHERE id = 1;
ALTER TABLE an_rollup_state ADD CONSTRAINT an_rollup_state_part_check CHECK (id BETWEEN 0 AND 63);
INSERT INTO an_rollup_state (id, watermark, folded_at, events_folded)
SELECT 1, watermark, folded_at, 0 FROM an_rollup_state WHERE id = 0
ON CONFLICT (id) DO NOTHING;

-- The device's last folded event and its session: a batch's session is looked up only when it can
-- already be stored (it starts before that event, or continues that session).
ALTER TABLE an_devices ADD COLUMN last_ts timestamptz, ADD COLUMN last_session uuid;


-- Every fold round updates the row of each device it saw. Free space on the page lets those be
-- HOT updates (no new index entries while first_day stays).
ALTER TABLE an_devices SET (fillfactor = 80);
