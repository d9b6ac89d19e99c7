// npm run bench:console [-- --events 1000000 --devices 100000 --runs 5]
// 1. JS shipped on the console's first load (gzip): the script and module preloads index.html names.
// 2. The service (in this process, embedded PostgreSQL, ROLLUP_INTERVAL_S=1) with a generated app
//    (bench/lib/analytics-data.ts), folded; funnel answers current, as a dashboard sees them.
// 3. Chromium opens the dashboard, funnels and retention pages signed in (a new browser context
//    each run: nothing cached) and times navigation -> every tile rendered (no tile busy, the 24
//    KPI cards, the chart's canvas, the nine funnels' bars, the heatmap). Baselines, same run: the
//    slowest of the page's API calls made at once from Node (what the API alone costs), and a static
//    file shown in the same new context (what the browser alone costs at the machine's load).
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { gzipSync } from 'node:zlib';
import pg from 'pg';
import pino from 'pino';
import { chromium, type Browser } from 'playwright-core';
import { ensureConsoleBuilt } from '../console/scripts/build.mjs';
import { CONSOLE_DIST } from '../src/modules/console/routes.js';
import { loadConfig } from '../src/config.js';
import { startServer } from '../src/server.js';
import { client, createTenant } from '../test/helpers/client.js';
import { CHROMIUM } from '../test/helpers/browser.js';
import { GENERATE } from './lib/analytics-data.js';
import { machine, writeResultsSection } from './lib/results.js';
import { freePort } from './lib/service.js';

const { values } = parseArgs({
  options: {
    events: { type: 'string', default: '1000000' },
    devices: { type: 'string', default: '' },
    runs: { type: 'string', default: '5' },
    trace: { type: 'boolean', default: false },
  },
});
const EVENTS = Number(values.events);
const DEVICES = Number(values.devices || EVENTS / 10);
const RUNS = Number(values.runs);

// 1) first-load JS
ensureConsoleBuilt();
const html = readFileSync(path.join(CONSOLE_DIST, 'index.html'), 'utf8');
const firstLoad = [...html.matchAll(/(?:src|href)="\/console\/(assets\/[^"]+)"/g)].map((m) => m[1]);
const gz = (f: string) => gzipSync(readFileSync(path.join(CONSOLE_DIST, f))).length;
const jsKb = firstLoad.filter((f) => f.endsWith('.js')).reduce((s, f) => s + gz(f), 0) / 1024;
const cssKb = firstLoad.filter((f) => f.endsWith('.css')).reduce((s, f) => s + gz(f), 0) / 1024;
console.log(`first load: ${firstLoad.join(', ')}: JS ${jsKb.toFixed(1)} KB gzip, CSS ${cssKb.toFixed(1)} KB gzip`);

// 2) service and data
const dataDir = mkdtempSync(path.join(tmpdir(), 'console-bench-'));
const config = loadConfig(
  { PORT: '0', HOST: '127.0.0.1', EMBEDDED_PG_PORT: String(await freePort()), ROLLUP_INTERVAL_S: '1' },
  { dataDir },
);
const server = await startServer(config, pino({ level: 'warn' }));
const db = new pg.Pool({ connectionString: server.databaseUrl, max: 2 });
let browser: Browser | undefined;
try {
  const c = client(server.url!);
  const t = await createTenant(c);
  console.log(`generating ${EVENTS.toLocaleString('en-US')} events for ${DEVICES.toLocaleString('en-US')} devices...`);
  let t0 = Date.now();
  await db.query(GENERATE, [t.orgId, t.appId, EVENTS, DEVICES, 0]);
  const maxSeq = Number(
    (await db.query(`SELECT pg_sequence_last_value(pg_get_serial_sequence('events', 'seq')) AS m`)).rows[0].m,
  );
  const genS = (Date.now() - t0) / 1000;
  t0 = Date.now();
  const poll = async (ok: () => Promise<boolean>) => {
    while (!(await ok())) await new Promise((r) => setTimeout(r, 500));
  };
  await poll(
    async () => Number((await db.query('SELECT min(watermark) AS w FROM an_rollup_state')).rows[0].w) >= maxSeq,
  );
  await poll(
    async () =>
      Number(
        (
          await db.query(
            `SELECT count(*) AS n FROM an_funnel_results r JOIN an_app_versions v
    ON v.app_id = r.app_id AND v.environment = r.environment WHERE r.version >= v.version AND r.app_id = $1`,
            [t.appId],
          )
        ).rows[0].n,
      ) >= 9,
  );
  const foldS = (Date.now() - t0) / 1000;
  // Autovacuum's first pass over a bulk load of millions of rows would otherwise run beside the pages (measured:
  // the API alone took 2-3 times longer); a live app's tables are vacuumed in small steps as events arrive.
  t0 = Date.now();
  await db.query(`VACUUM ANALYZE events`);
  await db.query(`VACUUM ANALYZE an_devices, an_sessions, an_steps, an_purchases`);
  const vacuumS = (Date.now() - t0) / 1000;
  console.log(
    `generated in ${genS.toFixed(0)} s, folded with funnel answers in ${foldS.toFixed(0)} s, vacuumed in ${vacuumS.toFixed(0)} s`,
  );

  // 3) pages
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  const pick = JSON.stringify({ orgId: t.orgId, appId: t.appId });
  const funnels = [
    'onboarding',
    'monetization',
    'retention',
    'icp_usp',
    'aso',
    'paid_ua',
    'organic_social',
    'web2app',
    'feedback_loop',
  ];
  const pages = [
    {
      name: 'dashboard',
      path: '/',
      apis: [
        '/api/v1/analytics/kpis?compare=previous_period&environment=production',
        '/api/v1/analytics/kpis/timeseries?metrics=dau,new_users&granularity=daily&segment=overall&environment=production',
        '/api/v1/analytics/activity',
      ],
      done: () =>
        document.querySelectorAll('section.card').length === 24 &&
        !!document.querySelector('.chart canvas') &&
        !!document.querySelector('.feed') &&
        !document.querySelector('[aria-busy="true"]'),
    },
    {
      name: 'funnels',
      path: '/funnels',
      apis: [
        '/api/v1/analytics/funnels',
        ...funnels.map((f) => `/api/v1/analytics/funnel/${f}?environment=production`),
      ],
      done: () => document.querySelectorAll('ol.bars').length === 9 && !document.querySelector('[aria-busy="true"]'),
    },
    {
      name: 'retention',
      path: '/retention',
      apis: ['/api/v1/analytics/retention?segment=overall&environment=production'],
      done: () => !!document.querySelector('table.heat tbody tr') && !document.querySelector('[aria-busy="true"]'),
    },
  ];
  const waterfall = () =>
    [
      `  html ${Math.round((performance.getEntriesByType('navigation')[0] as PerformanceNavigationTiming).responseEnd)}`,
      ...(performance.getEntriesByType('resource') as PerformanceResourceTiming[]).map(
        (e) => `  ${Math.round(e.startTime)}-${Math.round(e.responseEnd)} ${new URL(e.name).pathname}`,
      ),
      `  now ${Math.round(performance.now())}`,
    ].join('\n');
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const rows: string[] = [];
  for (const p of pages) {
    const ui: number[] = [];
    const api: number[] = [];
    const browserOnly: number[] = [];
    let pageJsKb = 0;
    for (let i = 0; i < RUNS; i++) {
      const s = performance.now();
      const answers = await Promise.all(p.apis.map((u) => c.get(u, t.console)));
      for (const a of answers) if (a.status !== 200) throw new Error(`${p.name}: ${a.status} ${a.text}`);
      api.push(performance.now() - s);

      const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
      await ctx.addInitScript(
        ([token, chosen]) => {
          sessionStorage.setItem('console.token', token);
          localStorage.setItem('console.pick', chosen);
        },
        [t.token, pick],
      );
      const page = await ctx.newPage();
      const assets = new Set<string>();
      page.on('request', (r) => {
        const m = /\/console\/(assets\/[^?]+\.js)$/.exec(r.url());
        if (m) assets.add(m[1]);
      });
      const start = performance.now();
      const traced = values.trace && (i === 0 || i === RUNS - 1);
      await page.goto(`${server.url}/console${p.path}`, { waitUntil: 'commit' });
      await page.waitForFunction(p.done, undefined, { timeout: 60_000, polling: 'raf' });
      ui.push(performance.now() - start);
      // --trace (first and last run): the page's requests on its own clock (ms from navigation);
      // the bench's process also serves them, so its own timestamps would lag when it is busy.
      if (traced) console.log(`${p.name} run ${i + 1}:`, await page.evaluate(waterfall));
      pageJsKb = [...assets].reduce((t, f) => t + gz(f), 0) / 1024;
      // Baseline of the browser itself at this load: a new context's page showing a static file.
      const blank = await ctx.newPage();
      const b0 = performance.now();
      await blank.goto(`${server.url}/console/${firstLoad.find((f) => f.endsWith('.css'))}`, { waitUntil: 'load' });
      browserOnly.push(performance.now() - b0);
      await ctx.close();
    }
    console.log(p.name, { ui, api, browserOnly });
    rows.push(
      `| ${p.name} | ${pageJsKb.toFixed(1)} | ${median(ui).toFixed(0)} | ${Math.max(...ui).toFixed(0)} | ${median(api).toFixed(0)} | ${median(browserOnly).toFixed(0)} | ${Math.max(...ui) < 1500 ? 'met' : 'NOT met'} |`,
    );
  }

  writeResultsSection(
    'console',
    `Command: \`npm run bench:console -- --events ${EVENTS} --devices ${DEVICES} --runs ${RUNS}\` · ${machine()}
Load average ${loadavg()[0].toFixed(1)} at the end, on 2 cores (the bench's own service, database and browser included).

First load (what index.html names: the entry script and its module preloads), gzip: **JS ${jsKb.toFixed(1)} KB**, CSS ${cssKb.toFixed(1)} KB
(goal: JS under 250 KB: ${jsKb < 250 ? 'met' : 'NOT met'}). Each page's own code (and uPlot: dashboard) is preloaded beside it when the URL names the page.

Data: **${EVENTS.toLocaleString('en-US')} events, ${DEVICES.toLocaleString('en-US')} devices over 90 days** (bench/lib/analytics-data.ts; the issue asks for
10,000,000: \`npm run bench:console -- --events 10000000\`), folded, funnel answers current, then the bulk load and the rollups vacuumed
(${vacuumS.toFixed(0)} s; a live app's autovacuum works in small steps). Service in the bench's process,
embedded PostgreSQL; Debian Chromium headless, a new browser context per run (nothing cached), signed in.

Time from navigation to every tile rendered (${RUNS} runs). Baselines of the same run: the page's API calls made at once
from Node (time to the slowest answer), and the browser alone (a page showing a static 4 KB file, same new context).

| page | JS loaded, KB gzip | median ms | max ms | API alone, median ms | browser alone, median ms | max < 1,500 ms |
| --- | ---: | ---: | ---: | ---: | ---: | --- |
${rows.join('\n')}

Reading: what the console adds is the median less the two baselines: two round trips in a row (index.html -> the
small entry script with the page's code preloaded beside it -> /me and the tiles' queries at once, while React and the
app load and run), then the render.
On a loaded machine each step waits for a core; the figures of a quiet machine are the ones to hold against the goal.
`,
  );
} finally {
  await browser?.close();
  await db.end();
  await server.stop();
  rmSync(dataDir, { recursive: true, force: true });
}
