-- Ad-network connection (one per app), OAuth state, ad accounts, write journal, stats, experiments.

CREATE TABLE ad_network_connections (
  tenant_id uuid NOT NULL,
  app_id uuid NOT NULL,
  status text NOT NULL CHECK (status IN ('connected', 'reauth_required', 'disconnected')),
  -- AES-256-GCM (iv | tag | ciphertext) under config.encryptionKey; never stored in clear.
  refresh_token_enc bytea,
  access_token_enc bytea,
  access_expires_at timestamptz,
  access_lifetime_s integer,
  scope text,
  organization_ids text[] NOT NULL DEFAULT '{}',
  connected_by uuid,
  connected_at timestamptz,
  last_error text,
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, app_id)
);

-- One pending authorization per start; single use, short-lived. The PKCE verifier is encrypted.
CREATE TABLE ad_network_oauth_states (
  state_hash text PRIMARY KEY,
  tenant_id uuid NOT NULL,
  app_id uuid NOT NULL,
  user_id uuid NOT NULL,
  verifier_enc bytea NOT NULL,
  expires_at timestamptz NOT NULL,
  used_at timestamptz
);
CREATE INDEX ad_network_oauth_states_app_idx ON ad_network_oauth_states (tenant_id, app_id);

CREATE TABLE ad_network_accounts (
  tenant_id uuid NOT NULL,
  app_id uuid NOT NULL,
  id text NOT NULL,
  organization_id text NOT NULL,
  name text NOT NULL,
  currency text NOT NULL,
  timezone text NOT NULL,
  status text NOT NULL,
  live_writes boolean NOT NULL DEFAULT false,
  live_writes_changed_by uuid,
  live_writes_changed_at timestamptz,
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, app_id, id)
);

-- Every write we make (or would make, in dry-run) keyed by its Idempotency-Key, recorded before sending.
CREATE TABLE ad_network_writes (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  tenant_id uuid NOT NULL,
  app_id uuid NOT NULL,
  ad_account_id text NOT NULL,
  idempotency_key text NOT NULL,
  kind text NOT NULL,
  op text NOT NULL,
  request jsonb NOT NULL,
  status text NOT NULL CHECK (status IN ('dry_run', 'pending', 'succeeded', 'failed')),
  remote_id text,
  result jsonb,
  error text,
  actor_user_id uuid,
  created_at timestamptz NOT NULL DEFAULT now(),
  completed_at timestamptz,
  UNIQUE (tenant_id, app_id, idempotency_key)
);
CREATE INDEX ad_network_writes_recent_idx ON ad_network_writes (tenant_id, app_id, created_at DESC);

-- Last polled state of network objects, so the hourly sync reports changes once.
CREATE TABLE ad_network_states (
  tenant_id uuid NOT NULL,
  app_id uuid NOT NULL,
  kind text NOT NULL,
  id text NOT NULL,
  state text NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, app_id, kind, id)
);

-- DAY stats in the account's local days. Spend kept native (micro and units), with the USD rate used.
CREATE TABLE ad_network_stats (
  tenant_id uuid NOT NULL,
  app_id uuid NOT NULL,
  ad_account_id text NOT NULL,
  entity_type text NOT NULL CHECK (entity_type IN ('campaign', 'adsquad')),
  entity_id text NOT NULL,
  day date NOT NULL,
  impressions bigint NOT NULL,
  swipes bigint NOT NULL,
  view_completion bigint NOT NULL,
  conversion_purchases bigint NOT NULL,
  spend_local_micro bigint NOT NULL,
  spend_local numeric NOT NULL,
  currency text NOT NULL,
  -- NULL when no rate is known for the currency yet (an operator can load one; the next pull fills it).
  usd_rate double precision,
  rate_day date,
  spend_usd numeric,
  pulled_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, app_id, entity_type, entity_id, day)
);
CREATE INDEX ad_network_stats_day_idx ON ad_network_stats (tenant_id, app_id, day);

CREATE TABLE ad_network_experiments (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  tenant_id uuid NOT NULL,
  app_id uuid NOT NULL,
  ad_account_id text NOT NULL,
  campaign_id text NOT NULL,
  name text NOT NULL,
  status text NOT NULL CHECK (status IN ('running', 'stopped')),
  dry_run boolean NOT NULL,
  idempotency_key text NOT NULL,
  created_by uuid,
  created_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (tenant_id, app_id, idempotency_key)
);
CREATE INDEX ad_network_experiments_app_idx ON ad_network_experiments (tenant_id, app_id, created_at DESC);

CREATE TABLE ad_network_experiment_variants (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  experiment_id uuid NOT NULL REFERENCES ad_network_experiments(id) ON DELETE CASCADE,
  tenant_id uuid NOT NULL,
  app_id uuid NOT NULL,
  position integer NOT NULL,
  name text NOT NULL,
  role text NOT NULL CHECK (role IN ('control', 'treatment')),
  creative_id text NOT NULL,
  adsquad_id text NOT NULL,
  ad_id text,
  status text NOT NULL CHECK (status IN ('ACTIVE', 'PAUSED')),
  UNIQUE (experiment_id, position)
);
