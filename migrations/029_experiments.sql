-- Experiments (issue 35): the resource, and the state the experiment fold keeps per
-- (experiment, environment, device), so results never read raw events.

CREATE TABLE experiments (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  tenant_id uuid NOT NULL,
  app_id uuid NOT NULL,
  key text NOT NULL,
  name text NOT NULL,
  hypothesis text,
  -- [{ key, weight, value }], the first is the control; frozen once started.
  variants jsonb NOT NULL,
  coverage_pct integer NOT NULL CHECK (coverage_pct BETWEEN 1 AND 100),
  targeting jsonb,
  primary_metric text NOT NULL,
  secondary_metrics text[] NOT NULL DEFAULT '{}',
  guardrail_metrics text[] NOT NULL DEFAULT '{}',
  attribution_days integer NOT NULL CHECK (attribution_days BETWEEN 1 AND 90),
  sequential_tuning integer NOT NULL,
  status text NOT NULL DEFAULT 'draft' CHECK (status IN ('draft', 'running', 'stopped', 'shipped')),
  started_at timestamptz,
  stopped_at timestamptz,
  shipped_at timestamptz,
  shipped_variant text,
  created_by uuid,
  updated_by uuid,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (app_id, key),
  FOREIGN KEY (tenant_id, app_id) REFERENCES apps (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX experiments_list_idx ON experiments (app_id, created_at DESC, id);
CREATE INDEX experiments_live_idx ON experiments (app_id) WHERE status <> 'draft';

-- The experiment fold's position: every event with seq <= watermark has been folded exactly once.
CREATE TABLE exp_fold_state (
  id integer PRIMARY KEY CHECK (id = 0),
  watermark bigint NOT NULL DEFAULT 0,
  folded_at timestamptz,
  events_folded bigint NOT NULL DEFAULT 0
);
INSERT INTO exp_fold_state (id) VALUES (0);

-- The metric events (purchases, refunds, onboarding completions, the event:<name> metrics) of apps
-- with a started experiment, whatever the device: a late exposure that moves a device's first
-- exposure earlier recomputes that device from these rows alone (events has no per-device index).
CREATE TABLE exp_events (
  tenant_id uuid NOT NULL,
  app_id uuid NOT NULL,
  environment text NOT NULL,
  anon_id uuid NOT NULL,
  ts timestamptz NOT NULL,
  event_id uuid NOT NULL,
  event_name text NOT NULL,
  is_trial boolean NOT NULL,
  price double precision NOT NULL,
  currency text NOT NULL,
  PRIMARY KEY (app_id, environment, anon_id, ts, event_id)
);

-- One row per exposed device of an experiment: first exposure t0, the variant seen (multi when
-- more than one), the smallest coverage at which all its exposures match the recomputed assignment
-- (101: never), and the per-device metric inputs inside [t0, t0 + attribution window).
CREATE TABLE exp_devices (
  experiment_id uuid NOT NULL REFERENCES experiments (id) ON DELETE CASCADE,
  environment text NOT NULL,
  anon_id uuid NOT NULL,
  tenant_id uuid NOT NULL,
  app_id uuid NOT NULL,
  t0 timestamptz NOT NULL,
  variant text NOT NULL,
  multi boolean NOT NULL DEFAULT false,
  coverage_needed integer NOT NULL DEFAULT 0,
  trials integer NOT NULL DEFAULT 0,
  paid integer NOT NULL DEFAULT 0,
  refunds integer NOT NULL DEFAULT 0,
  onboarding integer NOT NULL DEFAULT 0,
  revenue_usd double precision NOT NULL DEFAULT 0,
  event_names text[] NOT NULL DEFAULT '{}',
  PRIMARY KEY (experiment_id, environment, anon_id)
);
CREATE INDEX exp_devices_device_idx ON exp_devices (app_id, environment, anon_id);
