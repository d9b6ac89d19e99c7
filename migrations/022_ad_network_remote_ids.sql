-- Journal look-ups by the network's object id: which ad account an object we created belongs to
-- (ownership along campaign -> ad squad -> ad), claimed ids during reconciliation, dry-run parents.
CREATE INDEX ad_network_writes_remote_idx ON ad_network_writes (tenant_id, app_id, kind, remote_id) WHERE remote_id IS NOT NULL;
