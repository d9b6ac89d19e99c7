-- Analytics definitions (src/modules/analytics/definitions.ts) get a version: an_app_state.defs
-- records the one each app's rollups were built with, and the worker rebuilds an app whose version
-- differs, in the background, as for a timezone change. NULL: built before versions were recorded
-- (rebuilt once).
ALTER TABLE an_app_state ADD COLUMN IF NOT EXISTS defs text;

-- A device's active days were packed as day x 64 + flags (room for 6 flags); now day x 256 + flags
-- (definitions.ts FLAG_ROOM = 8). Same order, same flags.
UPDATE an_devices SET days = ARRAY(SELECT (d >> 6 << 8) | (d & 63) FROM unnest(days) WITH ORDINALITY u(d, o) ORDER BY o)
 WHERE cardinality(days) > 0;
