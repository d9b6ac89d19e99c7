-- Content behind the config bundle (onboarding flows, paywalls, in-app messages, remote config,
-- feature flags) and the immutable, versioned bundles generated from it.

-- Flows, paywalls and messages share one table: same lifecycle (draft -> published), kind-specific
-- fields live in `body` (validated by the service; bounded at 256 KB of free-form JSON per item).
CREATE TABLE content_items (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  tenant_id uuid NOT NULL,
  app_id uuid NOT NULL,
  kind text NOT NULL CHECK (kind IN ('onboarding_flow', 'paywall', 'in_app_message')),
  name text NOT NULL,
  body jsonb NOT NULL,
  sdk_min_version text,
  -- Option sets a flow's steps reference (steps[].option_set_id), so a set sync finds its flows fast.
  option_set_ids text[] NOT NULL DEFAULT '{}',
  status text NOT NULL DEFAULT 'draft' CHECK (status IN ('draft', 'published')),
  published_at timestamptz,
  published_by uuid,
  created_by uuid,
  updated_by uuid,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  FOREIGN KEY (tenant_id, app_id) REFERENCES apps (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX content_items_list_idx ON content_items (app_id, kind, created_at DESC, id);
CREATE INDEX content_items_published_idx ON content_items (app_id, kind) WHERE status = 'published';

CREATE TABLE remote_config (
  tenant_id uuid NOT NULL,
  app_id uuid PRIMARY KEY,
  "values" jsonb NOT NULL DEFAULT '{}',
  updated_by uuid,
  updated_at timestamptz NOT NULL DEFAULT now(),
  FOREIGN KEY (tenant_id, app_id) REFERENCES apps (tenant_id, id) ON DELETE CASCADE
);

CREATE TABLE feature_flags (
  tenant_id uuid NOT NULL,
  app_id uuid NOT NULL,
  key text NOT NULL,
  enabled boolean NOT NULL,
  rules jsonb NOT NULL DEFAULT '[]',
  rollout_pct double precision NOT NULL DEFAULT 100,
  description text,
  sdk_min_version text,
  created_by uuid,
  updated_by uuid,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (app_id, key),
  FOREIGN KEY (tenant_id, app_id) REFERENCES apps (tenant_id, id) ON DELETE CASCADE
);

-- One row per app: the version counter. Generations take its row lock (UPDATE ... RETURNING) in
-- their transaction, so versions are strictly increasing and never reused, across instances too.
CREATE TABLE bundle_heads (
  tenant_id uuid NOT NULL,
  app_id uuid PRIMARY KEY,
  last_version integer NOT NULL,
  -- App-level floor for sdk_min_version (PUT /api/v1/sdk/config-bundle/settings).
  sdk_min_version text,
  updated_at timestamptz NOT NULL DEFAULT now(),
  FOREIGN KEY (tenant_id, app_id) REFERENCES apps (tenant_id, id) ON DELETE CASCADE
);

-- Every version ever generated, immutable. `content` is json (not jsonb): the exact bytes served.
CREATE TABLE bundles (
  tenant_id uuid NOT NULL,
  app_id uuid NOT NULL,
  bundle_version integer NOT NULL,
  sdk_min_version text NOT NULL,
  size_bytes integer NOT NULL,
  content json NOT NULL,
  reason text NOT NULL,
  rolled_back_from integer,
  actor_user_id uuid,
  generated_at timestamptz NOT NULL,
  PRIMARY KEY (app_id, bundle_version),
  FOREIGN KEY (tenant_id, app_id) REFERENCES apps (tenant_id, id) ON DELETE CASCADE
);
