import type { Queryable } from '../../db/pool.js';

export interface RateRow {
  currency: string;
  day: string;
  usd_per_unit: number;
}

/** Platform-wide reference data (not tenant-owned): USD per unit of a currency on a day. */
export function createExchangeRateStore(db: Queryable) {
  return {
    async upsert(rows: RateRow[], keepExisting = false): Promise<number> {
      if (rows.length === 0) return 0;
      const { rowCount } = await db.query(
        `INSERT INTO exchange_rates (currency, day, usd_per_unit)
         SELECT upper(currency), day, usd_per_unit FROM jsonb_to_recordset($1::jsonb) AS x(currency text, day date, usd_per_unit double precision)
         ON CONFLICT (currency, day) DO ${keepExisting ? 'NOTHING' : 'UPDATE SET usd_per_unit = EXCLUDED.usd_per_unit, updated_at = now()'}`,
        [JSON.stringify(rows)],
      );
      return rowCount ?? 0;
    },
    async all(): Promise<RateRow[]> {
      const { rows } = await db.query<RateRow>(
        `SELECT currency, to_char(day, 'YYYY-MM-DD') AS day, usd_per_unit FROM exchange_rates ORDER BY currency, day`,
      );
      return rows;
    },
  };
}

export type ExchangeRateStore = ReturnType<typeof createExchangeRateStore>;
