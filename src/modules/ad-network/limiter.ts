import { createSlidingWindowLimiter } from '../../http/rate-limit.js';

export interface LimitKey {
  key: string;
  /** Calls allowed per window. */
  limit: number;
  windowMs: number;
}

/**
 * Decides whether an outbound ad-network call may go now. Injectable so a deployment can back it
 * with shared storage, and so tests can make it unavailable: any throw means "unavailable" and the
 * caller fails closed (quota error, no call sent).
 */
export interface AdNetworkLimiter {
  take(keys: LimitKey[]): Promise<{ allowed: true } | { allowed: false; retryAfterMs: number }>;
}

/** The network's published limits: 10 req/s per access token, 20 req/s per app; ours per ad account on top. */
export const NETWORK_LIMITS = { perTokenPerS: 10, perAppPerS: 20, perAccountPerS: 8 };

// The network counts arrivals, we count departures: a window 10% longer than its second absorbs transit jitter.
const WINDOW_MS = 1100;

export function limitKeys(o: { clientId: string; connection: string; adAccountId?: string }): LimitKey[] {
  const keys: LimitKey[] = [
    { key: `app:${o.clientId}`, limit: NETWORK_LIMITS.perAppPerS, windowMs: WINDOW_MS },
    { key: `token:${o.connection}`, limit: NETWORK_LIMITS.perTokenPerS, windowMs: WINDOW_MS },
  ];
  if (o.adAccountId) keys.push({ key: `acct:${o.adAccountId}`, limit: NETWORK_LIMITS.perAccountPerS, windowMs: WINDOW_MS });
  return keys;
}

/** In-process sliding windows (the shared RateLimiter). Per process: N API instances share the network's limits only loosely; network 429s are retried. */
export function createMemoryAdNetworkLimiter(): AdNetworkLimiter {
  const windows = createSlidingWindowLimiter();
  return {
    async take(keys) {
      for (const k of keys) {
        const d = windows.consume(k.key, 1, k.limit, k.windowMs);
        if (!d.allowed) return { allowed: false, retryAfterMs: Math.min(k.windowMs, 250) };
      }
      return { allowed: true };
    },
  };
}
