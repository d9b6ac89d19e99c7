// npm run bench:stream [-- --streams 10000 --rounds 5 --poll-seconds 3]
// Config stream (SSE): how many streams one API instance holds, its memory per stream, and how fast a
// published change reaches all of them; against the polling alternative (the version check) for the
// same freshness, its CPU per request measured in the same run. The service runs in its own process
// (ROLE=api); the streams are raw sockets of this process (a fetch client per stream would cost this
// process more than the server).
import autocannon from 'autocannon';
import net from 'node:net';
import os from 'node:os';
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import { client, createTenant } from '../test/helpers/client.js';
import { machine, writeResultsSection } from './lib/results.js';
import { cpuMs, spawnService } from './lib/service.js';

const { values } = parseArgs({
  options: {
    streams: { type: 'string', default: '10000' },
    rounds: { type: 'string', default: '5' },
    'poll-seconds': { type: 'string', default: '5' },
    'heartbeat-ms': { type: 'string', default: '5000' },
  },
});
const N = Number(values.streams);
const ROUNDS = Number(values.rounds);
const HEARTBEAT_MS = Number(values['heartbeat-ms']);
// Opened at once; the rest wait (the kernel's accept backlog is 511 by default).
const OPEN_CONCURRENCY = 200;

const rssMb = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;
const fdLimit = () => /Max open files\s+(\d+)/.exec(readFileSync('/proc/self/limits', 'utf8'))![1];
const pct = (xs: number[], p: number) => xs[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;

const service = await spawnService({
  ROLE: 'api',
  CONFIG_STREAM_MAX_PER_INSTANCE: String(N + 100),
  CONFIG_STREAM_MAX_PER_KEY: String(N + 100),
  CONFIG_STREAM_HEARTBEAT_MS: String(HEARTBEAT_MS),
});

interface Conn {
  socket: net.Socket;
  /** Resolves on the first event (the snapshot). */
  ready: Promise<void>;
  /** When the change with `want` arrived. */
  gotAt: number;
}
let want = '';
const conns: Conn[] = [];

function openStream(host: string, port: number, key: string): Conn {
  const socket = net.connect(port, host);
  const conn: Conn = { socket, ready: Promise.resolve(), gotAt: 0 };
  conn.ready = new Promise((resolve, reject) => {
    let first = true;
    let head = true;
    let tail = '';
    socket.setEncoding('utf8');
    socket.on('connect', () =>
      socket.write(
        `GET /api/v1/sdk/config-stream HTTP/1.1\r\nHost: ${host}\r\nx-api-key: ${key}\r\naccept: text/event-stream\r\n\r\n`,
      ),
    );
    socket.on('data', (chunk: string) => {
      if (first) {
        if (head && !chunk.startsWith('HTTP/1.1 200')) return reject(new Error(chunk.split('\r\n')[0]));
        head = false;
        if (!chunk.includes('event: snapshot')) return;
        first = false;
        return resolve();
      }
      // Only the change being waited for matters; keep a little tail in case a marker spans chunks.
      const text = tail + chunk;
      if (want && !conn.gotAt && text.includes(want)) conn.gotAt = performance.now();
      tail = text.slice(-64);
    });
    socket.on('error', reject);
  });
  return conn;
}

try {
  const c = client(service.url);
  const t = await createTenant(c);
  const { hostname, port } = new URL(service.url);
  // The polling alternative: the version check's CPU per request on this service, same run, before
  // the streams open (their heartbeats would be counted against the requests).
  const poll = `${service.url}/api/v1/sdk/config-bundle/version`;
  const pollHeaders = { 'x-api-key': t.live.public_key };
  await autocannon({ url: poll, connections: 16, duration: 1, headers: pollHeaders });
  const cpuP0 = cpuMs(service.pid);
  const ac = await autocannon({
    url: poll,
    connections: 16,
    duration: Number(values['poll-seconds']),
    headers: pollHeaders,
  });
  const pollUs = ((cpuMs(service.pid) - cpuP0) * 1000) / Math.max(1, ac['2xx']);
  const pollRps = ac.requests.average;
  if (ac['2xx'] === 0)
    throw new Error(`version check failed: ${JSON.stringify({ non2xx: ac.non2xx, errors: ac.errors })}`);

  // The app's first bundle; each round then publishes the next version.
  let version = (await c.post('/api/v1/sdk/config-bundle/generate', undefined, t.console)).body.data
    .bundle_version as number;
  const rssBefore = rssMb(service.pid);

  // Open the streams.
  const t0 = performance.now();
  for (let i = 0; i < N; i += OPEN_CONCURRENCY) {
    const batch = Array.from({ length: Math.min(OPEN_CONCURRENCY, N - i) }, () =>
      openStream(hostname, Number(port), t.live.public_key),
    );
    await Promise.all(batch.map((b) => b.ready));
    conns.push(...batch);
  }
  const openS = (performance.now() - t0) / 1000;
  await sleep(2000);
  const rssAfter = rssMb(service.pid);
  const perStreamKb = ((rssAfter - rssBefore) * 1024) / N;
  console.log({ streams: conns.length, openS, rssBefore, rssAfter, perStreamKb });

  // Idle cost: heartbeats only.
  const idleMs = HEARTBEAT_MS * 2;
  const idleCpu0 = cpuMs(service.pid);
  await sleep(idleMs);
  const idleCpuMs = cpuMs(service.pid) - idleCpu0;
  const heartbeatUs = (idleCpuMs * 1000) / ((N * idleMs) / HEARTBEAT_MS);

  // Publish and time delivery to every stream.
  const lat: number[] = [];
  const lastMs: number[] = [];
  const publishCpu: number[] = [];
  const ackMs: number[] = [];
  let missing = 0;
  for (let r = 0; r < ROUNDS; r++) {
    for (const k of conns) k.gotAt = 0;
    const cpu0 = cpuMs(service.pid);
    // Known before publishing: the event can arrive before the publish's own answer.
    want = `"bundle_version":${++version}}`;
    const sent = performance.now();
    const g = await c.post('/api/v1/sdk/config-bundle/generate', undefined, t.console);
    if (g.status !== 201 || g.body.data.bundle_version !== version) throw new Error(`generate: ${g.status} ${g.text}`);
    ackMs.push(performance.now() - sent);
    const deadline = sent + 30_000;
    while (conns.some((k) => !k.gotAt) && performance.now() < deadline) await sleep(5);
    publishCpu.push(cpuMs(service.pid) - cpu0);
    const got = conns.filter((k) => k.gotAt).map((k) => k.gotAt - sent);
    missing += N - got.length;
    lat.push(...got);
    lastMs.push(Math.max(...got));
    want = '';
    await sleep(500);
  }
  lat.sort((a, b) => a - b);
  const p50 = pct(lat, 50);
  const p99 = pct(lat, 99);
  const rows = { p50, p99, max: lat.at(-1)!, missing };
  console.log(rows);

  // Same freshness as the stream's p99: every device polls every p99 seconds (a change waits up to one interval).
  const freshness = [p99 / 1000, 5, 60];
  const streamCores = (heartbeatUs * N) / (25_000 * 1000);
  const table = freshness
    .map((f) => {
      const rps = N / f;
      return `| ${f.toFixed(f < 10 ? 2 : 0)} s${f === p99 / 1000 ? " (the stream's p99)" : ''} | ${Math.round(rps).toLocaleString('en-US')} | ${((rps * pollUs) / 1e6).toFixed(2)} | ${((rps / pollRps) * 100).toFixed(0)}% |`;
    })
    .join('\n');

  writeResultsSection(
    'config stream',
    `Command: \`npm run bench:stream -- --streams ${N} --rounds ${ROUNDS}\` · ${machine()} · machine shared with other work while measured
(1-minute load average ${os.loadavg()[0]!.toFixed(1)} at the end, on ${os.cpus().length} cores).

One API instance (ROLE=api, compiled, its embedded PostgreSQL in the same process tree) holds ${conns.length.toLocaleString('en-US')} streams
of one SDK key, opened from the bench process as raw sockets (${OPEN_CONCURRENCY} at a time) in ${openS.toFixed(1)} s. File descriptors:
\`ulimit -n\` ${fdLimit()} for each process (the service needs one per stream plus its pool). Heartbeat every ${HEARTBEAT_MS} ms in the bench
(25 s by default) so the idle cost is measurable.

| measure | value |
| --- | ---: |
| streams held | ${conns.length.toLocaleString('en-US')} |
| service RSS before / after | ${rssBefore.toFixed(0)} MB / ${rssAfter.toFixed(0)} MB |
| memory per stream (RSS growth / streams) | ${perStreamKb.toFixed(1)} KB |
| idle CPU per heartbeat per stream | ${heartbeatUs.toFixed(2)} µs (at 25 s: ${(streamCores * 100).toFixed(2)}% of a core for all streams) |
| publish-to-delivery p50 / p99 / max (${ROUNDS} rounds x ${N.toLocaleString('en-US')}) | ${p50.toFixed(0)} / ${p99.toFixed(0)} / ${rows.max.toFixed(0)} ms |
| last stream reached, per round | ${lastMs.map((m) => m.toFixed(0)).join(', ')} ms |
| publish answered (201 of the generation) p50 | ${pct(
      [...ackMs].sort((a, b) => a - b),
      50,
    ).toFixed(0)} ms |
| service CPU per publish (generation + fan-out to all) | ${(publishCpu.reduce((a, b) => a + b, 0) / ROUNDS).toFixed(0)} ms |
| deliveries missing after 30 s | ${missing} |

Latency runs from sending the publish (a bundle generation over HTTP, including its transaction) to the change event's
arrival in the bench process, which also reads all ${N.toLocaleString('en-US')} sockets (its own event loop is part of the figure).

Polling alternative (baseline, same run): the version check \`GET /api/v1/sdk/config-bundle/version\` measured at
${Math.round(pollRps).toLocaleString('en-US')} requests/s with 16 connections, ${pollUs.toFixed(1)} µs of service CPU per request (measured shortly after the
service started, on the shared machine; the \`bundles\` section measures the same route on its own, for a lower bound). For a change to
reach every one of ${N.toLocaleString('en-US')} devices within F seconds, each polls every F seconds: N/F requests per second.

| freshness F | polling requests/s | service cores for it | share of the measured version-check capacity |
| --- | ---: | ---: | ---: |
${table}

The stream delivers at its measured p99 for the heartbeat cost above plus one write per stream per change.`,
  );
} finally {
  for (const k of conns) k.socket.destroy();
  await service.stop();
}
