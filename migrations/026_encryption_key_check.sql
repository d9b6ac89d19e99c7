-- Which ENCRYPTION_KEY the secrets of this database are sealed with: its check value, an HMAC-SHA256 of
-- a fixed label under the key (never the key). An instance with another key refuses to start; one with
-- the new key and ENCRYPTION_KEY_PREVIOUS re-seals every secret and moves the check (src/db/key-check.ts).
-- One row, written at the first start after this migration.
CREATE TABLE encryption_key_check (
  singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  check_value text NOT NULL,
  key_id text NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now()
);

-- Sealed values now carry the id of their key ('sealed:v2:<key id>:'); 'sealed:v1:' ones (no id) still open.
COMMENT ON COLUMN ad_network_connections.refresh_token_enc IS 'sealed with ENCRYPTION_KEY (src/lib/secret-box.ts, bytes)';
COMMENT ON COLUMN ad_network_connections.access_token_enc IS 'sealed with ENCRYPTION_KEY (src/lib/secret-box.ts, bytes)';
COMMENT ON COLUMN ad_network_oauth_states.verifier_enc IS 'sealed with ENCRYPTION_KEY (src/lib/secret-box.ts, bytes)';
