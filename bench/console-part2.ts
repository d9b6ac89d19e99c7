// npm run bench:console-authoring [-- --runs 5 --items 100000]
// The console's authoring pages in Chromium, signed in, a new browser context per run (nothing cached):
// 1. open the editor of a 200 KB paywall (Content -> Paywalls -> Edit: the definition in the JSON editor);
// 2. diff two bundle versions of 500 items each (250 changed): Releases -> pick From/To -> the change list;
// 3. first page of a search in a 100,000-item option set (Option sets -> open -> type -> first row).
// Baselines, same run: the API calls each step needs made from Node (what the API alone costs).
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import pino from 'pino';
import { chromium, type Page } from 'playwright-core';
import { ensureConsoleBuilt } from '../console/scripts/build.mjs';
import { diffBundles } from '../console/src/pages/bundle-diff.js';
import { loadConfig } from '../src/config.js';
import { startServer } from '../src/server.js';
import { CHROMIUM } from '../test/helpers/browser.js';
import { client, createTenant } from '../test/helpers/client.js';
import { machine, writeResultsSection } from './lib/results.js';
import { freePort } from './lib/service.js';

const { values } = parseArgs({
  options: { runs: { type: 'string', default: '5' }, items: { type: 'string', default: '100000' } },
});
const RUNS = Number(values.runs);
const ITEMS = Number(values.items);
const SYNC_BATCH = 5000;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const ms = (xs: number[]) =>
  `${median(xs).toFixed(0)} ms (min ${Math.min(...xs).toFixed(0)}, max ${Math.max(...xs).toFixed(0)})`;

ensureConsoleBuilt();
const dataDir = mkdtempSync(path.join(tmpdir(), 'console-part2-bench-'));
const config = loadConfig({ PORT: '0', HOST: '127.0.0.1', EMBEDDED_PG_PORT: String(await freePort()) }, { dataDir });
const server = await startServer(config, pino({ level: 'warn' }));
const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
const load0 = loadavg()[0];
try {
  const c = client(server.url!);
  const t = await createTenant(c);
  const ok = <R extends { status: number; text: string }>(r: R): R => {
    if (r.status >= 300) throw new Error(`${r.status} ${r.text}`);
    return r;
  };

  // Data: a 200 KB paywall; two bundles of 500 remote-config items; a 100,000-item option set.
  const blocks = Array.from({ length: 1400 }, (_, i) => ({
    id: `block_${i}`,
    kind: 'text',
    text: `Feature line ${i} `.repeat(6),
  }));
  const paywall = ok(
    await c.post(
      '/api/v1/paywalls',
      { name: 'Big paywall', layout: { blocks }, plans: [{ product_id: 'pro' }], cta: { text: 'Go' } },
      t.console,
    ),
  ).body.data;
  const kb = JSON.stringify(paywall).length / 1024;
  const v1 = Object.fromEntries(Array.from({ length: 500 }, (_, i) => [`key_${i}`, { n: i, text: `value ${i}` }]));
  const from = ok(await c.put('/api/v1/remote-config', { values: v1 }, t.console)).body.bundle_version as number;
  const v2 = Object.fromEntries(Object.entries(v1).map(([k, v], i) => [k, i % 2 ? { ...v, n: -i } : v]));
  const to = ok(await c.put('/api/v1/remote-config', { values: v2 }, t.console)).body.bundle_version as number;
  const pair = { 'x-api-key': t.live.public_key, 'x-api-secret': t.live.secret_key };
  const words = ['Zürich', 'São Paulo', 'Kraków', 'Montréal', 'Malmö', 'Córdoba', 'Łódź', 'Reykjavík'];
  for (let s = 0; s < ITEMS; s += SYNC_BATCH) {
    const items = Array.from({ length: Math.min(SYNC_BATCH, ITEMS - s) }, (_, j) => ({
      value: `city_${s + j}`,
      label: `${words[(s + j) % words.length]} ${s + j}`,
    }));
    ok(await c.post('/api/v1/sdk/option-sets/cities/sync', { mode: 'merge', items }, pair));
  }
  console.log(
    `data: paywall ${kb.toFixed(0)} KB, bundles ${from} and ${to} (500 items, 250 changed), option set of ${ITEMS} items`,
  );

  const open = async (to: string): Promise<Page> => {
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    await ctx.addInitScript(
      ([token, pick]) => {
        sessionStorage.setItem('console.token', token);
        localStorage.setItem('console.pick', pick);
      },
      [t.token, JSON.stringify({ orgId: t.orgId, appId: t.appId })],
    );
    const page = await ctx.newPage();
    page.setDefaultTimeout(60_000);
    await page.goto(`${server.url}/console${to}`);
    return page;
  };
  const res = {
    editor: [] as number[],
    editorApi: [] as number[],
    diff: [] as number[],
    diffApi: [] as number[],
    search: [] as number[],
    searchApi: [] as number[],
  };
  for (let i = 0; i < RUNS; i++) {
    // 1) editor
    let s = performance.now();
    ok(await c.get('/api/v1/paywalls?limit=100', t.console));
    res.editorApi.push(performance.now() - s);
    let page = await open('/content');
    await page.getByLabel('Kind').selectOption('paywalls');
    await page.getByRole('row', { name: 'Item Big paywall' }).waitFor();
    s = performance.now();
    await page.getByRole('row', { name: 'Item Big paywall' }).getByRole('button', { name: 'Edit' }).click();
    await page.waitForFunction(() =>
      (document.querySelector('section[aria-label="Editor"] textarea') as HTMLTextAreaElement | null)?.value.includes(
        'block_1399',
      ),
    );
    res.editor.push(performance.now() - s);
    await page.context().close();

    // 2) diff (versions fetched by the page on selection: not cached in a new context)
    s = performance.now();
    const [a, b] = await Promise.all([from, to].map((v) => c.get(`/api/v1/sdk/config-bundle/history/${v}`, t.console)));
    if (diffBundles(a.body.data.content, b.body.data.content).length !== 250) throw new Error('diff');
    res.diffApi.push(performance.now() - s);
    page = await open('/releases');
    const cmp = page.getByRole('region', { name: 'Compare versions' });
    await cmp.waitFor();
    await cmp.getByLabel('From version').selectOption(String(1));
    await cmp
      .getByText(/No content item differs|added|changed/)
      .first()
      .waitFor();
    s = performance.now();
    await cmp.getByLabel('From version').selectOption(String(from));
    await cmp.getByLabel('To version').selectOption(String(to));
    await page.waitForFunction(() => document.querySelectorAll('[aria-label="Changes"] li').length === 250);
    res.diff.push(performance.now() - s);
    await page.context().close();

    // 3) search: a new word each run, so no page cache on the server answers it
    const q = `${words[i % words.length].normalize('NFD').replace(/\p{M}/gu, '').toLowerCase()} ${7 + i}`;
    s = performance.now();
    ok(
      await c.get(`/api/v1/sdk/option-sets/cities?q=${encodeURIComponent(`${q}1`)}&limit=50`, {
        'x-api-key': t.live.public_key,
      }),
    );
    res.searchApi.push(performance.now() - s);
    page = await open('/option-sets');
    await page.getByLabel('Set id').fill('cities');
    await page.getByRole('button', { name: 'Open' }).click();
    await page
      .getByRole('row', { name: /^Option / })
      .first()
      .waitFor();
    s = performance.now();
    await page.getByLabel('Search').fill(q);
    await page.waitForFunction((w) => {
      const first = document.querySelector('tr[aria-label^="Option "] td:nth-child(2)');
      return !!first && first.textContent!.normalize('NFD').replace(/\p{M}/gu, '').toLowerCase().includes(w);
    }, q.split(' ')[0]);
    res.search.push(performance.now() - s);
    await page.context().close();
  }
  const load1 = loadavg()[0];
  const lines = [
    `| figure | console (Chromium) | API alone (baseline, same run) |`,
    `| --- | --- | --- |`,
    `| open the editor of a ${kb.toFixed(0)} KB paywall (click Edit -> JSON editor filled) | ${ms(res.editor)} | list with the paywall: ${ms(res.editorApi)} |`,
    `| diff two bundles of 500 items, 250 changed (pick versions -> 250 changes listed) | ${ms(res.diff)} | both versions + diffBundles in Node: ${ms(res.diffApi)} |`,
    `| first page of a search in a ${ITEMS.toLocaleString('en-US')}-item option set (type -> first match shown) | ${ms(res.search)} | one search request: ${ms(res.searchApi)} |`,
  ];
  console.log(lines.join('\n'));
  writeResultsSection(
    'console authoring (part 2)',
    `Command: \`npm run bench:console-authoring -- --runs ${RUNS} --items ${ITEMS}\` · ${machine()} · medians of ${RUNS} runs, a new browser context each.
The machine was shared with other work while measured (load average ${load0.toFixed(1)} at the start, ${load1.toFixed(1)} at the end).

${lines.join('\n')}

The editor time is the page's own work on a large definition (JSON.stringify into the text area); the diff time includes
fetching both versions (about 2 x 40 KB) since a new context caches nothing; the search time includes the typing
(deferred input) and one API call per keystroke the browser sends.`,
  );
} finally {
  await browser.close();
  await server.stop();
  rmSync(dataDir, { recursive: true, force: true });
}
