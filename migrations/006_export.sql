-- Event export: bulk export records and the incrementally maintained event schema.

CREATE TABLE exports (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  tenant_id uuid NOT NULL,
  app_id uuid NOT NULL,
  -- The environment of the key that created it; only keys of that environment see it.
  environment text NOT NULL CHECK (environment IN ('production', 'sandbox')),
  status text NOT NULL DEFAULT 'processing' CHECK (status IN ('processing', 'completed', 'failed')),
  start_date timestamptz NOT NULL,
  end_date timestamptz NOT NULL,
  event_names text[] NOT NULL DEFAULT '{}',
  callback_url text,
  created_by_key uuid,
  -- Fencing token: each run takes the next number and may only finish the export if it still holds it.
  attempts integer NOT NULL DEFAULT 0,
  storage_key text,
  event_count bigint,
  file_size_bytes bigint,
  failure_reason text,
  -- Set once the completion callback is durably queued (at least once, even across crashes).
  callback_queued_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  started_at timestamptz,
  completed_at timestamptz,
  expires_at timestamptz,
  file_deleted_at timestamptz,
  FOREIGN KEY (tenant_id, app_id) REFERENCES apps (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX exports_app_idx ON exports (tenant_id, app_id, created_at DESC);
-- The cleanup job's work list: completed files not yet deleted.
CREATE INDEX exports_expiry_idx ON exports (expires_at) WHERE status = 'completed' AND file_deleted_at IS NULL;

-- Schema fold progress (one row): events with seq <= watermark are folded; horizon is the
-- sequence position seen on the previous run, folded on the next one once in-flight inserts committed.
CREATE TABLE export_schema_state (
  id integer PRIMARY KEY DEFAULT 1 CHECK (id = 1),
  watermark bigint NOT NULL DEFAULT 0,
  horizon bigint NOT NULL DEFAULT 0,
  folded_at timestamptz
);
INSERT INTO export_schema_state (id) VALUES (1);

CREATE TABLE export_schema_events (
  tenant_id uuid NOT NULL,
  app_id uuid NOT NULL,
  environment text NOT NULL,
  event_name text NOT NULL,
  count bigint NOT NULL,
  first_seen timestamptz NOT NULL,
  last_seen timestamptz NOT NULL,
  PRIMARY KEY (app_id, environment, event_name)
);

CREATE TABLE export_schema_properties (
  tenant_id uuid NOT NULL,
  app_id uuid NOT NULL,
  environment text NOT NULL,
  event_name text NOT NULL,
  name text NOT NULL,
  types text[] NOT NULL,
  PRIMARY KEY (app_id, environment, event_name, name)
);
