import type { Queryable } from '../db/pool.js';
import type { AdNetworkLimiter } from '../modules/ad-network/limiter.js';

/** Where the global limits keep their state: one PostgreSQL row per key and window (migration 019). */
export interface LimitStore {
  /** Reserves up to `want` (at least `need`, else nothing) of the key's budget; `left` is what remains after. */
  take(
    key: string,
    nowMs: number,
    windowMs: number,
    limit: number,
    want: number,
    need: number,
  ): Promise<{ granted: number; left: number }>;
  /** Hands back what an instance reserved and did not spend. */
  giveBack(items: { key: string; windowStart: number; n: number }[]): Promise<void>;
  /** Forgets the windows that no longer weigh at `nowMs` (neither current nor previous), each by its own length. */
  sweep(nowMs: number): Promise<void>;
}

export function createLimitStore(db: Queryable): LimitStore {
  return {
    async take(key, nowMs, windowMs, limit, want, need) {
      const { rows } = await db.query<{ grant_n: number; left_n: number }>(
        'SELECT grant_n, left_n FROM rate_limit_take($1, $2, $3, $4, $5, $6)',
        [key, nowMs, windowMs, limit, want, need],
      );
      return { granted: rows[0].grant_n, left: rows[0].left_n };
    },
    async giveBack(items) {
      if (items.length === 0) return;
      await db.query(
        `UPDATE rate_limit_windows w SET granted = greatest(0, w.granted - r.n)
           FROM unnest($1::text[], $2::bigint[], $3::bigint[]) AS r(key, ws, n)
          WHERE w.key = r.key AND w.window_start = r.ws`,
        [items.map((i) => i.key), items.map((i) => i.windowStart), items.map((i) => i.n)],
      );
    },
    async sweep(nowMs) {
      // A window weighs while current and while previous: two lengths from its start (three, for margin).
      await db.query('DELETE FROM rate_limit_windows WHERE window_start + 3 * window_ms < $1', [nowMs]);
    },
  };
}

const LOG_KEPT_MS = 60_000;

/**
 * The ad-network limiter shared by every instance: exact sliding logs in PostgreSQL, one row per
 * call (a few dozen calls a second at most). A database error is thrown: the caller fails closed.
 */
export function createPgAdNetworkLimiter(db: Queryable, now: () => number = Date.now): AdNetworkLimiter {
  let lastSweep = 0;
  return {
    async take(keys) {
      const t = now();
      if (t - lastSweep > LOG_KEPT_MS) {
        lastSweep = t;
        await db.query('DELETE FROM ad_network_call_log WHERE at_ms < $1', [t - LOG_KEPT_MS]);
      }
      const { rows } = await db.query<{ wait: number }>('SELECT ad_network_take($1, $2, $3, $4) AS wait', [
        keys.map((k) => k.key),
        keys.map((k) => k.limit),
        keys.map((k) => k.windowMs),
        t,
      ]);
      const wait = rows[0].wait;
      return wait > 0 ? { allowed: false, retryAfterMs: wait } : { allowed: true };
    },
  };
}
