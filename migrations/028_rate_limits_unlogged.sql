-- Global rate limits: the reservations table skips the write-ahead log. Each reservation is a small
-- write transaction; on a logged table its commit waits for a WAL flush (fsync), which cost more
-- than the request it guarded. Transactions touching only unlogged tables commit without that
-- wait. What is lost: after a crash PostgreSQL empties the table (every key's current minute
-- starts over once) and a replica does not have it (limits are the primary's). Both are acceptable
-- for a per-minute budget.
ALTER TABLE rate_limit_windows SET UNLOGGED;
