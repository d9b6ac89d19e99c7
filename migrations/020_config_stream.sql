-- Config changes for the SSE stream (src/modules/config-stream): one row per bundle generation,
-- rollback and option-set sync, numbered by one global sequence that clients resume from
-- (Last-Event-ID) on any instance.
--
-- The number comes from a counter row, not a bigserial: the row lock is held until the writing
-- transaction commits, so numbers are gapless and commit in order. A reader that has seen seq N
-- can never later find a committed N-1 (with a sequence, a slower transaction holding a lower
-- number could commit after a higher one had been read, and that change would be skipped).
CREATE TABLE config_change_head (
  id boolean PRIMARY KEY DEFAULT true CHECK (id),
  last_seq bigint NOT NULL DEFAULT 0,
  -- Highest seq deleted by retention: a client resuming from an older id gets a resync.
  pruned_through bigint NOT NULL DEFAULT 0
);
INSERT INTO config_change_head DEFAULT VALUES;

CREATE TABLE config_changes (
  seq bigint PRIMARY KEY,
  tenant_id uuid NOT NULL,
  app_id uuid NOT NULL,
  -- NULL: every environment of the app (bundles and option sets are per app today).
  environment text CHECK (environment IN ('production', 'sandbox')),
  kind text NOT NULL CHECK (kind IN ('bundle_generated', 'bundle_rolled_back', 'option_set_synced')),
  bundle_version integer,
  option_set_id text,
  option_set_version integer,
  created_at timestamptz NOT NULL DEFAULT now()
);
-- A reconnecting client reads its app's changes after its id.
CREATE INDEX config_changes_app_seq ON config_changes (app_id, seq);
-- Retention deletes by age.
CREATE INDEX config_changes_created ON config_changes (created_at);
