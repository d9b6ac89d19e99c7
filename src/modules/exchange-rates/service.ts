import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { ExchangeRateStore, RateRow } from './store.js';

const SHIPPED = fileURLToPath(new URL('../../../resources/exchange-rates.json', import.meta.url));

export interface Conversion {
  value: number;
  /** USD per unit of the foreign currency that was applied. */
  rate: number;
  rateDay: string | null;
}

/**
 * Converts between USD and other currencies at the rate of a day (the latest earlier rate when
 * the day has none). Rates are held in memory and reloaded when changed through this service;
 * other instances pick changes up within refreshMs.
 */
export function createExchangeRateService({
  store,
  refreshMs = 60_000,
}: {
  store: ExchangeRateStore;
  refreshMs?: number;
}) {
  let byCurrency = new Map<string, RateRow[]>();
  let loadedAt = 0;

  async function reload() {
    const next = new Map<string, RateRow[]>();
    for (const r of await store.all()) {
      const list = next.get(r.currency) ?? [];
      list.push(r);
      next.set(r.currency, list);
    }
    byCurrency = next;
    loadedAt = Date.now();
  }

  function rateOn(currency: string, day: string): { rate: number; rateDay: string | null } | null {
    const cur = currency.toUpperCase();
    if (cur === 'USD') return { rate: 1, rateDay: null };
    const list = byCurrency.get(cur);
    if (!list) return null;
    let found: RateRow | undefined;
    for (const r of list) {
      if (r.day <= day) found = r;
      else break;
    }
    // A day before the first known rate uses the earliest one rather than failing.
    found ??= list[0];
    return { rate: found.usd_per_unit, rateDay: found.day };
  }

  async function fresh() {
    if (Date.now() - loadedAt > refreshMs) await reload();
  }

  return {
    /** Seeds the shipped table without overwriting rates an operator has loaded. */
    async init() {
      const shipped = JSON.parse(readFileSync(SHIPPED, 'utf8')) as {
        usd_per_unit: Record<string, Record<string, number>>;
      };
      const rows = Object.entries(shipped.usd_per_unit).flatMap(([currency, days]) =>
        Object.entries(days).map(([day, usd_per_unit]) => ({ currency, day, usd_per_unit })),
      );
      await store.upsert(rows, true);
      await reload();
    },
    async toUsd(amount: number, currency: string, day: string): Promise<Conversion | null> {
      await fresh();
      const r = rateOn(currency, day);
      return r && { value: amount * r.rate, ...r };
    },
    async fromUsd(usd: number, currency: string, day: string): Promise<Conversion | null> {
      await fresh();
      const r = rateOn(currency, day);
      return r && { value: usd / r.rate, ...r };
    },
    async upsert(rows: RateRow[]): Promise<number> {
      const n = await store.upsert(rows);
      await reload();
      return n;
    },
    async list(currency?: string): Promise<RateRow[]> {
      await fresh();
      return currency ? (byCurrency.get(currency.toUpperCase()) ?? []) : [...byCurrency.values()].flat();
    },
  };
}

export type ExchangeRateService = ReturnType<typeof createExchangeRateService>;
