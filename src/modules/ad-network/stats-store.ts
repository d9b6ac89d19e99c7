import type { Queryable } from '../../db/pool.js';
import type { Scope } from '../../types/domain.js';

export interface StatRow {
  ad_account_id: string;
  entity_type: 'campaign' | 'adsquad';
  entity_id: string;
  day: string;
  impressions: number;
  swipes: number;
  view_completion: number;
  conversion_purchases: number;
  spend_local_micro: number;
  spend_local: number;
  currency: string;
  usd_rate: number | null;
  rate_day: string | null;
  spend_usd: number | null;
}

const COLS =
  'ad_account_id, entity_type, entity_id, day::text AS day, impressions, swipes, view_completion, conversion_purchases, spend_local_micro, spend_local, currency, usd_rate, rate_day::text AS rate_day, spend_usd, pulled_at';

/** DAY stats rows (re-pulled days overwrite: the network revises recent data). */
export function createStatsStore(db: Queryable) {
  return {
    async upsert(s: Scope, rows: StatRow[]): Promise<number> {
      if (!rows.length) return 0;
      await db.query(
        `INSERT INTO ad_network_stats (tenant_id, app_id, ad_account_id, entity_type, entity_id, day, impressions, swipes, view_completion,
           conversion_purchases, spend_local_micro, spend_local, currency, usd_rate, rate_day, spend_usd)
         SELECT $1, $2, r.ad_account_id, r.entity_type, r.entity_id, r.day, r.impressions, r.swipes, r.view_completion,
           r.conversion_purchases, r.spend_local_micro, r.spend_local, r.currency, r.usd_rate, r.rate_day, r.spend_usd
         FROM jsonb_to_recordset($3::jsonb) AS r(ad_account_id text, entity_type text, entity_id text, day date, impressions bigint, swipes bigint,
           view_completion bigint, conversion_purchases bigint, spend_local_micro bigint, spend_local numeric, currency text,
           usd_rate double precision, rate_day date, spend_usd numeric)
         ON CONFLICT (tenant_id, app_id, entity_type, entity_id, day) DO UPDATE SET
           impressions = EXCLUDED.impressions, swipes = EXCLUDED.swipes, view_completion = EXCLUDED.view_completion,
           conversion_purchases = EXCLUDED.conversion_purchases, spend_local_micro = EXCLUDED.spend_local_micro,
           spend_local = EXCLUDED.spend_local, currency = EXCLUDED.currency, usd_rate = EXCLUDED.usd_rate,
           rate_day = EXCLUDED.rate_day, spend_usd = EXCLUDED.spend_usd, pulled_at = now()`,
        [s.tenantId, s.appId, JSON.stringify(rows)],
      );
      return rows.length;
    },
    async read(
      s: Scope,
      f: { adAccountId?: string; entityType?: string; entityIds?: string[]; from: string; to: string; limit: number },
    ) {
      const { rows } = await db.query(
        `SELECT ${COLS} FROM ad_network_stats
         WHERE tenant_id = $1 AND app_id = $2 AND day BETWEEN $3 AND $4
           AND ($5::text IS NULL OR ad_account_id = $5) AND ($6::text IS NULL OR entity_type = $6) AND ($7::text[] IS NULL OR entity_id = ANY($7))
         ORDER BY day, entity_type, entity_id LIMIT $8`,
        [s.tenantId, s.appId, f.from, f.to, f.adAccountId ?? null, f.entityType ?? null, f.entityIds ?? null, f.limit],
      );
      return rows.map((r) => ({ ...r, pulled_at: r.pulled_at.toISOString() }));
    },
  };
}

export type StatsStore = ReturnType<typeof createStatsStore>;
