// `npm run demo`: the service as `npm start` runs it (own data directory), a demo organization
// seeded through the public API (scripts/demo/seed.ts), and the example app (examples/paywall-demo)
// served beside it. Ctrl-C or SIGTERM stops both. Settings: examples/paywall-demo/README.md.
import { type ChildProcess, spawn } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureExampleBuilt, exampleDist } from '../examples/paywall-demo/scripts/build.mjs';
import { ensureSdkBuilt } from './build-sdk.mjs';
import { serveStatic, type StaticSite } from './demo/serve.js';
import { seedDemo } from './demo/seed.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const env = process.env;
const port = Number(env.PORT ?? 3000);
const examplePort = Number(env.EXAMPLE_PORT ?? 5173);
const api = `http://localhost:${port}`;
const began = Date.now();
const say = (line: string) => console.log(`[demo ${((Date.now() - began) / 1000).toFixed(1).padStart(5)} s] ${line}`);

let service: ChildProcess | undefined;
let site: StaticSite | undefined;
let stopping = false;

/** Stops what this script started: the example's server, then the service (SIGTERM drains it). */
async function stop(code: number, signal: NodeJS.Signals = 'SIGTERM') {
  if (stopping) return;
  stopping = true;
  await site?.close();
  if (service && service.exitCode === null && service.signalCode === null) {
    say('stopping the service…');
    const exited = new Promise((r) => service!.once('exit', r));
    service.kill(signal === 'SIGINT' ? 'SIGTERM' : signal);
    await exited;
  }
  process.exit(code);
}
process.once('SIGINT', () => void stop(0, 'SIGINT'));
process.once('SIGTERM', () => void stop(0));

async function waitReady(deadline: number) {
  for (;;) {
    if (service?.exitCode !== null) throw new Error(`the service exited (code ${service?.exitCode})`);
    const ok = await fetch(`${api}/readyz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return;
    if (Date.now() > deadline) throw new Error('the service was not ready after 3 minutes');
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** Refuses a busy port up front: otherwise another service answering there could look like ours. */
async function assertFree(p: number) {
  await new Promise<void>((resolve, reject) => {
    const probe = net.createServer().once('error', () => reject(new Error(`port ${p} is in use (set PORT)`)));
    probe.listen(p, () => probe.close(() => resolve()));
  });
}

async function main() {
  await assertFree(port);
  ensureSdkBuilt();
  ensureExampleBuilt(say);
  site = await serveStatic(exampleDist, examplePort);
  const origins = [site.url, `http://127.0.0.1:${examplePort}`, env.CORS_ORIGINS].filter(Boolean).join(',');
  say(`starting the service on :${port} (data in ${env.DATA_DIR ?? 'data/demo'})…`);
  service = spawn(process.execPath, [path.join(root, 'scripts', 'start.mjs')], {
    cwd: root,
    stdio: 'inherit',
    // Its own process group: Ctrl-C reaches this script, which stops the service once, cleanly.
    detached: true,
    env: {
      ...env,
      PORT: String(port),
      DATA_DIR: env.DATA_DIR ?? path.join(root, 'data', 'demo'),
      CORS_ORIGINS: origins,
      // Dashboards catch up with the uploaded history within seconds rather than a minute.
      ROLLUP_INTERVAL_S: env.ROLLUP_INTERVAL_S ?? '5',
      LOG_LEVEL: env.LOG_LEVEL ?? 'warn',
    },
  });
  service.once('exit', (code) => {
    if (!stopping) say(`the service exited (code ${code})`);
    void stop(code ?? 1);
  });
  await waitReady(Date.now() + 180_000);
  say('service ready; seeding the demo organization…');
  const demo = await seedDemo({
    baseUrl: api,
    devices: Number(env.DEMO_DEVICES ?? 3000),
    days: Number(env.DEMO_DAYS ?? 60),
    log: say,
  });
  say('waiting for the dashboard to fold the history…');
  await waitForDashboard(demo.console, Date.now());
  const example = `${site.url}/?api=${encodeURIComponent(api)}&key=${demo.publicKey}`;
  console.log(`
  Demo ready (${((Date.now() - began) / 1000).toFixed(0)} s).

  Console:      ${api}/console
                sign in as ${demo.email} / ${demo.password}
                (organization "Demo Org", app "Paywall Demo")
  Example app:  ${example}
  SDK key:      ${demo.publicKey}

  Ctrl-C stops the service and the example app.
`);
}

/**
 * Until a fold that began after the upload ended has finished (the fold runs every
 * ROLLUP_INTERVAL_S, one run at a time, and stamps `folded_at` with its start): the first stamp
 * after the upload may be a run that took its horizon before the upload's end, the next one cannot.
 */
async function waitForDashboard(headers: Record<string, string>, uploadedAt: number) {
  const deadline = Date.now() + 90_000;
  let first = 0;
  while (Date.now() < deadline) {
    const r = await fetch(`${api}/api/v1/analytics/kpis?period=30d`, { headers });
    const body = (await r.json()) as {
      kpis: { metric: string; current: number | null }[];
      meta: { folded_at: string };
    };
    const at = Date.parse(body.meta?.folded_at ?? '') || 0;
    if (first && at > first) {
      const users = body.kpis.find((k) => k.metric === 'new_users')?.current;
      return say(`dashboard up to date: ${users} new users in the last 30 days`);
    }
    if (!first && at > uploadedAt) first = at;
    await new Promise((r) => setTimeout(r, 500));
  }
  say('the dashboard has not caught up yet; it will within a minute');
}

main().catch((e: unknown) => {
  console.error(`[demo] failed: ${e instanceof Error ? e.message : e}`);
  void stop(1);
});
