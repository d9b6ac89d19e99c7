// npm run bench:sdk [-- --tracks 5000 --queued 10000 --e2e 20000]
// The TypeScript SDK (packages/sdk): track() cost with the Node file adapter and (p50) the memory
// adapter, storage bytes per queued event, memory with 10,000 queued events, bundle sizes (core and
// platform entries, esbuild, minified + gzip), and events/s end to end through one client against
// the real service. Each figure has a baseline measured in the same run; the SDK before issue 34
// part 2 (commit BASE_REV, extracted with git archive) is the baseline of the track p50 and the core size.
// Run with --expose-gc (the npm script does) for the memory figure.
import { execSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { rename, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { sdkSize } from '../scripts/sdk-size.mjs';
import { createClient, memoryStorage, type FetchLike, type Storage } from '../packages/sdk/src/index.js';
import { fileStorage } from '../packages/sdk/src/node.js';
import { client as http, createTenant } from '../test/helpers/client.js';
import { machine, writeResultsSection } from './lib/results.js';
import { spawnService } from './lib/service.js';

const { values } = parseArgs({
  options: {
    tracks: { type: 'string', default: '5000' },
    queued: { type: 'string', default: '10000' },
    e2e: { type: 'string', default: '20000' },
  },
});
const TRACKS = Number(values.tracks);
const QUEUED = Number(values.queued);
const E2E = Number(values.e2e);
const root = path.resolve(import.meta.dirname, '..');
const device = { platform: 'ios', os: '17.4', appVersion: '3.1.0', locale: 'en_US', country: 'US' } as const;
const props = (i: number) => ({ screen: 'paywall', plan: 'annual', price: 59.99, i });
const offline: FetchLike = () => new Promise(() => {});
const gc = (globalThis as { gc?: () => void }).gc;
const tmp = mkdtempSync(path.join(tmpdir(), 'sdk-bench-'));
const loadAtStart = loadavg()[0];
const heap = () => {
  gc?.();
  gc?.();
  return process.memoryUsage().heapUsed;
};
const offlineClient = (storage: Storage, maxQueueBytes = 64 << 20) =>
  createClient({
    apiKey: 'k',
    baseUrl: 'http://127.0.0.1:9',
    storage,
    device,
    fetch: offline,
    batchSize: 1e9,
    maxQueueBytes,
  });

async function trackCost(storage: Storage): Promise<number> {
  const c = offlineClient(storage);
  for (let i = 0; i < 200; i++) await c.track('warm_up', props(i));
  const t0 = performance.now();
  for (let i = 0; i < TRACKS; i++) await c.track('paywall_view', props(i));
  return ((performance.now() - t0) * 1000) / TRACKS;
}

/** Median µs of one awaited track() with the memory adapter, for a given SDK build. */
async function trackP50(sdk: { createClient: typeof createClient; memoryStorage: typeof memoryStorage }) {
  const c = sdk.createClient({
    apiKey: 'k',
    baseUrl: 'http://127.0.0.1:9',
    storage: sdk.memoryStorage(),
    device,
    fetch: offline,
    batchSize: 1e9,
    maxQueueBytes: 64 << 20,
  });
  for (let i = 0; i < 200; i++) await c.track('warm_up', props(i));
  const times: number[] = [];
  for (let i = 0; i < TRACKS; i++) {
    const t = performance.now();
    await c.track('paywall_view', props(i));
    times.push((performance.now() - t) * 1000);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)];
}

// The SDK before issue 34 part 2, for the same-run baselines.
const BASE_REV = '763aa1a';
const baseDir = path.join(tmp, 'base');
mkdirSync(baseDir);
execSync(`git archive ${BASE_REV} packages/sdk/src | tar -x -C ${baseDir}`, { cwd: root });
const baseSrc = path.join(baseDir, 'packages/sdk/src');
const baseSdk = await import(path.join(baseSrc, 'index.ts'));
// Alternating, so load swings hit both alike.
const p50s: number[] = [];
const baseP50s: number[] = [];
for (let r = 0; r < 3; r++) {
  p50s.push(await trackP50({ createClient, memoryStorage }));
  baseP50s.push(await trackP50(baseSdk));
}
const med = (a: number[]) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
const p50 = med(p50s);
const baseP50 = med(baseP50s);

// 1. track() cost; baseline: one durable write of one event's JSON (temp file + rename) per call.
const fileDir = path.join(tmp, 'file');
const fileUs = await trackCost(fileStorage(fileDir));
const memUs = await trackCost(memoryStorage());
const sample = JSON.stringify({
  schema_version: 1,
  event_id: crypto.randomUUID(),
  event_name: 'paywall_view',
  ts_ms: Date.now(),
  properties: props(1),
});
const t0 = performance.now();
for (let i = 0; i < TRACKS; i++) {
  await writeFile(path.join(tmp, 'raw.tmp'), sample);
  await rename(path.join(tmp, 'raw.tmp'), path.join(tmp, 'raw'));
}
const rawUs = ((performance.now() - t0) * 1000) / TRACKS;

// 2. storage bytes per queued event (file adapter), against the event's own JSON.
const queuedFiles = readdirSync(fileDir).filter((f) => /q\.\d+$/.test(decodeURIComponent(f)));
const bytesPerEvent = queuedFiles.reduce((n, f) => n + statSync(path.join(fileDir, f)).size, 0) / (TRACKS + 200);
const eventJson = JSON.parse((await fileStorage(fileDir).getItem(decodeURIComponent(queuedFiles[1])))!)[0];
const eventBytes = Buffer.byteLength(JSON.stringify(eventJson));

// 3. memory with QUEUED events queued (loaded from the file adapter, as after a restart); baseline: their JSON strings in an array.
const qDir = path.join(tmp, 'queued');
const filler = offlineClient(fileStorage(qDir));
for (let i = 0; i < QUEUED; i++) await filler.track('paywall_view', props(i));
const h0 = heap();
const loaded = offlineClient(fileStorage(qDir));
await loaded.track('loaded');
const h1 = heap();
const strings: string[] = [];
for (let i = 0; i < QUEUED; i++)
  strings.push(
    JSON.stringify({ ...eventJson, event_id: crypto.randomUUID(), context: { ...eventJson.context, client_seq: i } }),
  );
const h2 = heap();
if (loaded.queuedCount() !== QUEUED + 1 || strings.length !== QUEUED) throw new Error('queue not fully loaded');

// 4. bundle sizes: the core (index entry), the platform entries (each with the core it imports), the rule module alone.
const whole = await sdkSize('index.ts');
const browserSize = await sdkSize('browser.ts');
const rnSize = await sdkSize('react-native.ts');
const rules = await sdkSize('rules.ts');
const baseSize = await sdkSize('index.ts', baseSrc);

// 5. events/s end to end through one client (file adapter, contract batch size 20); baseline: the
// same number of events POSTed in batches of 20 by a bare loop, one request at a time.
const service = E2E ? await spawnService({ ROLE: 'all' }) : null;
let sdkRate = 0;
let bareRate = 0;
try {
  if (!service) throw new Error('skipped');
  const c = http(service.url);
  const t = await createTenant(c);
  await c.patch('/api/v1/settings', { events_per_minute: 10_000_000 }, t.console);
  const sdk = createClient({
    apiKey: t.live.public_key,
    baseUrl: service.url,
    storage: fileStorage(path.join(tmp, 'e2e')),
    device,
  });
  await sdk.start();
  const s0 = performance.now();
  for (let i = 0; i < E2E; i++) await sdk.track('paywall_view', props(i));
  while (sdk.queuedCount()) await sdk.flush();
  sdkRate = E2E / ((performance.now() - s0) / 1000);
  await sdk.shutdown();

  const anon = crypto.randomUUID();
  const session = crypto.randomUUID();
  const b0 = performance.now();
  for (let i = 0; i < E2E; i += 20) {
    const batch = Array.from({ length: 20 }, (_, j) => ({
      ...eventJson,
      event_id: crypto.randomUUID(),
      ts_ms: Date.now(),
      user: { anon_id: anon },
      context: { session_id: session, client_seq: i + j },
    }));
    const r = await c.post('/api/v1/ingest/events', { batch }, { 'x-api-key': t.live.public_key });
    if (r.status !== 202) throw new Error(`bare send: ${r.status} ${r.text}`);
  }
  bareRate = E2E / ((performance.now() - b0) / 1000);
} catch (e) {
  if ((e as Error).message !== 'skipped') throw e;
} finally {
  await service?.stop();
  rmSync(tmp, { recursive: true, force: true });
}

const f = (n: number, d = 1) => n.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d });
const mb = (n: number) => f(n / 1024 / 1024, 1);
const body = `Command: \`npm run bench:sdk -- --tracks ${TRACKS} --queued ${QUEUED} --e2e ${E2E}\` · ${machine()}

Measured on a machine shared with other work at the time (other helpers' tests and builds), so
absolute times are noisy (1-minute load average ${loadAtStart.toFixed(1)} at the start, ${loadavg()[0].toFixed(1)} at
the end); each baseline ran in the same process, right beside its figure.

| measure | SDK | baseline (same run) |
| --- | ---: | ---: |
| \`track()\` µs per call, Node file adapter (${TRACKS} calls, awaited one by one) | ${f(fileUs)} | ${f(rawUs)} (one temp-file write + rename of one event) |
| \`track()\` µs per call, memory adapter (mean) | ${f(memUs)} | |
| \`track()\` p50 µs, memory adapter (median of 3 runs of ${TRACKS} calls, alternating) | ${f(p50)} | ${f(baseP50)} (the SDK before part 2, ${BASE_REV}) |
| storage bytes per queued event (file adapter) | ${f(bytesPerEvent)} | ${eventBytes} (the event's JSON) |
| heap MB with ${QUEUED.toLocaleString('en-US')} queued events (loaded from files, as after a restart) | ${mb(h1 - h0)} | ${mb(h2 - h1)} (the same events as JSON strings in an array) |
| core bundle (index entry), minified + gzip (esbuild, ESM, es2020) | ${f(whole.gz / 1024, 2)} KB (${f(whole.min / 1024, 1)} KB minified) | ${f(baseSize.gz / 1024, 2)} KB (${f(baseSize.min / 1024, 1)} KB minified: the SDK before part 2) |
| browser entry (\`/browser\`, with the core parts it imports) | ${f(browserSize.gz / 1024, 2)} KB (${f(browserSize.min / 1024, 1)} KB minified) | |
| React Native entry (\`/react-native\`, with the core parts it imports) | ${f(rnSize.gz / 1024, 2)} KB (${f(rnSize.min / 1024, 1)} KB minified) | rule module alone: ${f(rules.gz / 1024, 2)} KB |
| events/s end to end, one client, file adapter, batches of 20 | ${E2E ? f(sdkRate, 0) : 'not run (--e2e 0)'} | ${E2E ? f(bareRate, 0) : '-'} (bare loop POSTing batches of 20, one at a time) |

Goals: core bundle under 10 KB minified + gzip: ${whole.gz < 10 * 1024 ? 'met' : 'missed'}; \`track()\` p50 under 50 µs
with the memory adapter: ${p50 < 50 ? 'met' : 'missed'}.
The file adapter's track cost is one segment rewrite (at most 20 events, temp file + rename)
plus, once per 100 events, the state file (client_seq reservation); the raw write of one event
is its floor. End to end, the SDK tracks with its own auto flush (20th event) while the app
keeps tracking, then flushes the rest; each batch is removed from storage only after the 202.`;
console.log(body);
writeResultsSection('sdk', body);
