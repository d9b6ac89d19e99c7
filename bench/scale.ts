// npm run bench:scale [-- --duration 3 --rounds 3 --connections 16]
// Many instances, one truth: ingestion, bootstrap and the version check through the service's own
// processes on one PostgreSQL, in one run:
//   A. one API instance, limits per process (RATE_LIMITS=local) and no metrics: the baseline;
//   B. one API instance, global limits in PostgreSQL, metrics on: the cost of both on one instance;
//   C. two API instances, global limits, metrics on, load spread over both.
// CPU time of every API process and of PostgreSQL is read from /proc, so the capacity model
// (events/s per API core and per database core, docs/scaling.md) comes from the same run.
import autocannon from 'autocannon';
import { randomUUID } from 'node:crypto';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import pgClient from 'pg';
import { startEmbeddedDb } from '../src/db/embedded.js';
import { createPool } from '../src/db/pool.js';
import { chunkOf, createGlobalLimiter, createSlidingWindowLimiter, type RateLimiter } from '../src/http/rate-limit.js';
import { createLimitStore } from '../src/http/rate-limit-store.js';
import { createMetrics } from '../src/modules/metrics/metrics.js';
import { createMetricsStore } from '../src/modules/metrics/store.js';
import { client, createTenant, type Tenant } from '../test/helpers/client.js';
import { machine, writeResultsSection } from './lib/results.js';
import { cpuMs, descendantsCpuMs, freePort } from './lib/service.js';

const { values } = parseArgs({
  options: {
    duration: { type: 'string', default: '3' },
    rounds: { type: 'string', default: '3' },
    connections: { type: 'string', default: '16' },
  },
});
/** Seconds of one round; each scenario runs `rounds` rounds of each workload, in turns. */
const duration = Number(values.duration);
const rounds = Number(values.rounds);
const connections = Number(values.connections);
const root = path.resolve(import.meta.dirname, '..');
const BATCH = 100;
const KEYS = 100;

const dataDir = mkdtempSync(path.join(tmpdir(), 'svc-scale-'));
const pg = await startEmbeddedDb(dataDir, await freePort(), () => undefined);
const pgPid = Number(
  (await import('node:fs')).readFileSync(path.join(dataDir, 'pg', 'postmaster.pid'), 'utf8').split('\n')[0],
);

interface Api {
  url: string;
  pid: number;
  proc: ChildProcess;
}

async function startApi(env: Record<string, string>): Promise<Api> {
  const port = await freePort();
  const proc = spawn(process.execPath, [path.join(root, 'scripts/start.mjs')], {
    cwd: root,
    env: {
      ...process.env,
      DATABASE_URL: pg.url,
      ROLE: 'api',
      PORT: String(port),
      HOST: '127.0.0.1',
      DATA_DIR: dataDir,
      LOG_LEVEL: 'warn',
      PUBLIC_URL: 'http://bench.local',
      ...env,
    },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  const until = Date.now() + 180_000;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`API exited ${proc.exitCode}`);
    if (
      await fetch(`${url}/readyz`).then(
        (r) => r.ok,
        () => false,
      )
    )
      break;
    if (Date.now() > until) throw new Error('API did not come up');
    await new Promise((r) => setTimeout(r, 200));
  }
  return { url, pid: proc.pid!, proc };
}

const stopApi = (a: Api) => new Promise((r) => (a.proc.once('exit', r), a.proc.kill('SIGTERM')));

function ingestBody(): () => string {
  const now = Date.now();
  return () =>
    JSON.stringify({
      batch: Array.from({ length: BATCH }, (_, i) => ({
        schema_version: 1,
        event_id: randomUUID(),
        event_name: i % 10 === 0 ? 'session_start' : 'screen_view',
        ts_ms: now - 60_000,
        user: { anon_id: randomUUID() },
        device: {
          platform: 'ios',
          os: '17.4',
          app_version: '1.2.3',
          sdk_version: '2.0.0',
          locale: 'en_US',
          country: 'US',
        },
        context: { session_id: randomUUID(), screen: 'home' },
        properties: { step: i % 7 },
        privacy: { consent: { analytics: true } },
      })),
    });
}

interface Run {
  rps: number;
  ok: number;
  limited: number;
  other: number;
  p99: number;
}

/** Load spread over the APIs (connections split evenly); the CPU of the APIs and of PostgreSQL over the run. */
async function load(
  apis: Api[],
  opts: { path: string; method?: 'GET' | 'POST'; headers: () => Record<string, string>; body?: () => string },
) {
  const cpu0 = apis.map((a) => cpuMs(a.pid));
  const db0 = descendantsCpuMs(pgPid) + cpuMs(pgPid);
  const runs = await Promise.all(
    apis.map(
      (a) =>
        new Promise<Run>((resolve, reject) => {
          const counts = { ok: 0, limited: 0, other: 0 };
          const inst = autocannon(
            {
              url: a.url + opts.path,
              method: opts.method ?? 'GET',
              connections: Math.max(1, Math.floor(connections / apis.length)),
              duration,
              requests: [
                {
                  setupRequest: (req: any) => ({
                    ...req,
                    headers: { 'content-type': 'application/json', ...opts.headers() },
                    body: opts.body?.(),
                  }),
                },
              ],
            },
            (err, r) => (err ? reject(err) : resolve({ rps: r.requests.average, ...counts, p99: r.latency.p99 })),
          );
          inst.on('response', (_c: unknown, status: number) => {
            if (status < 300) counts.ok++;
            else if (status === 429) counts.limited++;
            else counts.other++;
          });
        }),
    ),
  );
  const apiCpuMs = apis.reduce((s, a, i) => s + cpuMs(a.pid) - cpu0[i], 0);
  const dbCpuMs = descendantsCpuMs(pgPid) + cpuMs(pgPid) - db0;
  const sum = (k: keyof Run) => runs.reduce((s, r) => s + r[k], 0);
  return {
    rps: sum('rps'),
    ok: sum('ok'),
    limited: sum('limited'),
    other: sum('other'),
    p99: Math.max(...runs.map((r) => r.p99)),
    apiCores: apiCpuMs / 1000 / duration,
    dbCores: dbCpuMs / 1000 / duration,
  };
}

/** CPU time per ingested event: what the capacity model needs, and less distorted by a busy machine than throughput. */
const usPerEvent = (cores: number, r: { rps: number }) => ((cores * 1e6) / (r.rps * BATCH)).toFixed(1);

type Scenario = { name: string; env: Record<string, string>; instances: number };
const scenarios: Scenario[] = [
  { name: 'A. 1 API, per-process limits, no metrics', env: { RATE_LIMITS: 'local', METRICS: 'off' }, instances: 1 },
  { name: 'B. 1 API, global limits, metrics', env: {}, instances: 1 },
  { name: 'C. 2 APIs, global limits, metrics', env: {}, instances: 2 },
];

type Load = Awaited<ReturnType<typeof load>>;
/** Rounds of one scenario added up; rates and cores are averaged over the rounds at the end. */
function add(a: Load | undefined, b: Load): Load {
  if (!a) return b;
  return {
    rps: a.rps + b.rps,
    ok: a.ok + b.ok,
    limited: a.limited + b.limited,
    other: a.other + b.other,
    p99: Math.max(a.p99, b.p99),
    apiCores: a.apiCores + b.apiCores,
    dbCores: a.dbCores + b.dbCores,
  };
}
const avg = (l: Load): Load => ({
  ...l,
  rps: l.rps / rounds,
  apiCores: l.apiCores / rounds,
  dbCores: l.dbCores / rounds,
});

// Every scenario's processes run from the start, each with its own tenant; the scenarios then take
// turns in short rounds, so a change in the machine's load falls on all of them alike.
const setups = [];
for (const s of scenarios) {
  const apis: Api[] = [];
  for (let i = 0; i < s.instances; i++) apis.push(await startApi(s.env));
  const c = client(apis[0].url);
  const t: Tenant = await createTenant(c);
  await c.patch('/api/v1/settings', { events_per_minute: 10_000_000 }, t.console);
  const keys: string[] = [];
  for (let i = 0; i < KEYS; i++)
    keys.push(
      (await c.post('/api/v1/sdk/api-keys', { environment: 'production', permissions: [] }, t.console)).body.data
        .public_key,
    );
  let k = 0;
  setups.push({
    s,
    apis,
    one: () => ({ 'x-api-key': t.live.public_key }),
    nextKey: () => ({ 'x-api-key': keys[k++ % keys.length] }),
    body: ingestBody(),
  });
}
const results = setups.map(() => ({}) as Record<'version' | 'ingest' | 'boot', Load | undefined>);
for (const work of ['version', 'ingest', 'boot'] as const) {
  for (let r = 0; r < rounds; r++) {
    for (const [i, u] of setups.entries()) {
      const opts =
        work === 'version'
          ? { path: '/api/v1/sdk/config-bundle/version', headers: u.one }
          : work === 'ingest'
            ? { path: '/api/v1/ingest/events', method: 'POST' as const, headers: u.one, body: u.body }
            : { path: '/api/v1/sdk/bootstrap', headers: u.nextKey };
      results[i][work] = add(results[i][work], await load(u.apis, opts));
    }
  }
}
for (const u of setups) for (const a of u.apis) await stopApi(a);

const rows: string[] = [];
const figures: Record<string, Load> = {};
const boots: Load[] = [];
for (const [i, u] of setups.entries()) {
  const version = avg(results[i].version!);
  const ingest = avg(results[i].ingest!);
  const boot = avg(results[i].boot!);
  figures[u.s.name] = ingest;
  boots.push(boot);
  rows.push(
    `| ${u.s.name} | ${Math.round(version.rps)} | ${Math.round(ingest.rps * BATCH)} | ${ingest.p99} | ${ingest.apiCores.toFixed(2)} / ${ingest.dbCores.toFixed(2)} | ${usPerEvent(ingest.apiCores, ingest)} / ${usPerEvent(ingest.dbCores, ingest)} | ${Math.round(boot.rps)} (${boot.ok} ok, ${boot.limited} limited) | ${version.other + ingest.other + boot.other} |`,
  );
  // Global limits hold under load: no more bootstraps allowed than the keys' budgets (within 5%).
  if (u.s.env.RATE_LIMITS !== 'local' && boot.ok > KEYS * 60 * 1.05)
    throw new Error(`bootstrap limit exceeded: ${boot.ok} > ${KEYS * 60}`);
}

// The two additions on a request's path, timed alone in this process (steadier than whole-service rates
// on a shared machine): a limiter decision for a 100-event batch, and the metrics hooks' work per request.
const CALLS = 200_000;
async function perCallUs(fn: (i: number) => unknown): Promise<number> {
  for (let i = 0; i < 2000; i++) await fn(i);
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < CALLS; i++) await fn(i);
  return Number(process.hrtime.bigint() - t0) / 1000 / CALLS;
}
const micro = createPool(pg.url, 4);
const decide = (l: RateLimiter) => (_i: number) => l.consume('ingest:bench', BATCH, 1_000_000_000);
const globalLimiter = createGlobalLimiter(createLimitStore(micro));
const localUs = await perCallUs(decide(createSlidingWindowLimiter()));
const globalUs = await perCallUs(decide(globalLimiter));
await globalLimiter.close();
// Bootstrap's limit (60/min per key) alone: the decisions of 16 concurrent callers over 100 fresh keys,
// wall time and PostgreSQL CPU per decision, four ways in one run: per-process; one reservation per
// request on a logged table (global limits before issue 33); chunks on a logged table; chunks on the
// unlogged table (now). Each way gets fresh keys; 30 decisions per key stay within its budget.
const DECISIONS = 3000;
const bootLimit = 60;
async function perDecision(label: string, decide: (key: string) => Promise<unknown>) {
  const db0 = descendantsCpuMs(pgPid) + cpuMs(pgPid);
  const t0 = process.hrtime.bigint();
  let next = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < DECISIONS) await decide(`bench-boot:${label}:${next++ % KEYS}`);
    }),
  );
  const wallUs = Number(process.hrtime.bigint() - t0) / 1000 / DECISIONS;
  return { wallUs, dbUs: ((descendantsCpuMs(pgPid) + cpuMs(pgPid) - db0) * 1000) / DECISIONS };
}
const limitStore = createLimitStore(micro);
const setLogged = (logged: boolean) =>
  micro.query(`ALTER TABLE rate_limit_windows SET ${logged ? 'LOGGED' : 'UNLOGGED'}`);
const withLimiter = async (label: string) => {
  const l = createGlobalLimiter(limitStore);
  const r = await perDecision(label, (k) => Promise.resolve(l.consume(k, 1, bootLimit)));
  await l.close();
  return r;
};
const local = createSlidingWindowLimiter();
const bootLocal = await perDecision('local', (k) => Promise.resolve(local.consume(k, 1, bootLimit)));
await setLogged(true);
const bootBefore = await perDecision('before', (k) => limitStore.take(k, Date.now(), 60_000, bootLimit, 1, 1));
const bootChunksLogged = await withLimiter('chunks-logged');
await setLogged(false);
const bootNow = await withLimiter('now');
const bootRows = [
  ['per-process (RATE_LIMITS=local)', bootLocal],
  ['global, one reservation per request, logged table (before)', bootBefore],
  [`global, chunks of ${chunkOf(bootLimit)}, logged table`, bootChunksLogged],
  [`global, chunks of ${chunkOf(bootLimit)}, unlogged table (now)`, bootNow],
] as const;

const metrics = createMetrics({ db: micro, store: createMetricsStore(micro), onError: () => undefined });
const outcome = { accepted: BATCH, rejected: 0, sampled: 0, consent_declined: 0 };
const ingestSeries = metrics.httpRoute('/api/v1/ingest/events');
const metricsUs = await perCallUs(() => {
  ingestSeries.observe('POST', 202, 0.004);
  metrics.countIngest(outcome);
});
await micro.end();

// Storage per stored event: the events partitions and the dedupe keys, indexes included.
const admin = new pgClient.Client({ connectionString: pg.url });
await admin.connect();
const size = await admin.query<{ bytes: string; n: string }>(
  `SELECT (SELECT sum(pg_total_relation_size(inhrelid)) FROM pg_inherits WHERE inhparent = 'events'::regclass)
          + pg_total_relation_size('event_ids') AS bytes, (SELECT count(*) FROM events) AS n`,
);
await admin.end();
const bytesPerEvent = Number(size.rows[0].bytes) / Number(size.rows[0].n);

const base = figures[scenarios[0].name];
const perApiCore = (f: typeof base) => (f.rps * BATCH) / f.apiCores;
const perDbCore = (f: typeof base) => (f.rps * BATCH) / f.dbCores;
const body = `
Command: \`npm run bench:scale -- --duration ${duration} --rounds ${rounds} --connections ${connections}\`. Machine: ${machine()}, shared with other
work while measured (its load average was high), so compare rows of this run only. All scenarios' processes run
together on one embedded PostgreSQL, each with its own tenant, and take turns: ${rounds} rounds of ${duration} s per scenario
for the version check, then ingestion (batches of ${BATCH} events, one app), then bootstrap (${KEYS} keys, 60/min each),
${connections} connections spread over the scenario's APIs; rates are averaged over the rounds.

| scenario | version check req/s | ingestion events/s | ingestion p99 ms | ingestion CPU cores API / DB | CPU µs per event API / DB | bootstrap req/s | 5xx |
|---|---|---|---|---|---|---|---|
${rows.join('\n')}

Bootstrap with global limits and metrics on one instance: ${((100 * boots[1].rps) / boots[0].rps).toFixed(0)}% of the baseline's requests/s (B / A; target >= 80%).
Global limits and metrics on one instance keep ${((100 * figures[scenarios[1].name].rps) / base.rps).toFixed(0)}% of the baseline's ingestion throughput (B / A);
API CPU per event B / A: ${((100 * Number(usPerEvent(figures[scenarios[1].name].apiCores, figures[scenarios[1].name]))) / Number(usPerEvent(base.apiCores, base))).toFixed(0)}%.
Alone (${CALLS} calls each, in the bench process): a limiter decision for a ${BATCH}-event batch costs ${localUs.toFixed(2)} µs per-process and
${globalUs.toFixed(2)} µs global (a reservation every ${Math.round(chunkOf(1e9) / BATCH)} batches included); the metrics hooks cost ${metricsUs.toFixed(2)} µs per request,
against ${usPerEvent(base.apiCores, base)} µs of API CPU per event (${(Number(usPerEvent(base.apiCores, base)) * BATCH).toFixed(0)} µs per batch) in A.
Bootstrap's limit decision alone (${DECISIONS} decisions, 16 concurrent callers, ${KEYS} keys at ${bootLimit}/min, in the bench process):

| limiter | wall µs per decision | PostgreSQL CPU µs per decision |
|---|---|---|
${bootRows.map(([name, r]) => `| ${name} | ${r.wallUs.toFixed(1)} | ${r.dbUs.toFixed(1)} |`).join('\n')}

Capacity model inputs (A): ${Math.round(perApiCore(base))} events/s per API core, ${Math.round(perDbCore(base))} events/s per database core;
with global limits (C): ${Math.round(perApiCore(figures[scenarios[2].name]))} and ${Math.round(perDbCore(figures[scenarios[2].name]))}.
Stored: ${Math.round(bytesPerEvent)} bytes per event (events partitions and event_ids, indexes included, ${size.rows[0].n} events).
`;
writeResultsSection('scale', body);
console.log(body);
await pg.stop();
rmSync(dataDir, { recursive: true, force: true });
