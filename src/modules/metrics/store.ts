import type { Db } from '../../db/pool.js';

/** Read at scrape time only: the state every instance shares, so these are the same on all of them. */
export function createMetricsStore(db: Db) {
  return {
    /** Fold position, events not folded yet and the age of the oldest of them (its first few, read by seq range). */
    async foldLag(): Promise<{ folded: number; lagEvents: number; lagSeconds: number }> {
      // One state row per fold partition: every event at or below the lowest watermark is folded.
      const { rows } = await db.query<{ folded: number; watermark: number; last: number; lag_s: number | null }>(
        `WITH s AS (SELECT min(watermark)::bigint AS watermark, sum(events_folded)::bigint AS folded FROM an_rollup_state)
         SELECT s.folded, s.watermark, CASE WHEN q.is_called THEN q.last_value ELSE 0 END AS last,
                (SELECT extract(epoch FROM now() - min(e.received_at))::float8
                   FROM events e WHERE e.seq > s.watermark AND e.seq <= s.watermark + 1000) AS lag_s
           FROM s, events_seq_seq q`,
      );
      const r = rows[0];
      return { folded: r.folded, lagEvents: Math.max(0, r.last - r.watermark), lagSeconds: Math.max(0, r.lag_s ?? 0) };
    },
    /** Jobs by queue and state (pg-boss keeps failed jobs until its retention deletes them). */
    async jobStates(): Promise<{ name: string; state: string; n: number }[]> {
      const { rows } = await db.query<{ name: string; state: string; n: number }>(
        `SELECT name, state::text AS state, count(*)::int AS n FROM pgboss.job
          WHERE state IN ('created', 'retry', 'active', 'failed') GROUP BY 1, 2`,
      );
      return rows;
    },
    async deliveries(): Promise<{ kind: string; status: string; n: number }[]> {
      const { rows } = await db.query<{ kind: string; status: string; n: number }>(
        'SELECT kind, status, count(*)::int AS n FROM webhook_deliveries GROUP BY 1, 2',
      );
      return rows;
    },
  };
}

export type MetricsStore = ReturnType<typeof createMetricsStore>;
