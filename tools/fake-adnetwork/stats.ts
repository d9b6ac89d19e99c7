import {
  addDays,
  decodeCursor,
  encodeCursor,
  limitInRange,
  localDay,
  localParts,
  midnightIso,
  seeded,
  type Entity,
  type World,
} from './state.js';

export const STAT_FIELDS = ['impressions', 'swipes', 'spend', 'view_completion', 'conversion_purchases'] as const;
type Stats = Record<string, number>;

export class StatsError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** Deterministic daily stats of one ad: a function of (seed, ad id, local day), zero on days it did not deliver. */
function adDay(w: World, ad: Entity, day: string): Stats {
  if (!ad.activeDays?.has(day))
    return { impressions: 0, swipes: 0, spend: 0, view_completion: 0, conversion_purchases: 0 };
  const r = seeded(w.opts.seed ?? 42, ad.id, day);
  const impressions = 500 + r(5000);
  let spend = impressions * (2000 + r(3000));
  const squad = w.entities.get(ad.fields.ad_squad_id);
  const today = localDay(Date.now(), w.accounts.get(ad.ad_account_id)!.timezone);
  if (squad?.capHit && day === today) {
    // Cap reached: the squad spent exactly its daily budget, split over its delivering ads.
    const siblings = [...w.entities.values()].filter(
      (x) => x.kind === 'ad' && x.fields.ad_squad_id === squad.id && x.activeDays?.has(day),
    );
    spend = Math.floor((squad.fields.daily_budget_micro ?? 0) / Math.max(1, siblings.length));
  }
  return {
    impressions,
    swipes: Math.floor((impressions * (1 + r(5))) / 100),
    spend,
    view_completion: Math.floor((impressions * (10 + r(30))) / 100),
    conversion_purchases: r(10),
  };
}

function adsUnder(w: World, e: Entity | { kind: 'adaccount'; id: string }): Entity[] {
  const ads = [...w.entities.values()].filter((x) => x.kind === 'ad');
  if (e.kind === 'ad') return [e as Entity];
  if (e.kind === 'adsquad') return ads.filter((a) => a.fields.ad_squad_id === e.id);
  if (e.kind === 'campaign')
    return ads.filter((a) => w.entities.get(a.fields.ad_squad_id)?.fields.campaign_id === e.id);
  return ads.filter((a) => a.ad_account_id === e.id);
}

const sum = (rows: Stats[], fields: string[]): Stats =>
  Object.fromEntries(fields.map((f) => [f, rows.reduce((s, r) => s + (r[f] ?? 0), 0)]));

function checkBoundary(iso: string, tz: string, granularity: string, which: string): string {
  const ms = Date.parse(iso);
  if (Number.isNaN(ms)) throw new StatsError('E1001', `${which} is not a valid ISO-8601 time`);
  const p = localParts(ms, tz);
  if (granularity === 'DAY' && (p.h || p.m || p.s)) {
    throw new StatsError(
      'E1004',
      `Unsupported Stats Query: Timeseries queries with DAY granularity must have a ${which} that is the start of day (00:00:00) for the account's timezone (${tz})`,
    );
  }
  if (granularity === 'HOUR' && (p.m || p.s))
    throw new StatsError('E1004', `Unsupported Stats Query: HOUR granularity must have a ${which} on the hour`);
  return p.day;
}

const TYPE_NAME = {
  ad: 'AD',
  adsquad: 'AD_SQUAD',
  campaign: 'CAMPAIGN',
  adaccount: 'AD_ACCOUNT',
  media: 'MEDIA',
  creative: 'CREATIVE',
} as const;

/** Parses `limit` (50..1000, only with breakdown) and the opaque cursor of a breakdown page. */
function breakdownPage(q: Record<string, string | undefined>) {
  if (q.limit === undefined) return undefined;
  if (!q.breakdown) throw new StatsError('E1008', 'Pagination limit can only be used with breakdown query');
  const limit = Number(q.limit);
  if (!limitInRange(limit)) throw new StatsError('E1007', 'limit must be between 50 and 1000');
  return { limit, offset: decodeCursor(q.cursor) };
}

/**
 * Builds the stats answer for GET /{kind}s/{id}/stats (DAY and TOTAL granularity). Without breakdown
 * it is the entity's own series; with breakdown=<level> it holds only the children under
 * breakdown_stats.<level> (the parent's own series is not in that answer), paged when limit is set.
 */
export function statsFor(
  w: World,
  target: Entity | { kind: 'adaccount'; id: string },
  q: Record<string, string | undefined>,
  link: (cursor: string) => string,
) {
  const acctId = target.kind === 'adaccount' ? target.id : (target as Entity).ad_account_id;
  const tz = w.accounts.get(acctId)!.timezone;
  const granularity = (q.granularity ?? 'TOTAL').toUpperCase();
  if (!['TOTAL', 'DAY', 'HOUR'].includes(granularity))
    throw new StatsError('E1002', 'granularity must be TOTAL, DAY or HOUR');
  if (granularity === 'HOUR') throw new StatsError('E1005', 'HOUR granularity is not simulated by this fake');
  const page = breakdownPage(q);
  const fields = q.fields
    ? q.fields.split(',').filter((f) => (STAT_FIELDS as readonly string[]).includes(f))
    : [...STAT_FIELDS];
  if (!q.start_time || !q.end_time) throw new StatsError('E1003', 'start_time and end_time are required');
  const start = checkBoundary(q.start_time, tz, granularity, 'start time');
  const end = checkBoundary(q.end_time, tz, granularity, 'end time');
  if (end <= start) throw new StatsError('E1003', 'end_time must be after start_time');
  const days: string[] = [];
  for (let d = start; d < end && days.length < 93; d = addDays(d, 1)) days.push(d);
  const breakdown = q.breakdown as 'ad' | 'adsquad' | 'campaign' | undefined;
  if (breakdown && !['ad', 'adsquad', 'campaign'].includes(breakdown))
    throw new StatsError('E1002', 'breakdown must be ad, adsquad or campaign');
  const series = (group: Entity[]) =>
    days.map((d) => ({
      start_time: midnightIso(d, tz),
      end_time: midnightIso(addDays(d, 1), tz),
      stats: sum(
        group.map((a) => adDay(w, a, d)),
        fields,
      ),
    }));
  const total = (group: Entity[]) =>
    sum(
      days.map((d) =>
        sum(
          group.map((a) => adDay(w, a, d)),
          fields,
        ),
      ),
      fields,
    );
  const base = {
    id: target.id,
    type: TYPE_NAME[target.kind],
    granularity,
    start_time: midnightIso(start, tz),
    end_time: midnightIso(end, tz),
    finalized_data_end_time: new Date(Date.now() - 15 * 60_000).toISOString(),
  };
  const wrap = (stat: Record<string, unknown>, paging?: { next_link?: string }) =>
    granularity === 'TOTAL'
      ? {
          ...(paging ? { paging } : {}),
          total_stats: [{ sub_request_status: 'SUCCESS', total_stat: { ...base, ...stat } }],
        }
      : {
          ...(paging ? { paging } : {}),
          timeseries_stats: [{ sub_request_status: 'SUCCESS', timeseries_stat: { ...base, ...stat } }],
        };
  const ads = adsUnder(w, target);
  if (!breakdown) return wrap(granularity === 'TOTAL' ? { stats: total(ads) } : { timeseries: series(ads) });

  const keyOf = (a: Entity) =>
    breakdown === 'ad'
      ? a.id
      : breakdown === 'adsquad'
        ? a.fields.ad_squad_id
        : w.entities.get(a.fields.ad_squad_id)?.fields.campaign_id;
  const groups = new Map<string, Entity[]>();
  // Every child appears (in creation order), with zeros when it has no ads, unless omit_empty.
  const children = [...w.entities.values()]
    .filter(
      (x) =>
        !x.deleted &&
        x.kind === breakdown &&
        (target.kind === 'adaccount' ? x.ad_account_id === target.id : adsUnderIncludes(w, target as Entity, x)),
    )
    .sort((a, b) => a.created_at.localeCompare(b.created_at));
  for (const c of children) groups.set(c.id, []);
  for (const a of ads) groups.get(keyOf(a))?.push(a);
  let rows: Record<string, unknown>[] = [...groups.entries()].map(([id, g]) =>
    granularity === 'TOTAL' ? { id, stats: total(g) } : { id, type: TYPE_NAME[breakdown], timeseries: series(g) },
  );
  if (q.omit_empty === 'true') rows = rows.filter((r) => JSON.stringify(r).match(/":[1-9]/));
  let paging: { next_link?: string } | undefined;
  if (page) {
    const more = page.offset + page.limit < rows.length;
    rows = rows.slice(page.offset, page.offset + page.limit);
    paging = more ? { next_link: link(encodeCursor(page.offset + page.limit)) } : {};
  }
  return wrap({ breakdown_stats: { [breakdown]: rows } }, paging);
}

function adsUnderIncludes(w: World, parent: Entity, child: Entity): boolean {
  if (parent.kind === 'campaign')
    return child.kind === 'adsquad'
      ? child.fields.campaign_id === parent.id
      : w.entities.get(child.fields.ad_squad_id)?.fields.campaign_id === parent.id;
  if (parent.kind === 'adsquad') return child.kind === 'ad' && child.fields.ad_squad_id === parent.id;
  return child.id === parent.id;
}
