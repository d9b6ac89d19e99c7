-- Sign-in throttle (src/modules/identity/sign-in-throttle.ts, docs/auth.md): one row per key
-- (an account, a client address, an address's signups). `failures` counts attempts admitted in
-- the current streak (counted when admitted, before the password is checked, so concurrent
-- guesses cannot all slip past the check; a success hands its count back). The lock is derived:
-- once the streak reaches the key's threshold, the key is closed until last_ms + delay, the delay
-- doubling with each further failure up to a cap. A streak ends window_ms after its last failure.
CREATE TABLE sign_in_throttle (
  key text PRIMARY KEY,
  failures int NOT NULL DEFAULT 0,
  last_ms bigint NOT NULL -- epoch ms of the last admitted attempt (the database's clock)
);
CREATE INDEX sign_in_throttle_last ON sign_in_throttle (last_ms);

-- The delay a key waits after `n` failures: none below the threshold, then base doubling per
-- failure, capped.
CREATE FUNCTION sign_in_delay_ms(n int, threshold int, base_ms bigint, max_ms bigint)
RETURNS bigint LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN n < threshold THEN 0
              ELSE least(max_ms::numeric, base_ms * power(2::numeric, least(n - threshold, 40)))::bigint END
$$;

-- Admits one attempt under every key (all or none): returns 0 and counts it under each key, or
-- the milliseconds until the most closed key opens (nothing counted). Keys are locked in order,
-- so overlapping callers never deadlock.
CREATE FUNCTION sign_in_admit(p_keys text[], p_thresholds int[], p_window_ms bigint, p_base_ms bigint, p_max_ms bigint)
RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
  now_ms bigint := (extract(epoch FROM clock_timestamp()) * 1000)::bigint;
  i int;
  r record;
  wait bigint := 0;
BEGIN
  INSERT INTO sign_in_throttle (key, failures, last_ms)
  SELECT k, 0, now_ms FROM unnest(p_keys) AS k ORDER BY k ON CONFLICT (key) DO NOTHING;
  PERFORM 1 FROM sign_in_throttle WHERE key = ANY (p_keys) ORDER BY key FOR UPDATE;
  FOR i IN 1 .. array_length(p_keys, 1) LOOP
    SELECT failures, last_ms INTO r FROM sign_in_throttle WHERE key = p_keys[i];
    IF now_ms - r.last_ms < p_window_ms THEN
      wait := greatest(wait, r.last_ms + sign_in_delay_ms(r.failures, p_thresholds[i], p_base_ms, p_max_ms) - now_ms);
    END IF;
  END LOOP;
  IF wait > 0 THEN RETURN wait; END IF;
  UPDATE sign_in_throttle
     SET failures = CASE WHEN now_ms - last_ms >= p_window_ms THEN 1 ELSE failures + 1 END, last_ms = now_ms
   WHERE key = ANY (p_keys);
  RETURN 0;
END $$;

-- Refresh tokens of the console's sign-in (src/modules/identity/refresh.ts, docs/auth.md). A family
-- is one sign-in: each use rotates its token; presenting a rotated token again revokes the family.
-- Its expires_at is absolute: rotation never extends it.
CREATE TABLE refresh_families (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL,
  revoked_at timestamptz,
  revoked_reason text -- 'logout' | 'reuse'
);
CREATE INDEX refresh_families_user ON refresh_families (user_id);
CREATE INDEX refresh_families_expires ON refresh_families (expires_at);

-- Only the token's SHA-256 is stored: a read of this table signs no one in.
CREATE TABLE refresh_tokens (
  token_hash bytea PRIMARY KEY,
  family_id uuid NOT NULL REFERENCES refresh_families (id) ON DELETE CASCADE,
  created_at timestamptz NOT NULL DEFAULT now(),
  rotated_at timestamptz -- set when used: a rotated token presented again is a reuse
);
CREATE INDEX refresh_tokens_family ON refresh_tokens (family_id);

-- Uses a refresh token once: marks it rotated and stores its successor in the same family.
-- A token already rotated revokes its family (someone holds a copy: the newest token stops
-- working too). The token's row is locked first, then its family's, so two uses of one token
-- are serialised and the second is a reuse.
CREATE FUNCTION refresh_rotate(p_old bytea, p_new bytea)
RETURNS TABLE (o_status text, o_user_id uuid, o_expires_at timestamptz)
LANGUAGE plpgsql AS $$
DECLARE
  t record;
  f record;
BEGIN
  SELECT family_id, rotated_at INTO t FROM refresh_tokens WHERE token_hash = p_old FOR UPDATE;
  IF NOT FOUND THEN
    RETURN QUERY SELECT 'unknown', NULL::uuid, NULL::timestamptz;
    RETURN;
  END IF;
  SELECT id, user_id, expires_at, revoked_at INTO f FROM refresh_families WHERE id = t.family_id FOR UPDATE;
  IF f.revoked_at IS NOT NULL OR f.expires_at <= now() THEN
    RETURN QUERY SELECT CASE WHEN f.revoked_at IS NOT NULL THEN 'revoked' ELSE 'expired' END, f.user_id, f.expires_at;
    RETURN;
  END IF;
  IF t.rotated_at IS NOT NULL THEN
    UPDATE refresh_families SET revoked_at = now(), revoked_reason = 'reuse' WHERE id = f.id;
    RETURN QUERY SELECT 'reused', f.user_id, f.expires_at;
    RETURN;
  END IF;
  UPDATE refresh_tokens SET rotated_at = now() WHERE token_hash = p_old;
  INSERT INTO refresh_tokens (token_hash, family_id) VALUES (p_new, f.id);
  RETURN QUERY SELECT 'ok', f.user_id, f.expires_at;
END $$;
