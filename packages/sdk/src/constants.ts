/** The client-side constants of the service contract (spec.md "Limits"), in one place. */
export const SDK_VERSION = '1.2.0';
export const SCHEMA_VERSION = 1;

/** Events per upload batch and seconds between automatic flushes, until bootstrap says otherwise. */
export const DEFAULT_BATCH_SIZE = 20;
export const DEFAULT_FLUSH_INTERVAL_MS = 30_000;
/** At most this many retries per flush cycle, after these base delays (each +-25% jitter). */
export const RETRY_DELAYS_MS = [1000, 2000, 4000];
export const RETRY_JITTER = 0.25;
/** Config fetches (bundle, bootstrap) never keep the app waiting longer than this. */
export const CONFIG_TIMEOUT_MS = 3000;
/** Ingest and identify requests give up after this long (the batch stays queued). */
export const REQUEST_TIMEOUT_MS = 10_000;
/** Cached config may be reused this long before bootstrap is asked again. */
export const DEFAULT_CONFIG_TTL_MS = 3600_000;
/** How often the version endpoint is polled. */
export const DEFAULT_POLL_INTERVAL_MS = 300_000;
/** Inactivity after which the next event starts a new session. */
export const SESSION_TIMEOUT_MS = 30 * 60_000;
/**
 * The queue keeps at most this many bytes of events (oldest dropped first): under the 6 MB
 * that React Native's AsyncStorage allows on Android by default.
 */
export const DEFAULT_MAX_QUEUE_BYTES = 2 * 1024 * 1024;
/** Events per storage segment: a track rewrites one segment, never the whole queue. */
export const SEGMENT_EVENTS = 20;
/** Experiments and rollouts bucket users into 0..BUCKETS-1. */
export const BUCKETS = 10_000;
/** Config stream: reconnect backoff cap, the uptime that resets it, and the silence that means a dead link. */
export const STREAM_BACKOFF_CAP_MS = 300_000;
export const STREAM_STABLE_MS = 60_000;
export const STREAM_IDLE_MS = 90_000;
/** Backoff base until the server's `retry:` hint arrives. */
export const STREAM_RETRY_MS = 1000;
