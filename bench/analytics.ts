// npm run bench:analytics [-- --events 10000000 --devices 1000000 --ingest-seconds 60 --requests 100]
// (env BENCH_EVENTS / BENCH_DEVICES work too). Full size is 10M events / 1M devices; the default
// here is a reduced size so the bench finishes on a shared 2-core machine.
//
// 1. The service runs in its own process (embedded PostgreSQL, ROLLUP_INTERVAL_S=1).
// 2. A generated app's events (90 days) are inserted directly with SQL (generate_series).
// 3. Rollup throughput: events folded / seconds from the insert's commit until the fold job's
//    watermark passes the last generated seq (includes up to one interval of scheduling delay).
// 4. Endpoint latency: sequential requests with default parameters from this process.
// 5. Steady-state lag: autocannon ingests 500-event batches at 20,000 events/s while this process
//    samples the age of the oldest not-yet-folded event every second.
import autocannon from 'autocannon';
import { randomUUID } from 'node:crypto';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { client, createTenant } from '../test/helpers/client.js';
import { GENERATE } from './lib/analytics-data.js';
import { machine, writeResultsSection } from './lib/results.js';
import { cpuMs, descendantsCpuMs, freePort, spawnService } from './lib/service.js';

const { values } = parseArgs({
  options: {
    events: { type: 'string', default: process.env.BENCH_EVENTS ?? '1000000' },
    devices: { type: 'string', default: process.env.BENCH_DEVICES ?? '100000' },
    'active-days': { type: 'string', default: '0' },
    'ingest-seconds': { type: 'string', default: '30' },
    'ingest-rate': { type: 'string', default: '20000' },
    requests: { type: 'string', default: '60' },
  },
});
const EVENTS = Number(values.events);
const DEVICES = Number(values.devices);
/** Days each device is active on (0: its events spread over every day from its first; see bench/lib/analytics-data.ts). */
const ACTIVE_DAYS = Number(values['active-days']);
const INGEST_S = Number(values['ingest-seconds']);
const RATE = Number(values['ingest-rate']);
const REQUESTS = Number(values.requests);

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)] : NaN;
}

const pgPort = await freePort();
const service = await spawnService({ EMBEDDED_PG_PORT: String(pgPort), ROLLUP_INTERVAL_S: '1', DB_POOL_MAX: '10' });
const db = new pg.Pool({ connectionString: `postgres://postgres:postgres@127.0.0.1:${pgPort}/app`, max: 2 });
try {
  const c = client(service.url);
  const t = await createTenant(c);
  await c.patch('/api/v1/settings', { events_per_minute: 10_000_000 }, t.console);
  const state = async () => (await db.query(`SELECT min(watermark)::bigint AS watermark, sum(events_folded)::bigint AS events_folded FROM an_rollup_state`)).rows[0] as { watermark: number; events_folded: number };

  // 1) generate
  console.log(`generating ${EVENTS.toLocaleString('en-US')} events for ${DEVICES.toLocaleString('en-US')} devices...`);
  let t0 = Date.now();
  await db.query(GENERATE, [t.orgId, t.appId, EVENTS, DEVICES, ACTIVE_DAYS]);
  const genS = (Date.now() - t0) / 1000;
  // The sequence, not max(seq): a full scan of the new events here would set their hint bits outside the timed fold.
  const maxSeq = Number((await db.query(`SELECT pg_sequence_last_value(pg_get_serial_sequence('events', 'seq')) AS m`)).rows[0].m);
  console.log(`generated in ${genS.toFixed(1)} s; waiting for the fold job`);

  // 2) rollup throughput (the service's own job)
  t0 = Date.now();
  const before = await state();
  while ((await state()).watermark < maxSeq) await new Promise((r) => setTimeout(r, 200));
  const foldS = (Date.now() - t0) / 1000;
  const folded = (await state()).events_folded - before.events_folded;
  const throughput = folded / foldS;
  console.log(`folded ${folded} events in ${foldS.toFixed(1)} s = ${Math.round(throughput)} events/s`);
  const sizes = (await db.query(`SELECT (SELECT sum(cardinality(days)) FROM an_devices) dd, (SELECT count(*) FROM an_devices) dv,
    (SELECT count(*) FROM an_sessions) se, (SELECT count(*) FROM an_steps) st, (SELECT count(*) FROM an_purchases) pu`)).rows[0];

  // 2b) funnel answers: the worker materializes them after a fold (paced by ANALYTICS_FUNNEL_REFRESH_S,
  // default 60 s); dashboard latency is measured once they are current, as a dashboard sees them.
  t0 = Date.now();
  const current = async () => Number((await db.query(`SELECT count(*) AS n FROM an_funnel_results r
    JOIN an_app_versions v ON v.app_id = r.app_id AND v.environment = r.environment WHERE r.version >= v.version AND r.app_id = $1`, [t.appId])).rows[0].n);
  while ((await current()) < 9) await new Promise((r) => setTimeout(r, 500));
  const answersS = (Date.now() - t0) / 1000;
  const spread = (await db.query(`SELECT extract(epoch FROM max(computed_at) - min(computed_at))::float8 AS s, count(*)::int AS n
    FROM an_funnel_results WHERE app_id = $1`, [t.appId])).rows[0];
  console.log(`funnel answers current ${answersS.toFixed(1)} s after the fold; computing them took ~${spread.s.toFixed(1)} s`);

  // 3) endpoint latency, default parameters
  const endpoints = [
    ['GET /analytics/kpis', '/api/v1/analytics/kpis'],
    ['GET /analytics/kpis/timeseries?metrics=dau,mau,revenue_daily', '/api/v1/analytics/kpis/timeseries?metrics=dau,mau,revenue_daily'],
    ['GET /analytics/kpis/timeseries?metrics=<all 24>', `/api/v1/analytics/kpis/timeseries?metrics=${['mau', 'wau', 'dau', 'mrr', 'arr', 'revenue_daily', 'net_revenue', 'arpu', 'arppu', 'onboarding_start_rate', 'onboarding_completion_rate', 'paywall_view_rate', 'trial_start_rate', 'trial_to_paid_d7', 'trial_to_paid_d30', 'retention_d1', 'retention_d7', 'retention_d30', 'avg_session_duration', 'avg_sessions_per_user', 'stickiness', 'new_users', 'refund_rate', 'crash_free_rate'].join(',')}`],
    ['GET /analytics/funnel/onboarding', '/api/v1/analytics/funnel/onboarding'],
    ['GET /analytics/funnel/retention', '/api/v1/analytics/funnel/retention'],
    ['GET /analytics/funnel/aso', '/api/v1/analytics/funnel/aso'],
    ['GET /analytics/retention', '/api/v1/analytics/retention'],
    ['GET /analytics/activity', '/api/v1/analytics/activity'],
  ] as const;
  const latency: string[] = [];
  for (const [name, path] of endpoints) {
    const ms: number[] = [];
    for (let i = 0; i < REQUESTS; i++) {
      const s = performance.now();
      const r = await c.get(path, t.console);
      if (r.status !== 200) throw new Error(`${name}: ${r.status} ${r.text}`);
      ms.push(performance.now() - s);
    }
    const p50 = pct(ms, 50);
    const p99 = pct(ms, 99);
    console.log(name, { p50, p99 });
    latency.push(`| ${name} | ${p50.toFixed(1)} | ${p99.toFixed(1)} | ${p99 < 300 ? 'met' : 'NOT met'} |`);
  }

  // 4) steady-state lag while ingesting at RATE events/s. The phase starts from a vacuumed events
  // table, so autovacuum's pass over the bulk load cannot overlap it by chance.
  t0 = Date.now();
  await db.query(`VACUUM events`);
  const vacuumS = (Date.now() - t0) / 1000;
  console.log(`vacuumed events in ${vacuumS.toFixed(1)} s`);
  const perBatch = 500;
  const now = Date.now();
  let n = 0;
  const body = () => JSON.stringify({
    batch: Array.from({ length: perBatch }, (_, i) => ({
      schema_version: 1, event_id: randomUUID(), event_name: i % 10 === 0 ? 'session_start' : 'screen_view', ts_ms: now - 60_000,
      user: { anon_id: `00000000-0000-4000-8000-${(n++ % 50_000).toString(16).padStart(12, '0')}` },
      device: { platform: 'ios', os: '17.4', app_version: '1.2.3', sdk_version: '2.0.0', locale: 'en_US', country: 'US' },
      context: { session_id: randomUUID() }, properties: { button: 'continue' }, privacy: { consent: { analytics: true } },
    })),
  });
  const bodies = Array.from({ length: 200 }, body);
  let bi = 0;
  const lags: number[] = [];
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      await new Promise((r) => setTimeout(r, 1000));
      const { rows } = await db.query(`SELECT coalesce(extract(epoch FROM now() - min(received_at)), 0)::float8 AS lag
        FROM events WHERE seq > (SELECT min(watermark) FROM an_rollup_state)`);
      lags.push(rows[0].lag);
    }
  })();
  // Where the two cores go while ingesting: the service (HTTP, validation), its PostgreSQL (inserts,
  // the fold, autovacuum) and this process (the load generator).
  const cpu = () => {
    const own = process.cpuUsage();
    return { svc: cpuMs(service.pid), pg: descendantsCpuMs(service.pid), gen: (own.user + own.system) / 1000 };
  };
  const cpu0 = cpu();
  // Enough connections that the offered rate does not depend on request latency: while a fold round
  // has both cores, a 500-event request can take a few hundred ms, and 8 connections then sent
  // fewer than the 40 requests/s asked for.
  const load = await autocannon({
    url: `${service.url}/api/v1/ingest/events`, method: 'POST', connections: 32, duration: INGEST_S, overallRate: RATE / perBatch,
    headers: { 'content-type': 'application/json', 'x-api-key': t.live.public_key },
    requests: [{ setupRequest: (req: any) => ({ ...req, body: bodies[bi++ % bodies.length].replace(/"event_id":"[^"]+"/g, () => `"event_id":"${randomUUID()}"`) }) }],
  });
  sampling = false;
  await sampler;
  const cpu1 = cpu();
  const cores = (k: 'svc' | 'pg' | 'gen') => (cpu1[k] - cpu0[k]) / 1000 / INGEST_S;
  const busy = `service ${cores('svc').toFixed(2)}, PostgreSQL ${cores('pg').toFixed(2)}, load generator ${cores('gen').toFixed(2)}: ${(cores('svc') + cores('pg') + cores('gen')).toFixed(2)} of 2 cores`;
  console.log(busy);
  const ingested = (load['2xx'] * perBatch) / INGEST_S;
  const steady = lags.slice(Math.floor(lags.length / 3));
  console.log({ ingested, lagP50: pct(steady, 50), lagMax: Math.max(...steady), non2xx: load.non2xx });

  const shape = ACTIVE_DAYS ? ` --active-days ${ACTIVE_DAYS}` : '';
  writeResultsSection(`analytics${ACTIVE_DAYS ? `, ${ACTIVE_DAYS} active days per device` : ''}`, `Command: \`npm run bench:analytics -- --events ${EVENTS} --devices ${DEVICES}${shape} --ingest-seconds ${INGEST_S} --requests ${REQUESTS}\` · ${machine()}

Size of this run: **${EVENTS.toLocaleString('en-US')} events, ${DEVICES.toLocaleString('en-US')} devices over 90 days** (the issue's full size is
10,000,000 / 1,000,000: \`npm run bench:analytics -- --events 10000000 --devices 1000000\`). Service in its own process with its
embedded PostgreSQL, ROLLUP_INTERVAL_S=1, all on the same shared 2 cores. Data inserted with one generate_series statement
(${genS.toFixed(0)} s). Rollup rows: ${sizes.dv} devices, ${sizes.dd} device-days, ${sizes.se} sessions, ${sizes.st} funnel-step rows, ${sizes.pu} purchases.

Rollup throughput (fold job, commit of the insert -> watermark past the last seq): **${Math.round(throughput).toLocaleString('en-US')} events/s**
(${folded.toLocaleString('en-US')} events in ${foldS.toFixed(1)} s). Target >= 120,000 events/s (3 x the 40,000 events/s ingest target): ${throughput >= 120_000 ? 'met' : 'NOT met'}.
Timed from the insert's commit. Runs before 2026-11-22T12:00Z first read max(seq) with a full scan of the new events, outside
the timing: it set their hint bits (and wrote the full-page images that costs) for the fold and overlapped its first part, so
those runs' fold figures are higher than this measure (the 2-active-day fold: 75,778 events/s then, 59,771 at 12:23Z timed from the commit).

Funnel answers are materialized by the worker after a fold (docs/analytics.md): they were current ${answersS.toFixed(1)} s after the fold
finished (including the refresh pacing, ANALYTICS_FUNNEL_REFRESH_S=60); computing the nine named funnels took about ${spread.s.toFixed(1)} s of
worker time. Latency below is measured once they are current.

Endpoint latency at this run's size, default parameters, ${REQUESTS} sequential requests each (baseline: the 300 ms p99 target):

| endpoint | p50 ms | p99 ms | p99 < 300 ms |
| --- | ---: | ---: | --- |
${latency.join('\n')}

Baselines, the same command at full size (10,000,000 / 1,000,000${ACTIVE_DAYS ? ', without --active-days: one event per session and device-day' : ''}): first pass (2026-11-21T21:35Z) fold 12,855 events/s; kpis p99 645 ms;
funnel/onboarding p99 687; funnel/retention p99 2,115. Second pass (2026-11-21T21:58Z: unlogged rollups, histograms, read shapes) fold
13,257 events/s; kpis p50 ~420 / p99 491; timeseries 3 metrics / all 24 p99 82 / 268; funnel/onboarding p99 766; funnel/retention p99 2,240;
funnel/aso (not in the bench then) ~4,600 per request; retention p99 44; activity p99 5; lag p50 16 s / max 23 s at 20,067 events/s.
Third pass (2026-11-22T00:18Z: materialized funnel answers, one fold transaction per chunk) fold 18,414 events/s; kpis p50 159 / p99 250;
timeseries 82 / 152; funnels p99 9-14; retention p99 27; activity p99 7; lag p50 14 s / max 25 s at 20,133 events/s.
Fourth pass (2026-11-22T02:49Z: device partitions in parallel, fewer look-ups) fold 27,595 events/s; kpis p50 157 / p99 254;
timeseries 75 / 177; funnels p99 8-18; retention p99 31; activity p99 6; lag p50 15 s / max 29 s at 16,083 events/s (8 connections).
Fifth pass (2026-11-22T03:52Z: chunks of 5,000,000, uncompressed hint-bit images, 32 ingest connections) fold 42,864 events/s;
kpis p50 135 / p99 218; timeseries 62 / 134; funnels p99 8-11; retention p99 23; activity p99 4; lag p50 14 s / max 21 s at 20,217 events/s.
Sixth pass (device-first device-day key; an_sessions still with its anon_id hash index): without the VACUUM step (2026-11-22T04:27Z)
fold 50,506 events/s, lag p50 18 s / max 28 s at 15,317 events/s; with it (2026-11-22T04:39Z) fold 51,141 events/s, kpis p99 217,
lag p50 15 s / max 21 s at 18,900 events/s; (2026-11-22T04:59Z) fold 44,683 events/s, kpis p99 254, lag p50 25 s / max 28 s at 16,717 events/s.
Seventh pass (2026-11-22T06:35Z: an_sessions with its key only, sorted groupings) fold 47,678 events/s, kpis p99 272, lag p50 20 s / max 29 s
at 16,217 events/s; with --active-days 2 (2026-11-22T06:13Z) fold 77,252 events/s, kpis p99 201, lag p50 22.5 s / max 29.5 s at 17,933 events/s.
Eighth pass (2026-11-22T08:47Z: hash groupings, uuid-first keys, temp_buffers; revenue still read from purchase rows) fold 43,598 events/s;
kpis p50 260 / p99 368; timeseries (all 24) 197 / 434; lag p50 24 s / max 31 s at 10,717 events/s; with --active-days 2 fold 64,119 and
68,834 events/s, kpis p99 349 and 520. Stop 16 (2026-11-22T10:36Z/10:47Z: revenue histogram) fold 41,677 events/s, kpis p50 142 / p99 283;
with --active-days 2 fold 75,778, kpis p99 233 (both timed after the max(seq) scan, see above). Stop 17 (2026-11-22T12:52Z/13:02Z:
reads through the seq BRIN, catch-up passes; timed from the commit) fold 64,214 events/s, kpis p50 98 / p99 131; with --active-days 2
fold 106,704 events/s, kpis p99 275. Stop 18 (2026-11-22T13:56Z/14:08Z: the BRIN summary cancels autovacuum after 50 ms,
WAL writer settings, the catch-up tail) fold 49,630 events/s on a slower machine, kpis p50 146 / p99 232; with --active-days 2
fold 107,781 events/s, kpis p99 208.
Load average during this run (1 min, at the end): ${loadavg()[0].toFixed(2)} on 2 cores shared with other engineers' runs.

Steady state (after a VACUUM of the bulk-loaded events, ${vacuumS.toFixed(0)} s): ingesting ${Math.round(ingested).toLocaleString('en-US')} events/s (target rate ${RATE.toLocaleString('en-US')}; ${load.non2xx} non-2xx) for ${INGEST_S} s;
age of the oldest unfolded event sampled each second (last two thirds of the run): p50 ${pct(steady, 50).toFixed(1)} s, max ${Math.max(...steady).toFixed(1)} s.
CPU used meanwhile: ${busy}.
Target lag < 60 s at ${RATE.toLocaleString('en-US')} events/s: ${Math.max(...steady) >= 60 ? 'NOT met'
  : ingested >= 0.98 * RATE ? 'met' : 'lag met, but only at the lower rate the load generator reached (not shown at the target rate)'}.`);
} finally {
  await db.end();
  await service.stop();
}
