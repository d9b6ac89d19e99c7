-- Privacy (issue 36): deletion requests, suppression at the door, keyed hashes of subjects.

-- One key per app for the keyed hash that names a subject (HMAC-SHA256): receipts and suppressions
-- hold no clear identifier, and a hash of one app says nothing about another's.
CREATE TABLE privacy_keys (
  app_id uuid PRIMARY KEY,
  tenant_id uuid NOT NULL,
  hash_key bytea NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE privacy_deletions (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  tenant_id uuid NOT NULL,
  app_id uuid NOT NULL,
  status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'running', 'done', 'failed', 'cancelled')),
  -- The clear subjects, needed to find their data; emptied once the request ends (the receipt keeps hashes).
  subjects jsonb NOT NULL,
  subject_hashes text[] NOT NULL,
  suppress boolean NOT NULL,
  requested_by uuid,
  -- What the expansion found (clear while running, emptied at the end).
  anon_ids uuid[],
  user_ids text[],
  -- One entry per store: { deleted, finished_at, remaining } (remaining: what a search finds after).
  steps jsonb NOT NULL DEFAULT '{}',
  error text,
  -- Touched by the running job at every store: a run that stops touching it died (privacy.resume).
  heartbeat_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  started_at timestamptz,
  completed_at timestamptz
);
CREATE INDEX privacy_deletions_app_idx ON privacy_deletions (app_id, created_at DESC);

CREATE TABLE privacy_suppressions (
  tenant_id uuid NOT NULL,
  app_id uuid NOT NULL,
  hash text NOT NULL,
  kind text NOT NULL CHECK (kind IN ('user_id', 'anon_id')),
  deletion_id uuid,
  created_by uuid,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (app_id, hash)
);
