-- Retention (issue 36 §3): raw events and completed exports older than this many days (by received_at,
-- resp. completed_at) are dropped by a daily job; NULL keeps them for ever. Bounds: src/modules/privacy/retention.ts.
ALTER TABLE app_settings ADD COLUMN IF NOT EXISTS retention_days integer
  CHECK (retention_days IS NULL OR retention_days BETWEEN 30 AND 3650);
-- No index on received_at: it would cost every ingested event an index insert, and the job's scan finds
-- the oldest arrivals first (events are appended in arrival order within a partition).
