import type { Scope } from '../../types/domain.js';
import { invalid, notFound } from '../../http/errors.js';
import {
  addDays,
  addMonths,
  buckets,
  compareWindow,
  diffDays,
  isDate,
  type CompareMode,
  type Granularity,
} from './dates.js';
import type { FunnelAnswers } from './funnel-answers.js';
import { FUNNELS, funnelSteps, resolveSteps, type FunnelStep } from './funnels.js';
import type { RollupRunner } from './jobs.js';
import { change, familiesFor, isMetric, METRICS, metricExact, metricValue, round2, type Metric } from './metrics.js';
import { EMPTY_RAW, type AnalyticsReadModel, type Env, type Segment } from './read-model.js';

export const MAX_RANGE_DAYS = 731;

function range(
  start: string | undefined,
  end: string | undefined,
  today: string,
  defaultStart: (end: string) => string,
) {
  if (start !== undefined && !isDate(start))
    throw invalid(`start_date "${start}" is not a valid YYYY-MM-DD date`, '/querystring/start_date');
  if (end !== undefined && !isDate(end))
    throw invalid(`end_date "${end}" is not a valid YYYY-MM-DD date`, '/querystring/end_date');
  const e = end ?? today;
  const s = start ?? defaultStart(e);
  if (s > e) throw invalid('start_date is after end_date', '/querystring/start_date');
  if (diffDays(s, e) + 1 > MAX_RANGE_DAYS)
    throw invalid('The date range is longer than 2 years', '/querystring/start_date');
  return { start: s, end: e };
}

const COMPARE_LABEL: Record<CompareMode, string> = {
  previous_period: 'Previous period',
  previous_month: 'Previous month',
  previous_year: 'Previous year',
};

const ICONS: Record<string, string> = {
  api_key: 'key',
  app: 'app',
  settings: 'settings',
  export: 'download',
  option_set: 'list',
  webhook: 'webhook',
  bundle: 'package',
  config_bundle: 'package',
  onboarding_flow: 'flow',
  paywall: 'paywall',
  in_app_message: 'message',
  remote_config: 'sliders',
  feature_flag: 'flag',
  ad_network: 'megaphone',
  experiment: 'flask',
  member: 'user',
};

export function relativeTime(then: Date, now = new Date()): string {
  const s = Math.max(0, Math.round((now.getTime() - then.getTime()) / 1000));
  const unit = (n: number, u: string) => `${n} ${u}${n === 1 ? '' : 's'} ago`;
  if (s < 45) return 'just now';
  if (s < 3600) return unit(Math.max(1, Math.round(s / 60)), 'minute');
  if (s < 86_400) return unit(Math.round(s / 3600), 'hour');
  if (s < 30 * 86_400) return unit(Math.round(s / 86_400), 'day');
  if (s < 365 * 86_400) return unit(Math.round(s / (30 * 86_400)), 'month');
  return unit(Math.round(s / (365 * 86_400)), 'year');
}

/** Calendar date of an instant in a timezone. */
const dateIn = (d: Date, tz: string) =>
  new Intl.DateTimeFormat('en-CA', { timeZone: tz, year: 'numeric', month: '2-digit', day: '2-digit' }).format(d);

/**
 * How fresh an answer is: the rollups' date (`as_of`, app timezone) and instant, and the timezone
 * they were built in (`rebuilding` while a timezone change waits for its rebuild).
 */
function freshness(
  ctx: { timezone: string; folded_at: Date | null; rollup_timezone: string | null },
  rollupIntervalS: number,
) {
  return {
    as_of: ctx.folded_at ? dateIn(ctx.folded_at, ctx.timezone) : null,
    folded_at: ctx.folded_at?.toISOString() ?? null,
    timezone: ctx.timezone,
    rebuilding: ctx.rollup_timezone !== null && ctx.rollup_timezone !== ctx.timezone,
    rollup_interval_s: rollupIntervalS,
  };
}

export function createAnalyticsService({
  read,
  runner,
  funnels,
  rollupIntervalS,
}: {
  read: AnalyticsReadModel;
  runner: RollupRunner;
  funnels: FunnelAnswers;
  /** ROLLUP_INTERVAL_S: told to clients, which refetch answers older than it (console). */
  rollupIntervalS: number;
}) {
  async function context(scope: Scope) {
    const ctx = await read.context(scope);
    if (!ctx) throw notFound('App');
    return ctx;
  }

  return {
    /**
     * One fold started after the call, then the funnel answers it made stale (the admin endpoint:
     * the pipeline settled now, every event committed before the call folded).
     */
    async runRollup() {
      const r = await runner.runAfterNow();
      await funnels.refresh(true);
      return r;
    },

    async kpis(
      scope: Scope,
      q: { start_date?: string; end_date?: string; compare?: CompareMode; platform?: string; environment?: Env },
    ) {
      const ctx = await context(scope);
      const { start, end } = range(q.start_date, q.end_date, ctx.today, (e) => addDays(e, -29));
      const mode = q.compare ?? 'previous_period';
      const cmp = compareWindow(start, end, mode);
      const days = buckets(start, end, 'daily');
      const agg = await read.aggregates(
        scope,
        {
          env: q.environment ?? 'production',
          buckets: [{ s: start, e: end }, { s: cmp.start, e: cmp.end }, ...days],
          segment: 'overall',
          platform: q.platform ?? null,
          today: ctx.today,
        },
        familiesFor(METRICS),
      );
      const raw = (i: number) => agg.get(`${i}|`) ?? EMPTY_RAW;
      const n = diffDays(start, end) + 1;
      const kpis = METRICS.map((metric) => {
        const current = metricExact(metric, raw(1), n);
        const previous = metricExact(metric, raw(2), diffDays(cmp.start, cmp.end) + 1);
        const r2 = (v: number | null) => (v === null ? null : round2(v));
        return {
          metric,
          current: r2(current),
          previous: r2(previous),
          ...change(current, previous),
          sparkline: days.map((_, i) => metricValue(metric, raw(i + 3), 1)),
        };
      });
      return {
        kpis,
        period: { start, end },
        compared_to: cmp,
        compare: mode,
        platform: q.platform ?? null,
        meta: freshness(ctx, rollupIntervalS),
      };
    },

    async timeseries(
      scope: Scope,
      q: {
        metrics: string;
        period?: '7d' | '30d' | '90d' | '12m';
        start_date?: string;
        end_date?: string;
        granularity?: Granularity;
        segment?: Segment;
        compare?: CompareMode;
        environment?: Env;
      },
    ) {
      const names = [
        ...new Set(
          q.metrics
            .split(',')
            .map((m) => m.trim())
            .filter(Boolean),
        ),
      ];
      const unknown = names.filter((m) => !isMetric(m));
      if (names.length === 0) throw invalid('metrics must name at least one metric', '/querystring/metrics');
      if (unknown.length) throw invalid(`Unknown metric(s): ${unknown.join(', ')}`, '/querystring/metrics');
      const metrics = names as Metric[];
      const ctx = await context(scope);
      const period = q.period ?? '30d';
      const { start, end } = range(q.start_date, q.end_date, ctx.today, (e) =>
        period === '12m' ? addDays(addMonths(e, -12), 1) : addDays(e, -(Number(period.slice(0, -1)) - 1)),
      );
      const g = q.granularity ?? 'daily';
      const segment = q.segment ?? 'overall';
      const cur = buckets(start, end, g);
      const cmp = q.compare ? compareWindow(start, end, q.compare) : null;
      const prev = cmp ? buckets(cmp.start, cmp.end, g) : [];
      const agg = await read.aggregates(
        scope,
        {
          env: q.environment ?? 'production',
          buckets: [...cur, ...prev].map((b) => ({ s: b.s, e: b.e })),
          segment,
          platform: null,
          today: ctx.today,
        },
        familiesFor(metrics),
      );
      const segs =
        segment === 'overall' ? [''] : [...new Set([...agg.keys()].map((k) => k.slice(k.indexOf('|') + 1)))].sort();
      const series = (m: Metric, list: typeof cur, offset: number) =>
        list.flatMap((b, i) =>
          segs.map((sv) => ({
            date: b.date,
            value: metricValue(m, agg.get(`${i + 1 + offset}|${sv}`) ?? EMPTY_RAW, diffDays(b.s, b.e) + 1),
            ...(segment === 'overall' ? {} : { breakdown_value: sv }),
          })),
        );
      return {
        metrics: metrics.map((m) => ({
          metric: m,
          data: series(m, cur, 0),
          ...(cmp && q.compare
            ? {
                compare_data: series(m, prev, cur.length),
                compare_label: `${COMPARE_LABEL[q.compare]} (${cmp.start} to ${cmp.end})`,
              }
            : {}),
        })),
        period: { start, end },
        granularity: g,
        segment,
        compare: q.compare ?? null,
        meta: freshness(ctx, rollupIntervalS),
      };
    },

    async funnel(scope: Scope, name: string, env: Env = 'production') {
      if (!Object.hasOwn(FUNNELS, name)) throw notFound('Funnel');
      const ctx = await context(scope);
      const r = await funnels.answer(scope, env, name, ctx);
      return {
        funnel_name: name,
        steps: funnelSteps(r.steps, r.users),
        date: r.date,
        computed_at: r.computed_at.toISOString(),
        meta: freshness(ctx, rollupIntervalS),
      };
    },

    /** The nine named funnels with the steps this app uses (its override or the default). */
    async funnelDefinitions(scope: Scope) {
      const overrides = await read.funnelExtra(scope);
      return Object.keys(FUNNELS).map((name) => {
        const steps = resolveSteps(name, overrides);
        return { funnel_name: name, steps, overridden: steps !== FUNNELS[name] };
      });
    },

    async setFunnel(scope: Scope, name: string, steps: FunnelStep[] | null) {
      if (!Object.hasOwn(FUNNELS, name)) throw notFound('Funnel');
      if (steps)
        steps.forEach((s, i) => {
          if (!s.source && !s.event) throw invalid('A step needs an event or an ad-stats source', `/body/steps/${i}`);
        });
      await read.setFunnelOverride(scope, name, steps);
      return { funnel_name: name, steps: steps ?? FUNNELS[name], overridden: steps !== null };
    },

    async retention(scope: Scope, q: { start_date?: string; end_date?: string; segment?: Segment; environment?: Env }) {
      const ctx = await context(scope);
      const { start, end } = range(q.start_date, q.end_date, ctx.today, (e) => addDays(e, -89));
      const segment = q.segment ?? 'overall';
      const rows = await read.cohorts(scope, q.environment ?? 'production', start, end, segment);
      const cohorts = rows.map((r) => {
        const day = String(r.day);
        const size = Number(r.size);
        const at = (n: number) => (addDays(day, n) > ctx.today ? null : round2((Number(r[`r${n}`]) / size) * 100));
        return {
          cohort_date: day,
          cohort_size: size,
          retention: { d1: at(1), d3: at(3), d7: at(7), d14: at(14), d30: at(30), d60: at(60), d90: at(90) },
          segment: segment === 'overall' ? 'overall' : String(r.seg),
        };
      });
      return { cohorts, period: { start, end }, segment, meta: freshness(ctx, rollupIntervalS) };
    },

    async activity(scope: Scope) {
      const now = new Date();
      const rows = await read.activity(scope);
      return {
        items: rows.map((r) => ({
          id: String(r.id),
          icon: ICONS[r.entity_type] ?? 'activity',
          description: r.description,
          timestamp: r.created_at.toISOString(),
          relative_time: relativeTime(r.created_at, now),
          entity_type: r.entity_type,
          action: r.action,
        })),
      };
    },
  };
}

export type AnalyticsService = ReturnType<typeof createAnalyticsService>;
