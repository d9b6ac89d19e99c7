import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Db } from '../../db/pool.js';
import type { JobHandlers } from '../../jobs/catalog.js';
import { createHttpSeries } from './http-series.js';
import type { MetricsStore } from './store.js';

const JOB_SECONDS = [0.1, 0.5, 1, 5, 15, 60, 300, 900, 3600];

export type IngestOutcome = 'accepted' | 'rejected' | 'sampled' | 'consent_declined';
const OUTCOMES: IngestOutcome[] = ['accepted', 'rejected', 'sampled', 'consent_declined'];

/**
 * The process's Prometheus registry. Counters and histograms are this process's own (sum them
 * over instances); the gauges read from the database at scrape time are the same on every
 * instance (take their max).
 */
export function createMetrics({
  db,
  store,
  onError,
}: {
  db: Db;
  store: MetricsStore;
  onError: (err: unknown) => void;
}) {
  const registry = new Registry();
  // Process CPU, memory, GC and the event loop lag (nodejs_eventloop_lag_seconds and its percentiles).
  collectDefaultMetrics({ register: registry });
  const registers = [registry];

  const http = createHttpSeries(registry);
  // Counted in plain numbers per batch, handed to prom-client at scrape time (its inc() hashes the labels).
  const ingested: Record<IngestOutcome, number> = { accepted: 0, rejected: 0, sampled: 0, consent_declined: 0 };
  new Counter({
    name: 'ingest_events_total',
    help: 'Ingested events by outcome (accepted counts every valid event, sampled and consent_declined are among them)',
    labelNames: ['outcome'],
    registers,
    collect() {
      this.reset();
      for (const outcome of OUTCOMES) if (ingested[outcome] > 0) this.inc({ outcome }, ingested[outcome]);
    },
  });
  const jobRuns = new Counter({
    name: 'job_runs_total',
    help: 'Job runs in this process by job and outcome',
    labelNames: ['job', 'outcome'],
    registers,
  });
  const jobSeconds = new Histogram({
    name: 'job_duration_seconds',
    help: 'Job run time by job (export.bulk is an export end to end)',
    labelNames: ['job'],
    buckets: JOB_SECONDS,
    registers,
  });

  new Gauge({
    name: 'db_pool_connections',
    help: 'Database pool connections of this process by state',
    labelNames: ['state'],
    registers,
    collect() {
      this.set({ state: 'total' }, db.totalCount);
      this.set({ state: 'idle' }, db.idleCount);
      this.set({ state: 'waiting' }, db.waitingCount);
    },
  });

  // One scrape reads the shared state once, however many gauges show it.
  let shared: Promise<Awaited<ReturnType<typeof readShared>>> | undefined;
  async function readShared() {
    const [fold, jobs, deliveries] = await Promise.all([store.foldLag(), store.jobStates(), store.deliveries()]);
    return { fold, jobs, deliveries };
  }
  const sharedState = async () => {
    shared ??= readShared().finally(() => setTimeout(() => (shared = undefined), 1000).unref());
    return shared.catch((err) => {
      onError(err);
      return undefined;
    });
  };

  new Gauge({
    name: 'analytics_fold_lag_events',
    help: 'Ingested events not folded into the analytics rollups yet',
    registers,
    async collect() {
      const s = await sharedState();
      if (s) this.set(s.fold.lagEvents);
    },
  });
  new Gauge({
    name: 'analytics_fold_lag_seconds',
    help: 'Age of the oldest event not folded yet',
    registers,
    async collect() {
      const s = await sharedState();
      if (s) this.set(s.fold.lagSeconds);
    },
  });
  new Gauge({
    name: 'analytics_events_folded',
    help: 'Events folded since the rollups began (throughput: rate() of it)',
    registers,
    async collect() {
      const s = await sharedState();
      if (s) this.set(s.fold.folded);
    },
  });
  new Gauge({
    name: 'job_queue_jobs',
    help: 'Jobs in the queue by job and state (created and retry are the depth; failed are kept for a while)',
    labelNames: ['job', 'state'],
    registers,
    async collect() {
      const s = await sharedState();
      if (!s) return;
      this.reset();
      for (const j of s.jobs) this.set({ job: j.name, state: j.state }, j.n);
    },
  });
  new Gauge({
    name: 'webhook_deliveries',
    help: 'Webhook and callback deliveries by kind and outcome (pending, succeeded, failed)',
    labelNames: ['kind', 'status'],
    registers,
    async collect() {
      const s = await sharedState();
      if (!s) return;
      this.reset();
      for (const d of s.deliveries) this.set({ kind: d.kind, status: d.status }, d.n);
    },
  });

  return {
    registry,
    /** A route pattern's request series (http_requests_total, http_request_duration_seconds): get it once per route. */
    httpRoute: http.route,
    countIngest(r: Record<IngestOutcome, number>) {
      for (const outcome of OUTCOMES) if (r[outcome] > 0) ingested[outcome] += r[outcome];
    },
    /** Wraps every job handler: runs, failures and durations per job. */
    instrumentJobs(handlers: JobHandlers): JobHandlers {
      const out = {} as Record<string, (payload: never) => Promise<void>>;
      for (const [name, handler] of Object.entries(handlers) as [string, (payload: never) => Promise<void>][]) {
        out[name] = async (payload) => {
          const end = jobSeconds.startTimer({ job: name });
          try {
            await handler(payload);
            jobRuns.inc({ job: name, outcome: 'completed' });
          } catch (err) {
            jobRuns.inc({ job: name, outcome: 'failed' });
            throw err;
          } finally {
            end();
          }
        };
      }
      return out as unknown as JobHandlers;
    },
  };
}

export type Metrics = ReturnType<typeof createMetrics>;
