// npm run bench:ingest [-- --duration 15 --connections 32]
// Ingestion throughput and latency of the real service against the bare-Fastify HTTP ceiling,
// all in one run. Load comes from this process (autocannon); the service runs in its own process.
import autocannon from 'autocannon';
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { client, createTenant } from '../test/helpers/client.js';
import { machine, writeResultsSection } from './lib/results.js';
import { cpuMs, descendantsCpuMs, spawnScript, spawnService } from './lib/service.js';

const { values } = parseArgs({ options: { duration: { type: 'string', default: '15' }, connections: { type: 'string', default: '32' } } });
const duration = Number(values.duration);
const connections = Number(values.connections);

/** A batch body whose event ids are fresh on every request, so each request really inserts. */
function bodyFactory(size: number) {
  const now = Date.now();
  const parts: string[] = [];
  for (let i = 0; i < size; i++) {
    const ev = {
      schema_version: 1,
      event_id: '@ID@',
      event_name: i % 10 === 0 ? 'session_start' : 'screen_view',
      ts_ms: now - 60_000,
      user: { anon_id: randomUUID() },
      device: { platform: i % 2 ? 'ios' : 'android', os: '17.4', app_version: '1.2.3', sdk_version: '2.0.0', locale: 'en_US', country: 'US' },
      context: { session_id: randomUUID(), screen: 'home', client_seq: i },
      properties: { button: 'continue', step: i % 7, price_tier: 'b' },
      privacy: { consent: { analytics: true } },
    };
    parts.push(JSON.stringify(ev));
  }
  const template = `{"batch":[${parts.join(',')}]}`.split('"@ID@"');
  let counter = 0;
  const prefix = randomUUID().slice(0, 8);
  return () => {
    let out = template[0];
    for (let i = 1; i < template.length; i++) {
      const n = (counter++).toString(16).padStart(12, '0');
      out += `"${prefix}-0000-4000-8000-${n}"` + template[i];
    }
    return out;
  };
}

async function load(url: string, size: number, headers: Record<string, string>, pid: number) {
  const next = bodyFactory(size);
  const node0 = cpuMs(pid);
  const pg0 = descendantsCpuMs(pid);
  const result = await autocannon({
    url: `${url}/api/v1/ingest/events`,
    method: 'POST',
    connections,
    duration,
    headers: { 'content-type': 'application/json', ...headers },
    requests: [{ setupRequest: (req: any) => ({ ...req, body: next() }) }],
  });
  const ok = result['2xx'];
  const events = Math.max(1, ok * size);
  return {
    nodeUs: ((cpuMs(pid) - node0) * 1000) / events,
    pgUs: ((descendantsCpuMs(pid) - pg0) * 1000) / events,
    reqPerS: ok / duration,
    eventsPerS: (ok * size) / duration,
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors,
  };
}

const service = await spawnService();
const bare = await spawnScript('bench/bare-ingest-server.ts', '/ready');
try {
  const c = client(service.url);
  const t = await createTenant(c);
  await c.patch('/api/v1/settings', { events_per_minute: 10_000_000 }, t.console);
  const key = { 'x-api-key': t.live.public_key };

  const rows: string[] = [];
  const results: Record<string, Awaited<ReturnType<typeof load>>> = {};
  for (const [name, target, size, headers] of [
    ['bare Fastify 202 (ceiling), 500/batch', bare, 500, {}],
    ['service, 500 events/batch', service, 500, key],
    ['bare Fastify 202 (ceiling), 20/batch', bare, 20, {}],
    ['service, 20 events/batch', service, 20, key],
  ] as const) {
    const r = await load(target.url, size, headers, target.pid);
    results[name] = r;
    console.log(name, r);
    const pg = target === bare ? '—' : r.pgUs.toFixed(1);
    rows.push(`| ${name} | ${Math.round(r.eventsPerS).toLocaleString('en-US')} | ${Math.round(r.reqPerS).toLocaleString('en-US')} | ${r.p50} | ${r.p99} | ${r.nodeUs.toFixed(1)} / ${pg} | ${r.non2xx + r.errors} |`);
  }
  const s500 = results['service, 500 events/batch'];
  const s20 = results['service, 20 events/batch'];
  writeResultsSection(
    'ingestion',
    `Command: \`npm run bench:ingest -- --duration ${duration} --connections ${connections}\` · ${machine()}

Load: autocannon in the bench process, ${connections} connections, ${duration} s per row, loopback; the service runs in its own
process with its embedded PostgreSQL (all on the same 2 cores). Every request carries fresh event ids, so every event is
validated, deduplicated and inserted. Baseline: a bare Fastify route that parses the same body and answers 202.
CPU µs/event is the CPU time the service process (Node) and its embedded PostgreSQL (all backends) spent per stored
event during the row, read from /proc: it shows where the 2 cores go and moves little with other load on the machine.

| scenario | events/s | requests/s | p50 ms | p99 ms | CPU µs/event Node / PostgreSQL | non-2xx + errors |
| --- | ---: | ---: | ---: | ---: | ---: | ---: |
${rows.join('\n')}

Targets: >= 40,000 events/s at 500/batch (${s500.eventsPerS >= 40_000 ? 'met' : 'NOT met'}), >= 15,000 events/s at 20/batch
(${s20.eventsPerS >= 15_000 ? 'met' : 'NOT met'}), p99 < 250 ms at 32 connections (${Math.max(s500.p99, s20.p99) < 250 ? 'met' : 'NOT met'}).`,
  );
} finally {
  await bare.stop();
  await service.stop();
}
