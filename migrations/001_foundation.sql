CREATE EXTENSION IF NOT EXISTS unaccent;
CREATE EXTENSION IF NOT EXISTS pg_trgm;

CREATE TABLE platform_settings (
  key text PRIMARY KEY,
  value jsonb NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now()
);
INSERT INTO platform_settings (key, value) VALUES ('signup_enabled', 'true');

CREATE TABLE signing_keys (
  kid text PRIMARY KEY,
  -- Unique, so instances starting together agree on one key; rotation adds generation + 1.
  generation integer NOT NULL UNIQUE,
  alg text NOT NULL,
  private_jwk jsonb NOT NULL,
  public_jwk jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE users (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  email text NOT NULL,
  name text,
  password_hash text,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX users_email_key ON users (lower(email));

CREATE TABLE organizations (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  name text NOT NULL,
  runtime_lock jsonb,
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE memberships (
  tenant_id uuid NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
  user_id uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  role text NOT NULL CHECK (role IN ('owner', 'admin', 'member', 'viewer')),
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, user_id)
);
CREATE INDEX memberships_user_idx ON memberships (user_id);

CREATE TABLE apps (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  tenant_id uuid NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
  name text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (tenant_id, id)
);

CREATE TABLE app_settings (
  tenant_id uuid NOT NULL,
  app_id uuid PRIMARY KEY,
  events_per_minute integer NOT NULL DEFAULT 60000,
  sampling_rate double precision NOT NULL DEFAULT 1,
  timezone text NOT NULL DEFAULT 'UTC',
  sdk_settings jsonb NOT NULL DEFAULT '{"flushInterval":30,"batchSize":20,"configTTL":3600}',
  callback_signing_secret text NOT NULL,
  extra jsonb NOT NULL DEFAULT '{}',
  updated_at timestamptz NOT NULL DEFAULT now(),
  FOREIGN KEY (tenant_id, app_id) REFERENCES apps (tenant_id, id) ON DELETE CASCADE
);

CREATE TABLE api_keys (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  tenant_id uuid NOT NULL,
  app_id uuid NOT NULL,
  name text,
  public_key text NOT NULL UNIQUE,
  secret_hash text NOT NULL,
  environment text NOT NULL CHECK (environment IN ('production', 'sandbox')),
  permissions text[] NOT NULL DEFAULT '{}',
  created_by uuid,
  created_at timestamptz NOT NULL DEFAULT now(),
  -- In the future while a rotation overlap runs; the key is revoked from this instant on.
  revoked_at timestamptz,
  replaced_by uuid,
  FOREIGN KEY (tenant_id, app_id) REFERENCES apps (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX api_keys_app_idx ON api_keys (tenant_id, app_id, created_at DESC);

-- Raw events: append-only, partitioned by event time, read by app + environment + time.
CREATE TABLE events (
  seq bigserial,
  tenant_id uuid NOT NULL,
  app_id uuid NOT NULL,
  environment text NOT NULL,
  event_id uuid NOT NULL,
  event_name text NOT NULL,
  ts timestamptz NOT NULL,
  anon_id uuid NOT NULL,
  user_id text,
  session_id uuid,
  platform text,
  country text,
  consent boolean NOT NULL,
  -- json, not jsonb: kept byte-for-byte as received, and converting every payload to jsonb was
  -- 40% of the insert cost. Readers cast (payload::jsonb) where they need jsonb operators.
  payload json NOT NULL,
  received_at timestamptz NOT NULL DEFAULT now()
) PARTITION BY RANGE (ts);
CREATE TABLE events_default PARTITION OF events DEFAULT;
CREATE INDEX events_app_time_idx ON events (app_id, environment, ts, event_id);
-- seq only grows, so a BRIN index finds "rows after a watermark" at a fraction of a btree's insert cost.
CREATE INDEX events_seq_brin ON events USING brin (seq) WITH (pages_per_range = 32);

-- Dedupe is forever, across partitions: a partitioned table cannot hold that unique key itself.
CREATE TABLE event_ids (
  app_id uuid NOT NULL,
  event_id uuid NOT NULL,
  PRIMARY KEY (app_id, event_id)
);

CREATE FUNCTION ensure_event_partitions(from_month date, months integer) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  m date;
  name text;
BEGIN
  -- Instances starting together would race to create the same partition.
  PERFORM pg_advisory_xact_lock(727002);
  FOR i IN 0..months - 1 LOOP
    m := (date_trunc('month', from_month) + make_interval(months => i))::date;
    name := 'events_' || to_char(m, 'YYYY_MM');
    IF to_regclass(name) IS NULL THEN
      EXECUTE format('CREATE TABLE %I PARTITION OF events FOR VALUES FROM (%L) TO (%L)',
        name, m::timestamptz, (m + interval '1 month')::timestamptz);
    END IF;
  END LOOP;
END $$;

SELECT ensure_event_partitions((now() - interval '4 months')::date, 7);

CREATE TABLE identities (
  tenant_id uuid NOT NULL,
  app_id uuid NOT NULL,
  environment text NOT NULL,
  anon_id uuid NOT NULL,
  user_id text NOT NULL,
  ts timestamptz NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (app_id, environment, anon_id)
);
CREATE INDEX identities_user_idx ON identities (app_id, environment, user_id);

CREATE TABLE identity_links (
  id bigserial PRIMARY KEY,
  tenant_id uuid NOT NULL,
  app_id uuid NOT NULL,
  environment text NOT NULL,
  anon_id uuid NOT NULL,
  user_id text NOT NULL,
  ts timestamptz NOT NULL,
  traits jsonb,
  received_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (app_id, environment, anon_id, user_id, ts)
);

CREATE TABLE user_traits (
  tenant_id uuid NOT NULL,
  app_id uuid NOT NULL,
  environment text NOT NULL,
  user_id text NOT NULL,
  traits jsonb NOT NULL DEFAULT '{}',
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (app_id, environment, user_id)
);

-- Domain events for asynchronous consumers (webhooks), written in the producer's transaction.
CREATE TABLE outbox (
  id bigserial PRIMARY KEY,
  tenant_id uuid NOT NULL,
  app_id uuid NOT NULL,
  environment text NOT NULL,
  event_type text NOT NULL,
  payload jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);

-- Option-set values that a recorded answer uses; such a value can no longer change.
CREATE TABLE option_value_locks (
  tenant_id uuid NOT NULL,
  app_id uuid NOT NULL,
  set_id text NOT NULL,
  value text NOT NULL,
  locked_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (app_id, set_id, value)
);

CREATE TABLE activity (
  id bigserial PRIMARY KEY,
  tenant_id uuid NOT NULL,
  app_id uuid NOT NULL,
  entity_type text NOT NULL,
  entity_id text,
  action text NOT NULL,
  description text NOT NULL,
  actor_user_id uuid,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX activity_app_idx ON activity (app_id, created_at DESC, id DESC);
