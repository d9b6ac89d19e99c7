-- Outbox payloads as json, not jsonb: an event's envelope then reaches webhook receivers with the
-- bytes it was stored with (jsonb would reorder its keys).
ALTER TABLE outbox ALTER COLUMN payload TYPE json USING payload::json;

-- Signing secrets are sealed with ENCRYPTION_KEY ('sealed:v1:' + base64 of AES-256-GCM). The key is
-- not in the database, so the rows written before this migration are sealed by the service at
-- start-up (src/db/seal-secrets.ts), not here.
COMMENT ON COLUMN webhook_endpoints.secret IS 'sealed with ENCRYPTION_KEY (src/lib/secret-box.ts)';
COMMENT ON COLUMN webhook_endpoints.previous_secret IS 'sealed with ENCRYPTION_KEY (src/lib/secret-box.ts)';
COMMENT ON COLUMN webhook_deliveries.secret IS 'sealed with ENCRYPTION_KEY (src/lib/secret-box.ts)';
COMMENT ON COLUMN app_settings.callback_signing_secret IS 'sealed with ENCRYPTION_KEY (src/lib/secret-box.ts)';
