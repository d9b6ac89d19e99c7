import type { FastifyReply } from 'fastify';
import { AppError } from './errors.js';

export interface RateDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Seconds until the window has room again. */
  resetS: number;
}

/**
 * Sliding-window counter (the previous fixed window weighted by how much of it still
 * overlaps the sliding window). Memory is two counters per key; accuracy is within a few
 * percent of an exact log, which is what rate limits need.
 */
export function createSlidingWindowLimiter(now: () => number = Date.now) {
  const windows = new Map<string, { start: number; current: number; previous: number }>();
  let lastSweep = now();

  function sweep(t: number, windowMs: number) {
    if (t - lastSweep < 60_000) return;
    lastSweep = t;
    for (const [k, w] of windows) if (t - w.start > 2 * windowMs) windows.delete(k);
  }

  return {
    consume(key: string, points: number, limit: number, windowMs = 60_000): RateDecision {
      const t = now();
      sweep(t, windowMs);
      const start = t - (t % windowMs);
      let w = windows.get(key);
      if (!w) {
        w = { start, current: 0, previous: 0 };
        windows.set(key, w);
      } else if (w.start !== start) {
        w.previous = start - w.start === windowMs ? w.current : 0;
        w.current = 0;
        w.start = start;
      }
      const elapsed = (t - start) / windowMs;
      const used = w.previous * (1 - elapsed) + w.current;
      const resetS = Math.max(1, Math.ceil((windowMs - (t - start)) / 1000));
      if (used + points > limit) {
        return { allowed: false, limit, remaining: Math.max(0, Math.floor(limit - used)), resetS };
      }
      w.current += points;
      return { allowed: true, limit, remaining: Math.max(0, Math.floor(limit - used - points)), resetS };
    },
  };
}

export type RateLimiter = ReturnType<typeof createSlidingWindowLimiter>;

export function rateHeaders(d: RateDecision): Record<string, string> {
  return { 'ratelimit-limit': String(d.limit), 'ratelimit-remaining': String(d.remaining), 'ratelimit-reset': String(d.resetS) };
}

/** Consumes points; over the limit it throws the 429 (with Retry-After), else returns the decision for the headers. */
export function checkRate(limiter: RateLimiter, key: string, points: number, limit: number, what: string): RateDecision {
  const d = limiter.consume(key, points, limit);
  if (!d.allowed) {
    throw new AppError('rate_limited', `Rate limit of ${limit} ${what} per minute exceeded`, undefined, { ...rateHeaders(d), 'retry-after': String(d.resetS) });
  }
  return d;
}

/** For routes whose whole cost is known up front: check and set the headers. */
export function enforceRate(limiter: RateLimiter, reply: FastifyReply, key: string, points: number, limit: number, what: string): void {
  reply.headers(rateHeaders(checkRate(limiter, key, points, limit, what)));
}
