import type { Metric, Registry } from 'prom-client';

/** Upper bounds (seconds) of http_request_duration_seconds' buckets. */
const SECONDS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

interface Series {
  labels: { method: string; route: string; status: string };
  count: number;
  sum: number;
  /** Observations per bucket, not cumulative (the scrape adds them up). */
  buckets: Float64Array;
}

/**
 * The requests of one route pattern, by method and status. A request bumps plain numbers of a
 * series found by two map look-ups: no label hashing, validation or object per request, which
 * prom-client's Counter and Histogram (even their `labels()` children) do on every call.
 */
export class RouteSeries {
  private readonly byMethod = new Map<string, Map<number, Series>>();

  constructor(
    private readonly route: string,
    private readonly all: Series[],
  ) {}

  observe(method: string, status: number, seconds: number): void {
    let statuses = this.byMethod.get(method);
    if (!statuses) {
      statuses = new Map();
      this.byMethod.set(method, statuses);
    }
    let s = statuses.get(status);
    if (!s) {
      const labels = { method, route: this.route, status: String(status) };
      s = { labels, count: 0, sum: 0, buckets: new Float64Array(SECONDS.length) };
      statuses.set(status, s);
      this.all.push(s);
    }
    s.count++;
    s.sum += seconds;
    for (let i = 0; i < SECONDS.length; i++) {
      if (seconds <= SECONDS[i]) {
        s.buckets[i]++;
        return;
      }
    }
  }
}

interface Sample {
  labels: Record<string, string | number>;
  value: number;
  metricName?: string;
}

/** A metric the registry formats like its own: the samples are built at scrape time only. */
function register(registry: Registry, name: string, help: string, type: string, samples: () => Sample[]) {
  const metric = {
    name,
    help,
    type,
    aggregator: 'sum',
    get: async () => ({ name, help, type, aggregator: 'sum', values: samples() }),
    reset: () => undefined,
  };
  registry.registerMetric(metric as unknown as Metric);
}

/**
 * http_requests_total (counter) and http_request_duration_seconds (histogram) by method, route
 * pattern and status, the same series and text as prom-client's own types would give.
 */
export function createHttpSeries(registry: Registry) {
  const all: Series[] = [];
  const routes = new Map<string, RouteSeries>();
  register(registry, 'http_requests_total', 'HTTP requests by method, route and status', 'counter', () =>
    all.map((s) => ({ labels: s.labels, value: s.count })),
  );
  const duration = 'http_request_duration_seconds';
  register(registry, duration, 'HTTP request latency by method, route and status', 'histogram', () =>
    all.flatMap((s) => {
      let acc = 0;
      const bucket = `${duration}_bucket`;
      const out: Sample[] = SECONDS.map((le, i) => {
        acc += s.buckets[i];
        return { labels: { le, ...s.labels }, value: acc, metricName: bucket };
      });
      out.push(
        { labels: { le: '+Inf', ...s.labels }, value: s.count, metricName: bucket },
        { labels: s.labels, value: s.sum, metricName: `${duration}_sum` },
        { labels: s.labels, value: s.count, metricName: `${duration}_count` },
      );
      return out;
    }),
  );
  return {
    /** The series of a route pattern: look it up once (when the route is registered), not per request. */
    route(pattern: string): RouteSeries {
      let r = routes.get(pattern);
      if (!r) {
        r = new RouteSeries(pattern, all);
        routes.set(pattern, r);
      }
      return r;
    },
  };
}

export type HttpSeries = ReturnType<typeof createHttpSeries>;
