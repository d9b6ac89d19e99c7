-- Outgoing webhooks: endpoints per app and durable deliveries (webhooks and export callbacks).

CREATE TABLE webhook_endpoints (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  tenant_id uuid NOT NULL,
  app_id uuid NOT NULL,
  url text NOT NULL,
  description text,
  events text[] NOT NULL,
  enabled boolean NOT NULL DEFAULT true,
  -- Signing secrets are needed in clear to compute HMACs (like app_settings.callback_signing_secret).
  secret text NOT NULL,
  -- After a rotation the old secret keeps signing (a second signature) until it expires.
  previous_secret text,
  previous_secret_expires_at timestamptz,
  -- Start of the current run of failed attempts; cleared by any success.
  failing_since timestamptz,
  disabled_reason text,
  disabled_at timestamptz,
  created_by uuid,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhook_endpoints_app ON webhook_endpoints (tenant_id, app_id, created_at);

CREATE TABLE webhook_deliveries (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  tenant_id uuid NOT NULL,
  app_id uuid NOT NULL,
  -- 'webhook': one endpoint's copy of an outbox event; 'callback': an export completion callback.
  kind text NOT NULL CHECK (kind IN ('webhook', 'callback')),
  endpoint_id uuid REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
  -- Callbacks carry their own target and secret (no endpoint row).
  url text,
  secret text,
  environment text,
  event_type text NOT NULL,
  -- The exact bytes sent on every attempt, so signatures and receivers' dedupe stay stable.
  body text NOT NULL,
  status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'succeeded', 'failed')),
  attempts integer NOT NULL DEFAULT 0,
  -- Raised by a manual retry; automatic retries stop when attempts reach it.
  max_attempts integer NOT NULL,
  next_attempt_at timestamptz,
  -- Set while a worker sends an attempt; another worker may take the row only after it lapses.
  leased_until timestamptz,
  last_attempt_at timestamptz,
  last_status_code integer,
  last_error text,
  last_duration_ms integer,
  succeeded_at timestamptz,
  attempt_log jsonb NOT NULL DEFAULT '[]',
  created_at timestamptz NOT NULL DEFAULT now(),
  CHECK ((kind = 'webhook' AND endpoint_id IS NOT NULL) OR (kind = 'callback' AND url IS NOT NULL AND secret IS NOT NULL))
);
-- The worker's claim: due pending rows in time order.
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
-- The delivery log of one endpoint, newest first.
CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (endpoint_id, created_at DESC);
-- Retention cleanup.
CREATE INDEX webhook_deliveries_created ON webhook_deliveries (created_at);
