import { api, unwrap } from '../api/client';
import type { paths } from '../api/schema';
import { type Scope, STALE_MS, type StartQuery, scopeHeaders, scopeKey } from '../scope';

/**
 * The analytics pages' queries, shared by the pages and by their prefetch: on a first load the
 * org and app are known from storage, so first-load.ts starts a page's queries beside /me (one round
 * trip less) under the very keys the page then reads. Each call names its own org and app
 * (headers from the scope of its key), so a prefetch made before /me answers asks for what its
 * key says. This file is in the entry chunk, which has no React: keep it to query definitions.
 */
export type KpiQuery = NonNullable<paths['/api/v1/analytics/kpis']['get']['parameters']['query']>;
export type SeriesQuery = paths['/api/v1/analytics/kpis/timeseries']['get']['parameters']['query'];
export type Compare = NonNullable<KpiQuery['compare']>;
export type RetentionSegment = NonNullable<
  NonNullable<paths['/api/v1/analytics/retention']['get']['parameters']['query']>['segment']
>;

/** What the dashboard shows first: the default period (the API's), compared to the previous one. */
export const DEFAULT_COMPARE: Compare = 'previous_period';
export const DEFAULT_SERIES: {
  metrics: string[];
  granularity: NonNullable<SeriesQuery['granularity']>;
  segment: NonNullable<SeriesQuery['segment']>;
} = { metrics: ['dau', 'new_users'], granularity: 'daily', segment: 'overall' };

/**
 * The rollup interval (ROLLUP_INTERVAL_S) as the service tells it in every analytics answer
 * (meta.rollup_interval_s), in ms; unknown until the first answer. An answer older than it may
 * miss a fold: opening a page refetches it, and an open page refetches at that pace.
 */
let rollupMs: number | undefined;

function learn<T>(answer: Promise<T>): Promise<T> {
  return answer.then((d) => {
    const s = (d as { meta?: { rollup_interval_s?: unknown } }).meta?.rollup_interval_s;
    if (typeof s === 'number' && s > 0) rollupMs = s * 1000;
    return d;
  });
}

/**
 * Freshness of every analytics query: stale once older than the rollup interval (the app's default
 * before an answer told it: an answer just prefetched is not asked again), refetched at that interval while the tab is visible (TanStack
 * Query pauses the timer in a hidden tab: refetchIntervalInBackground stays false).
 */
export const fresh = {
  staleTime: () => rollupMs ?? STALE_MS,
  refetchInterval: () => rollupMs ?? false,
  refetchIntervalInBackground: false,
};

/** The key prefix of every analytics query of a scope (what a Refresh control refetches). */
export const analyticsKey = (s: Scope) => scopeKey(s, 'analytics');

export const kpisQuery = (s: Scope, query: KpiQuery) => ({
  ...fresh,
  queryKey: [...analyticsKey(s), 'kpis', query],
  queryFn: () => learn(unwrap(api.GET('/api/v1/analytics/kpis', { params: { query }, headers: scopeHeaders(s) }))),
});

export const seriesQuery = (s: Scope, query: SeriesQuery) => ({
  ...fresh,
  queryKey: [...analyticsKey(s), 'timeseries', query],
  queryFn: () =>
    learn(unwrap(api.GET('/api/v1/analytics/kpis/timeseries', { params: { query }, headers: scopeHeaders(s) }))),
});

export const activityQuery = (s: Scope) => ({
  ...fresh,
  queryKey: [...analyticsKey(s), 'activity'],
  queryFn: () => unwrap(api.GET('/api/v1/analytics/activity', { headers: scopeHeaders(s) })),
});

export const funnelListQuery = (s: Scope) => ({
  ...fresh,
  queryKey: [...analyticsKey(s), 'funnel-defs'],
  queryFn: () => unwrap(api.GET('/api/v1/analytics/funnels', { headers: scopeHeaders(s) })),
});

export const funnelQuery = (s: Scope, funnelName: string) => ({
  ...fresh,
  queryKey: [...analyticsKey(s), 'funnel', funnelName],
  queryFn: () =>
    learn(
      unwrap(
        api.GET('/api/v1/analytics/funnel/{funnelName}', {
          params: { path: { funnelName }, query: { environment: s.environment } },
          headers: scopeHeaders(s),
        }),
      ),
    ),
});

export const retentionQuery = (s: Scope, segment: RetentionSegment) => ({
  ...fresh,
  queryKey: [...analyticsKey(s), 'retention', segment],
  queryFn: () =>
    learn(
      unwrap(
        api.GET('/api/v1/analytics/retention', {
          params: { query: { segment, environment: s.environment } },
          headers: scopeHeaders(s),
        }),
      ),
    ),
});

// Prefetches: what each page asks for first. A failure stays in its query; the page retries it.
export function prefetchDashboard(start: StartQuery, s: Scope) {
  const env = { environment: s.environment };
  void start(kpisQuery(s, { compare: DEFAULT_COMPARE, ...env }));
  const { metrics, ...series } = DEFAULT_SERIES;
  void start(seriesQuery(s, { metrics: metrics.join(','), ...series, ...env }));
  void start(activityQuery(s));
}

export function prefetchFunnels(start: StartQuery, s: Scope) {
  start(funnelListQuery(s)).then(
    (d) => d.data.forEach((f) => void start(funnelQuery(s, f.funnel_name))),
    () => undefined,
  );
}

export function prefetchRetention(start: StartQuery, s: Scope) {
  void start(retentionQuery(s, 'overall'));
}
