// The per-request cost of the HTTP instrumentation alone, in this process, on a route answering a
// short string (the version check's shape), through Fastify's inject (no sockets, so the machine's
// load moves it less than whole-service rates):
//   none:   no instrumentation (METRICS=off);
//   before: what the service did until issue 33: an onResponse hook (Fastify then adds two listeners
//           per response), req.routeOptions (an object per call) and prom-client labels() children
//           cached per method+status+route (they still hash and validate the labels on every call);
//   now:    the service's metrics plugin (src/modules/metrics/routes.ts).
// Used by bench/bundles.ts; CPU time of this process per request, the least of many short interleaved
// rounds (other work on the machine only ever adds time, so the least disturbed round is the truest).
import Fastify, { type FastifyInstance } from 'fastify';
import { Counter, Histogram, Registry } from 'prom-client';
import type { Db } from '../src/db/pool.js';
import { createMetrics } from '../src/modules/metrics/metrics.js';
import { metricsRoutes } from '../src/modules/metrics/routes.js';
import type { MetricsStore } from '../src/modules/metrics/store.js';

const BODY = JSON.stringify({ data: { bundle_version: 5, sdk_min_version: '1.0.0', generated_at: '2026-01-01' } });
const ROUTE = '/api/v1/sdk/config-bundle/version';

function before(app: FastifyInstance) {
  const registers = [new Registry()];
  const labelNames = ['method', 'route', 'status'];
  const count = new Counter({ name: 'http_requests_total', help: 'h', labelNames, registers });
  const seconds = new Histogram({ name: 'http_request_duration_seconds', help: 'h', labelNames, registers });
  const children = new Map<string, { c: { inc(): void }; s: { observe(v: number): void } }>();
  app.addHook('onResponse', (req, reply, done) => {
    const route = req.routeOptions.url ?? 'unmatched';
    const k = `${req.method} ${reply.statusCode} ${route}`;
    let ch = children.get(k);
    if (!ch) {
      const labels = { method: req.method, route, status: String(reply.statusCode) };
      ch = { c: count.labels(labels), s: seconds.labels(labels) };
      children.set(k, ch);
    }
    ch.c.inc();
    ch.s.observe(reply.elapsedTime / 1000);
    done();
  });
}

async function build(kind: 'none' | 'before' | 'now'): Promise<FastifyInstance> {
  const app = Fastify();
  // The service's own onRequest hook (src/app.ts), in every kind: its hook runner is paid anyway.
  app.addHook('onRequest', (req, reply, done) => {
    reply.header('x-request-id', req.id);
    done();
  });
  if (kind === 'before') before(app);
  // The service makes its metrics (and prom-client's default collectors) whether METRICS is on or off.
  // Only the scrape reads the pool and the store; none happens here.
  const metrics = createMetrics({ db: {} as Db, store: {} as MetricsStore, onError: () => undefined });
  if (kind === 'now') await app.register(metricsRoutes({ metrics }));
  app.get(ROUTE, (_req, reply) => {
    reply.type('application/json; charset=utf-8').send(BODY);
  });
  await app.ready();
  return app;
}

const cpuUs = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};

/** µs of CPU per request for each kind: the least over `rounds` interleaved rounds of `n` requests. */
export async function hookCost(rounds = 30, n = 1000): Promise<Record<'none' | 'before' | 'now', number>> {
  const kinds = ['none', 'before', 'now'] as const;
  const apps = await Promise.all(kinds.map(build));
  const per: number[][] = kinds.map(() => []);
  for (let r = -1; r < rounds; r++) {
    // The order rotates each round, so what one kind leaves behind (garbage) falls on each alike.
    for (const i of [0, 1, 2].map((k) => (k + r + 3) % 3)) {
      const app = apps[i];
      const t0 = cpuUs();
      for (let j = 0; j < n; j++) await app.inject({ method: 'GET', url: ROUTE });
      // Round -1 warms the JIT and is not counted.
      if (r >= 0) per[i].push((cpuUs() - t0) / n);
    }
  }
  for (const app of apps) await app.close();
  const least = (xs: number[]) => Math.min(...xs);
  return { none: least(per[0]), before: least(per[1]), now: least(per[2]) };
}
