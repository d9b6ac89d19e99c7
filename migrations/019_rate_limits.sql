-- Global rate limits: every API instance reserves chunks of a key's budget here and spends them
-- locally (src/http/rate-limit.ts). A row is one fixed window of one key; `granted` is what the
-- instances together reserved in it. The sliding limit weighs the previous window's grants by how
-- much of it still overlaps the sliding minute, as the in-process limiter did.
CREATE TABLE rate_limit_windows (
  key text NOT NULL,
  window_start bigint NOT NULL, -- epoch ms
  granted bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (key, window_start)
);

-- Grants up to `want` (at least `need`, else nothing) of the key's budget at `now_ms`.
-- Returns the grant and what is left of the budget after it. The row lock serialises instances.
CREATE FUNCTION rate_limit_take(p_key text, p_now_ms bigint, p_window_ms bigint, p_limit bigint, p_want bigint, p_need bigint)
RETURNS TABLE (grant_n bigint, left_n bigint)
LANGUAGE plpgsql AS $$
DECLARE
  w_start bigint := p_now_ms - p_now_ms % p_window_ms;
  prev bigint;
  cur bigint;
  budget bigint;
  g bigint;
BEGIN
  SELECT granted INTO prev FROM rate_limit_windows WHERE key = p_key AND window_start = w_start - p_window_ms;
  INSERT INTO rate_limit_windows (key, window_start) VALUES (p_key, w_start) ON CONFLICT DO NOTHING;
  SELECT granted INTO cur FROM rate_limit_windows WHERE key = p_key AND window_start = w_start FOR UPDATE;
  budget := floor(p_limit - coalesce(prev, 0) * (1 - (p_now_ms - w_start)::float8 / p_window_ms))::bigint - cur;
  g := least(p_want, greatest(budget, 0));
  IF g < p_need THEN g := 0; END IF;
  IF g > 0 THEN
    UPDATE rate_limit_windows SET granted = granted + g WHERE key = p_key AND window_start = w_start;
  END IF;
  RETURN QUERY SELECT g, greatest(budget - g, 0);
END $$;

-- Ad-network calls: exact sliding logs shared by every instance (the network counts calls in the
-- last second exactly). One row per call; rows older than a minute are swept by the callers.
CREATE TABLE ad_network_call_log (
  key text NOT NULL,
  at_ms bigint NOT NULL
);
CREATE INDEX ad_network_call_log_key ON ad_network_call_log (key, at_ms);

-- All keys must allow the call before any records it, so a refused call uses no quota. Returns 0
-- when the call is recorded, else the milliseconds until the fullest key has room.
CREATE FUNCTION ad_network_take(p_keys text[], p_limits int[], p_windows_ms int[], p_now_ms bigint)
RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
  i int;
  wait bigint := 0;
  nth bigint;
BEGIN
  -- Locks in key order, so two callers of overlapping keys never deadlock.
  PERFORM pg_advisory_xact_lock(hashtext('ad-network:' || k)) FROM unnest(p_keys) AS k ORDER BY k;
  FOR i IN 1 .. array_length(p_keys, 1) LOOP
    SELECT at_ms INTO nth FROM ad_network_call_log
     WHERE key = p_keys[i] AND at_ms > p_now_ms - p_windows_ms[i]
     ORDER BY at_ms DESC OFFSET p_limits[i] - 1 LIMIT 1;
    IF nth IS NOT NULL THEN wait := greatest(wait, nth + p_windows_ms[i] - p_now_ms); END IF;
  END LOOP;
  IF wait > 0 THEN RETURN wait; END IF;
  INSERT INTO ad_network_call_log (key, at_ms) SELECT k, p_now_ms FROM unnest(p_keys) AS k;
  RETURN 0;
END $$;
