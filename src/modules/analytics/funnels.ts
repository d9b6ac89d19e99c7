import { Type, type Static } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import type { Queryable } from '../../db/pool.js';
import type { Scope } from '../../types/domain.js';
import { FUNNELS as DEFAULT_FUNNELS } from './definitions.js';
import { round2 } from './metrics.js';
import type { Env } from './read-model.js';

/**
 * A funnel step. `event` names an SDK event ('$trial' = purchase_completed with is_trial);
 * `match` refines it: `first_ever` = the device's first such event ever, `later_day` = on a later
 * day than the previous step, `days_after_first` = on step 1's day + `days` or later.
 * `source` marks ad-network steps (impressions/swipes), which come from ad stats, not events.
 */
export const FunnelStep = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 64 }),
  event: Type.Optional(Type.String({ minLength: 1, maxLength: 128 })),
  match: Type.Optional(
    Type.Union([
      Type.Literal('any'),
      Type.Literal('first_ever'),
      Type.Literal('later_day'),
      Type.Literal('days_after_first'),
    ]),
  ),
  days: Type.Optional(Type.Integer({ minimum: 1, maximum: 90 })),
  source: Type.Optional(Type.Union([Type.Literal('ad_impressions'), Type.Literal('ad_swipes')])),
});
export type FunnelStep = Static<typeof FunnelStep>;
export const FunnelSteps = Type.Array(FunnelStep, { minItems: 1, maxItems: 10 });

/** The default funnels (definitions.ts, where every metric's meaning lives). */
export const FUNNELS: Record<string, FunnelStep[]> = DEFAULT_FUNNELS;

/** The app's override when it is well-formed, else the default definition. */
export function resolveSteps(name: string, overrides: unknown): FunnelStep[] {
  const o = overrides && typeof overrides === 'object' ? (overrides as Record<string, unknown>)[name] : undefined;
  if (o !== undefined && Value.Check(FunnelSteps, o) && o.every((s) => s.source || s.event)) return o;
  return FUNNELS[name];
}

/**
 * Users per event step over the rollup table an_steps (ad-stats steps are left at 0; see
 * `withAdSteps`): entry = earliest step-1 event in the 30 days ending on `date`; step k = earliest
 * step-k event at or after step k-1's, within 7 days of entry (days_after_first steps are exempt:
 * "7 or more days after" cannot also be "within 7 days").
 */
export async function funnelCounts(
  db: Queryable,
  scope: Scope,
  env: Env,
  tz: string,
  date: string,
  steps: FunnelStep[],
): Promise<number[]> {
  const eventSteps = steps.map((s, i) => ({ s, i })).filter((x) => !x.s.source);
  const counts = steps.map(() => 0);
  if (eventSteps.length === 0) return counts;
  const params: unknown[] = [scope.tenantId, scope.appId, env, date, tz];
  const p = (v: unknown) => `$${params.push(v)}`;
  const base = (x: string) => `${x}.tenant_id = $1 AND ${x}.app_id = $2 AND ${x}.environment = $3`;
  const ctes: string[] = [];
  // Each step's rows are read once, as a primary-key range (event, day span), and joined to the
  // previous step's users by hash: a per-user index probe costs more than reading the range once.
  // Entry is in the 30 days ending on $4 and later steps within 8 days of it, so no step row before
  // $4 - 31 or after $4 + 9 can match (days_after_first steps are unbounded after).
  eventSteps.forEach(({ s }, k) => {
    const name = p(s.event);
    if (k === 0) {
      ctes.push(
        s.match === 'first_ever'
          ? // First ever: no row of that event on an earlier day (one anti-join against the earlier rows).
            `f0 AS (SELECT s.anon_id, min(s.tss[1]) AS t1 FROM an_steps s WHERE ${base('s')} AND s.event_name = ${name}
               AND s.day BETWEEN $4::date - 29 AND $4::date
               AND NOT EXISTS (SELECT 1 FROM an_steps z WHERE ${base('z')} AND z.event_name = ${name} AND z.day < $4::date - 29 AND z.anon_id = s.anon_id)
               GROUP BY s.anon_id)`
          : `f0 AS (SELECT s.anon_id, min(s.tss[1]) AS t1 FROM an_steps s WHERE ${base('s')} AND s.event_name = ${name}
               AND s.day BETWEEN $4::date - 29 AND $4::date GROUP BY s.anon_id)`,
      );
      ctes.push(`g0 AS MATERIALIZED (SELECT anon_id, t1, t1 AS tp, (t1 AT TIME ZONE $5)::date AS d1 FROM f0)`);
      return;
    }
    let cond: string;
    if (s.match === 'days_after_first') cond = `s.day >= g.d1 + ${s.days ?? 7} AND t >= g.tp`;
    else if (s.match === 'later_day')
      cond = `s.day > (g.tp AT TIME ZONE $5)::date AND s.day <= g.d1 + 8 AND t <= g.t1 + interval '7 days'`;
    else if (s.match === 'first_ever')
      cond = `s.day BETWEEN (g.tp AT TIME ZONE $5)::date - 1 AND g.d1 + 8 AND t >= g.tp AND t <= g.t1 + interval '7 days'
      AND NOT EXISTS (SELECT 1 FROM an_steps z WHERE ${base('z')} AND z.anon_id = g.anon_id AND z.event_name = ${name} AND z.day < s.day)
      AND t = s.tss[1]`;
    else
      cond = `s.day BETWEEN (g.tp AT TIME ZONE $5)::date - 1 AND g.d1 + 8 AND t >= g.tp AND t <= g.t1 + interval '7 days'`;
    const bound =
      s.match === 'days_after_first' ? `x.day >= $4::date - 31` : `x.day BETWEEN $4::date - 31 AND $4::date + 9`;
    ctes.push(
      `s${k} AS MATERIALIZED (SELECT x.anon_id, x.day, x.tss FROM an_steps x WHERE ${base('x')} AND x.event_name = ${name} AND ${bound})`,
    );
    ctes.push(`g${k} AS MATERIALIZED (SELECT g.anon_id, g.t1, g.d1, min(t) AS tp FROM g${k - 1} g
      JOIN s${k} s ON s.anon_id = g.anon_id
      CROSS JOIN LATERAL unnest(s.tss) AS t WHERE ${cond} GROUP BY g.anon_id, g.t1, g.d1)`);
  });
  const sql = `WITH ${ctes.join(',\n')} SELECT ${eventSteps.map((_, k) => `(SELECT count(*)::int FROM g${k}) AS c${k}`).join(', ')}`;
  const { rows } = await db.query<Record<string, number>>(sql, params);
  eventSteps.forEach(({ i }, k) => (counts[i] = rows[0][`c${k}`]));
  return counts;
}

/** Fills the ad-stats steps (impressions, swipes) of a funnel's counts; read live, they change without events. */
export async function withAdSteps(
  db: Queryable,
  scope: Scope,
  env: Env,
  date: string,
  steps: FunnelStep[],
  users: number[],
): Promise<number[]> {
  if (!steps.some((s) => s.source)) return users;
  const ads = env === 'production' ? await adTotals(db, scope, date) : { impressions: 0, swipes: 0 };
  return steps.map((s, i) =>
    s.source === 'ad_impressions' ? ads.impressions : s.source === 'ad_swipes' ? ads.swipes : users[i],
  );
}

/**
 * Impressions and swipes of the app's campaigns over the entry window, from the ad-network
 * capability's daily stats (campaign rows, ad-account local days). Ad stats have no sandbox.
 */
async function adTotals(db: Queryable, scope: Scope, date: string): Promise<{ impressions: number; swipes: number }> {
  const { rows: t } = await db.query<{ ok: boolean }>(`SELECT to_regclass('ad_network_stats') IS NOT NULL AS ok`);
  if (!t[0].ok) return { impressions: 0, swipes: 0 };
  const { rows } = await db.query<{ i: number; s: number }>(
    `SELECT coalesce(sum(impressions), 0)::float8 AS i, coalesce(sum(swipes), 0)::float8 AS s FROM ad_network_stats
      WHERE tenant_id = $1 AND app_id = $2 AND entity_type = 'campaign' AND day BETWEEN $3::date - 29 AND $3::date`,
    [scope.tenantId, scope.appId, date],
  );
  return { impressions: Number(rows[0].i), swipes: Number(rows[0].s) };
}

export function funnelSteps(steps: FunnelStep[], users: number[]) {
  return steps.map((s, i) => {
    if (i === 0)
      return {
        step_name: s.name,
        step_order: 1,
        users: users[0],
        conversion_rate: 100,
        cumulative_rate: 100,
        drop_off_rate: 0,
      };
    const conv = users[i - 1] === 0 ? null : round2((users[i] / users[i - 1]) * 100);
    return {
      step_name: s.name,
      step_order: i + 1,
      users: users[i],
      conversion_rate: conv,
      cumulative_rate: users[0] === 0 ? null : round2((users[i] / users[0]) * 100),
      drop_off_rate: conv === null ? null : round2(100 - conv),
    };
  });
}
