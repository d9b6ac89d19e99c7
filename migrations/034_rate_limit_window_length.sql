-- Global rate limits: each window row records its own length, so a sweep forgets only the windows
-- that no longer weigh (neither the current one nor the previous one), by their own length. The
-- sweep used to take the sweeping instance's longest window instead: an instance whose limits all
-- last a minute deleted another instance's longer windows three minutes in, and their budget started
-- over while they ran.
ALTER TABLE rate_limit_windows ADD COLUMN window_ms bigint NOT NULL DEFAULT 60000;

CREATE OR REPLACE FUNCTION rate_limit_take(p_key text, p_now_ms bigint, p_window_ms bigint, p_limit bigint, p_want bigint, p_need bigint)
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
  INSERT INTO rate_limit_windows (key, window_start, window_ms) VALUES (p_key, w_start, p_window_ms)
    ON CONFLICT DO NOTHING;
  SELECT granted INTO cur FROM rate_limit_windows WHERE key = p_key AND window_start = w_start FOR UPDATE;
  budget := floor(p_limit - coalesce(prev, 0) * (1 - (p_now_ms - w_start)::float8 / p_window_ms))::bigint - cur;
  g := least(p_want, greatest(budget, 0));
  IF g < p_need THEN g := 0; END IF;
  IF g > 0 THEN
    UPDATE rate_limit_windows SET granted = granted + g WHERE key = p_key AND window_start = w_start;
  END IF;
  RETURN QUERY SELECT g, greatest(budget - g, 0);
END $$;
