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

/** A reservation takes at least this share of a limit (what ingestion's large limits reserve). */
export const RESERVATION_SHARE = 0.01;
/**
 * Small limits (bootstrap 60, option-set sync 20), where 1% is under one point, still reserve a few
 * points at once, up to this many and at most SMALL_CHUNK_SHARE of the limit: one statement then
 * serves several requests of a busy key instead of one each.
 */
const SMALL_CHUNK = 4;
const SMALL_CHUNK_SHARE = 0.1;
/**
 * After a refusal, requests wanting more than the budget then left are refused locally for the time
 * the sliding window takes to free one point (window / limit), within these bounds.
 */
const REFUSAL_CACHE_MS = { min: 200, max: 1000 };
/**
 * A key's unspent reservation goes back once the key has had no request here for as long as a
 * client at the limit's pace takes to spend a chunk (chunk x window / limit: 4 s for bootstrap's 4
 * of 60/min), within these bounds: a key used at that pace keeps its chunk, a slower one returns it.
 */
const IDLE_RETURN_MS = { min: 1000, max: 4000 };
/** How often idle and past windows' unspent reservations go back, and old windows are swept. */
const RETURN_EVERY_MS = 250;
/**
 * The longest an instance is refused while points sit unspent in another one: the other's idle
 * time, its return pass, then this instance's cached refusal (plus one statement's latency).
 */
export const UNSPENT_HELD_MAX_MS = IDLE_RETURN_MS.max + RETURN_EVERY_MS + REFUSAL_CACHE_MS.max;

const within = (b: { min: number; max: number }, ms: number) => Math.min(b.max, Math.max(b.min, ms));

/** Points one reservation asks for when a request needs fewer. */
export function chunkOf(limit: number): number {
  const small = Math.min(SMALL_CHUNK, Math.floor(limit * SMALL_CHUNK_SHARE));
  return Math.max(1, Math.floor(limit * RESERVATION_SHARE), small);
}

interface KeyState {
  windowStart: number;
  windowMs: number;
  /** Reserved here and not yet spent. */
  tokens: number;
  /** The budget left globally after this instance's last reservation. */
  left: number;
  refusedUntil: number;
  lastUse: number;
  /** This key's IDLE_RETURN_MS and REFUSAL_CACHE_MS. */
  idleMs: number;
  refusalMs: number;
  reserving?: Promise<void>;
}

/**
 * Limits that hold across every instance: the budget of a key's window lives in PostgreSQL,
 * each instance reserves a chunk of it (one query per chunk, concurrent requests of a key share
 * it) and spends it in memory. Reservations never exceed the limit together; unspent ones go back
 * when the key is idle here or its window ends, so another instance is not starved for long and the
 * previous window's weight counts what was really used.
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
    s = {
      windowStart: start,
      windowMs,
      tokens: 0,
      left: limit,
      refusedUntil: 0,
      lastUse: t,
      idleMs: within(IDLE_RETURN_MS, (chunkOf(limit) * windowMs) / limit),
      refusalMs: within(REFUSAL_CACHE_MS, windowMs / limit),
    };
    states.set(key, s);
    return s;
  }

  async function flush(all: boolean) {
    const t = now();
    for (const [key, s] of states) {
      if (s.reserving) continue;
      const ended = all || t - s.windowStart >= s.windowMs;
      if (!ended && (s.tokens === 0 || t - s.lastUse < s.idleMs)) continue;
      if (s.tokens > 0) returns.push({ key, windowStart: s.windowStart, n: s.tokens });
      if (ended) states.delete(key);
      else {
        s.left += s.tokens;
        s.tokens = 0;
      }
    }
    const batch = returns;
    returns = [];
    await store.giveBack(batch);
    if (t - lastSweep >= WINDOW_MS) {
      lastSweep = t;
      // Each window by its own length: another instance's longer windows are kept while they weigh.
      await store.sweep(t);
    }
  }
  const timer = setInterval(() => flush(false).catch(onError), RETURN_EVERY_MS);
  timer.unref();

  async function consume(key: string, points: number, limit: number, windowMs = WINDOW_MS): Promise<RateDecision> {
    for (;;) {
      const t = now();
      const s = current(key, t, windowMs, limit);
      s.lastUse = t;
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
      let refused = false;
      s.reserving = store
        .take(key, t, windowMs, limit, Math.max(need, chunkOf(limit)), need)
        .then(({ granted, left }) => {
          s.tokens += granted;
          s.left = left;
          if (granted === 0) {
            refused = true;
            s.refusedUntil = now() + s.refusalMs;
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
