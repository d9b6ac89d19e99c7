import type { FastifyReply } from 'fastify';
import { AppError } from './errors.js';
import type { LimitStore } from './rate-limit-store.js';

export interface RateDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Seconds until the window has room again. */
  resetS: number;
}

export interface RateLimiter {
  consume(key: string, points: number, limit: number, windowMs?: number): RateDecision | Promise<RateDecision>;
  /** Hands back unspent reservations (global limiter) and stops its timers. */
  close(): Promise<void>;
}

const WINDOW_MS = 60_000;

const resetOf = (t: number, start: number, windowMs: number) => Math.max(1, Math.ceil((windowMs - (t - start)) / 1000));

/**
 * Sliding-window counter (the previous fixed window weighted by how much of it still
 * overlaps the sliding window). Memory is two counters per key; accuracy is within a few
 * percent of an exact log, which is what rate limits need. Per process: N instances allow N
 * times the limit, so it serves a single instance (RATE_LIMITS=local) and the baselines.
 */
export function createSlidingWindowLimiter(now: () => number = Date.now): RateLimiter {
  const windows = new Map<string, { start: number; current: number; previous: number }>();
  let lastSweep = now();

  function sweep(t: number, windowMs: number) {
    if (t - lastSweep < 60_000) return;
    lastSweep = t;
    for (const [k, w] of windows) if (t - w.start > 2 * windowMs) windows.delete(k);
  }

  return {
    consume(key, points, limit, windowMs = WINDOW_MS) {
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
      const resetS = resetOf(t, start, windowMs);
      if (used + points > limit) {
        return { allowed: false, limit, remaining: Math.max(0, Math.floor(limit - used)), resetS };
      }
      w.current += points;
      return { allowed: true, limit, remaining: Math.max(0, Math.floor(limit - used - points)), resetS };
    },
    close: async () => undefined,
  };
}

/**
 * A reservation never takes more than this share of a limit (at least 1 point), so what the
 * instances hold and have not spent stays within a few percent of it: with 2 instances a client
 * can be refused while at most 2% of its budget sits unspent in the other one.
 */
export const RESERVATION_SHARE = 0.01;
/** After a refusal, requests wanting more than the budget then left are refused locally for this long. */
const REFUSAL_CACHE_MS = 200;
/** How often unspent reservations of past windows go back, and old windows are swept. */
const RETURN_EVERY_MS = 1000;

interface KeyState {
  windowStart: number;
  /** Reserved here and not yet spent. */
  tokens: number;
  /** The budget left globally after this instance's last reservation. */
  left: number;
  refusedUntil: number;
  reserving?: Promise<void>;
}

/**
 * Limits that hold across every instance: the budget of a key's window lives in PostgreSQL,
 * each instance reserves a chunk of it (one query per chunk, concurrent requests of a key share
 * it) and spends it in memory. Reservations never exceed the limit together; unspent ones go back
 * when the window ends, so the previous window's weight counts what was really used.
 */
export function createGlobalLimiter(
  store: LimitStore,
  now: () => number = Date.now,
  onError: (err: unknown) => void = () => undefined,
): RateLimiter {
  const states = new Map<string, KeyState>();
  let returns: { key: string; windowStart: number; n: number }[] = [];
  let lastSweep = now();

  function current(key: string, t: number, windowMs: number, limit: number): KeyState {
    const start = t - (t % windowMs);
    let s = states.get(key);
    if (s && s.windowStart === start) return s;
    if (s && s.tokens > 0) returns.push({ key, windowStart: s.windowStart, n: s.tokens });
    s = { windowStart: start, tokens: 0, left: limit, refusedUntil: 0 };
    states.set(key, s);
    return s;
  }

  async function flush(all: boolean) {
    const t = now();
    for (const [key, s] of states) {
      if (s.reserving) continue;
      if (all || t - s.windowStart >= WINDOW_MS) {
        if (s.tokens > 0) returns.push({ key, windowStart: s.windowStart, n: s.tokens });
        states.delete(key);
      }
    }
    const batch = returns;
    returns = [];
    await store.giveBack(batch);
    if (t - lastSweep >= WINDOW_MS) {
      lastSweep = t;
      await store.sweep(t - 3 * WINDOW_MS);
    }
  }
  const timer = setInterval(() => flush(false).catch(onError), RETURN_EVERY_MS);
  timer.unref();

  async function consume(key: string, points: number, limit: number, windowMs = WINDOW_MS): Promise<RateDecision> {
    for (;;) {
      const t = now();
      const s = current(key, t, windowMs, limit);
      const resetS = resetOf(t, s.windowStart, windowMs);
      if (s.tokens >= points) {
        s.tokens -= points;
        return { allowed: true, limit, remaining: Math.max(0, s.left + s.tokens), resetS };
      }
      if (t < s.refusedUntil && points - s.tokens > s.left)
        return { allowed: false, limit, remaining: Math.max(0, s.left + s.tokens), resetS };
      if (s.reserving) {
        await s.reserving;
        continue;
      }
      const need = points - s.tokens;
      const want = Math.max(need, Math.floor(limit * RESERVATION_SHARE));
      let refused = false;
      s.reserving = store
        .take(key, t, windowMs, limit, want, need)
        .then(({ granted, left }) => {
          s.tokens += granted;
          s.left = left;
          if (granted === 0) {
            refused = true;
            s.refusedUntil = now() + REFUSAL_CACHE_MS;
          }
        })
        .finally(() => {
          s.reserving = undefined;
        });
      await s.reserving;
      if (refused) return { allowed: false, limit, remaining: Math.max(0, s.left + s.tokens), resetS };
    }
  }

  return {
    consume,
    async close() {
      clearInterval(timer);
      await flush(true);
    },
  };
}

export function rateHeaders(d: RateDecision): Record<string, string> {
  return {
    'ratelimit-limit': String(d.limit),
    'ratelimit-remaining': String(d.remaining),
    'ratelimit-reset': String(d.resetS),
  };
}

/** Consumes points; over the limit it throws the 429 (with Retry-After), else returns the decision for the headers. */
export async function checkRate(
  limiter: RateLimiter,
  key: string,
  points: number,
  limit: number,
  what: string,
): Promise<RateDecision> {
  const d = await limiter.consume(key, points, limit);
  if (!d.allowed) {
    throw new AppError('rate_limited', `Rate limit of ${limit} ${what} per minute exceeded`, undefined, {
      ...rateHeaders(d),
      'retry-after': String(d.resetS),
    });
  }
  return d;
}

/** For routes whose whole cost is known up front: check and set the headers. */
export async function enforceRate(
  limiter: RateLimiter,
  reply: FastifyReply,
  key: string,
  points: number,
  limit: number,
  what: string,
): Promise<void> {
  reply.headers(rateHeaders(await checkRate(limiter, key, points, limit, what)));
}
