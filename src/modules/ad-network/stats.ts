import type { Scope } from '../../types/domain.js';
import { invalid } from '../../http/errors.js';
import type { ExchangeRateService } from '../exchange-rates/service.js';
import { toAppError } from './client.js';
import { PAGE_LIMIT, type ConnectionService } from './connection.js';
import type { AccountRow } from './store.js';
import type { StatRow, StatsStore } from './stats-store.js';
import { addDays, localDay, midnightIso } from '../../lib/time.js';

export const STAT_FIELDS = 'spend,impressions,swipes,view_completion,conversion_purchases';
const MAX_DAYS = 92;
const MAX_BREAKDOWN_PAGES = 20;

interface Series {
  start_time: string;
  stats?: Record<string, number>;
}

/** Pulls DAY stats (each campaign's own series and its per-ad-squad breakdown) and stores them with USD spend. */
export function createStatsService({
  conn,
  store,
  rates,
}: {
  conn: ConnectionService;
  store: StatsStore;
  rates: ExchangeRateService;
}) {
  async function toRows(
    acct: AccountRow,
    type: 'campaign' | 'adsquad',
    id: string,
    series: Series[],
  ): Promise<StatRow[]> {
    const out: StatRow[] = [];
    for (const s of series) {
      // Timeseries boundaries carry the account's offset, so the date part is the account-local day.
      const day = s.start_time.slice(0, 10);
      const st = s.stats ?? {};
      const micro = Math.round(Number(st.spend ?? 0));
      const local = micro / 1_000_000;
      const conv = await rates.toUsd(local, acct.currency, day);
      out.push({
        ad_account_id: acct.id,
        entity_type: type,
        entity_id: id,
        day,
        impressions: Number(st.impressions ?? 0),
        swipes: Number(st.swipes ?? 0),
        view_completion: Number(st.view_completion ?? 0),
        conversion_purchases: Number(st.conversion_purchases ?? 0),
        spend_local_micro: micro,
        spend_local: local,
        currency: acct.currency,
        usd_rate: conv ? conv.rate : null,
        rate_day: conv ? conv.rateDay : null,
        spend_usd: conv ? Math.round(conv.value * 1e6) / 1e6 : null,
      });
    }
    return out;
  }

  function range(acct: AccountRow, from?: string, to?: string) {
    const today = localDay(Date.now(), acct.timezone);
    const end = to ?? today;
    const start = from ?? addDays(end, -6);
    if (start > end) throw invalid('from must not be after to', '/body/from');
    if (Date.parse(end) - Date.parse(start) > MAX_DAYS * 86_400_000)
      throw invalid(`at most ${MAX_DAYS} days per pull`, '/body/from');
    return { start, end };
  }

  /**
   * One campaign, DAY granularity over account-local midnights (the network refuses other boundaries):
   * its own series from GET /campaigns/{id}/stats, then its ad squads from the same call with
   * breakdown=adsquad, which holds only the children (breakdown_stats.adsquad), paged with limit.
   */
  async function pullCampaign(scope: Scope, acct: AccountRow, campaignId: string, from?: string, to?: string) {
    const { start, end } = range(acct, from, to);
    const path = `/campaigns/${encodeURIComponent(campaignId)}/stats`;
    const query = {
      granularity: 'DAY',
      fields: STAT_FIELDS,
      start_time: midnightIso(start, acct.timezone),
      end_time: midnightIso(addDays(end, 1), acct.timezone),
    };
    const get = async (next: string, q?: Record<string, string | number>) => {
      try {
        return await conn.call(scope, { method: 'GET', path: next, query: q }, acct.id);
      } catch (err) {
        throw toAppError(err);
      }
    };
    const own = (await get(path, query)).timeseries_stats?.[0]?.timeseries_stat;
    const rows = await toRows(acct, 'campaign', campaignId, own?.timeseries ?? []);
    const squads: { id: string; rows: StatRow[] }[] = [];
    let next: string | undefined = path;
    let q: Record<string, string | number> | undefined = { ...query, breakdown: 'adsquad', limit: PAGE_LIMIT };
    for (let pages = 0; next && pages < MAX_BREAKDOWN_PAGES; pages++) {
      const body = await get(next, q);
      for (const b of body.timeseries_stats?.[0]?.timeseries_stat?.breakdown_stats?.adsquad ?? []) {
        const r = await toRows(acct, 'adsquad', String(b.id), b.timeseries ?? []);
        squads.push({ id: String(b.id), rows: r });
        rows.push(...r);
      }
      next = body.paging?.next_link || undefined;
      q = undefined; // next_link carries the query and the cursor
    }
    await store.upsert(scope, rows);
    return { rows, squads, start, end };
  }

  async function pullAccount(
    scope: Scope,
    acct: AccountRow,
    o: { campaignId?: string; from?: string; to?: string } = {},
  ) {
    const ids = o.campaignId
      ? [o.campaignId]
      : (
          await conn.all(
            scope,
            `/adaccounts/${encodeURIComponent(acct.id)}/campaigns`,
            'campaigns',
            'campaign',
            acct.id,
          )
        ).map((c) => String(c.id));
    let stored = 0;
    for (const id of ids) stored += (await pullCampaign(scope, acct, id, o.from, o.to)).rows.length;
    return { campaigns: ids.length, rows: stored };
  }

  return { pullCampaign, pullAccount, read: store.read };
}

export type StatsService = ReturnType<typeof createStatsService>;
