-- sign_in_admit read the clock before waiting for the keys' row locks: a caller that waited behind
-- a concurrent admission then saw that caller's later last_ms, and "last_ms - now" (no delay below
-- the threshold) came out as a positive wait, a spurious 429 for two signups sent at once from one
-- address. The clock is now read once the keys are locked, and a key below its threshold never waits.
CREATE OR REPLACE FUNCTION sign_in_admit(p_keys text[], p_thresholds int[], p_window_ms bigint, p_base_ms bigint, p_max_ms bigint)
RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
  now_ms bigint;
  i int;
  r record;
  delay bigint;
  wait bigint := 0;
BEGIN
  INSERT INTO sign_in_throttle (key, failures, last_ms)
  SELECT k, 0, (extract(epoch FROM clock_timestamp()) * 1000)::bigint
    FROM unnest(p_keys) AS k ORDER BY k ON CONFLICT (key) DO NOTHING;
  PERFORM 1 FROM sign_in_throttle WHERE key = ANY (p_keys) ORDER BY key FOR UPDATE;
  now_ms := (extract(epoch FROM clock_timestamp()) * 1000)::bigint;
  FOR i IN 1 .. array_length(p_keys, 1) LOOP
    SELECT failures, last_ms INTO r FROM sign_in_throttle WHERE key = p_keys[i];
    delay := sign_in_delay_ms(r.failures, p_thresholds[i], p_base_ms, p_max_ms);
    IF delay > 0 AND now_ms - r.last_ms < p_window_ms THEN
      wait := greatest(wait, r.last_ms + delay - now_ms);
    END IF;
  END LOOP;
  IF wait > 0 THEN RETURN wait; END IF;
  UPDATE sign_in_throttle
     SET failures = CASE WHEN now_ms - last_ms >= p_window_ms THEN 1 ELSE failures + 1 END,
         last_ms = greatest(last_ms, now_ms)
   WHERE key = ANY (p_keys);
  RETURN 0;
END $$;
