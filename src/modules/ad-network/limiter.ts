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
  if (o.adAccountId)
    keys.push({ key: `acct:${o.adAccountId}`, limit: NETWORK_LIMITS.perAccountPerS, windowMs: WINDOW_MS });
  return keys;
}

/**
 * In-process exact sliding logs (the network counts calls in the last second exactly, so an
 * approximate counter would let bursts through that it answers with 429). Per process: N API
 * instances share the network's limits only loosely; network 429s are retried.
 */
export function createMemoryAdNetworkLimiter(now: () => number = Date.now): AdNetworkLimiter {
  const logs = new Map<string, number[]>();
  const recent = (k: LimitKey, t: number) => {
    const log = (logs.get(k.key) ?? []).filter((x) => t - x < k.windowMs);
    logs.set(k.key, log);
    return log;
  };
  return {
    async take(keys) {
      const t = now();
      // All keys must allow the call before any records it, so a refused call uses no quota.
      let wait = 0;
      for (const k of keys) {
        const log = recent(k, t);
        if (log.length >= k.limit) wait = Math.max(wait, log[log.length - k.limit] + k.windowMs - t);
      }
      if (wait > 0) return { allowed: false, retryAfterMs: Math.max(1, wait) };
      for (const k of keys) logs.get(k.key)!.push(t);
      if (logs.size > 10_000)
        for (const [key, log] of logs) if (!log.length || t - log[log.length - 1] > 60_000) logs.delete(key);
      return { allowed: true };
    },
  };
}
