import assert from 'node:assert/strict';
import { createHash, randomUUID } from 'node:crypto';
import { test } from 'node:test';
import pino from 'pino';
import type { Page } from 'playwright-core';
import { formatValue } from '../console/src/metrics.js';
import { buildApp } from '../src/app.js';
import { consoleRoutes } from '../src/modules/console/routes.js';
import { createTenant, makeEvent, type Tenant } from './helpers/client.js';
import { useConsole } from './helpers/browser.js';

// Issue 33 §3: numbers that arrive after the dashboard was opened reach its cards without a
// reload (a Refresh control, a refetch at the rollup interval, a refetch on opening the page),
// and each analytics page says when its numbers were computed, to the minute, in the viewer's zone.
const rig = useConsole();
/** The viewer's time zone: +05:30 all year, so the minute shown differs from UTC's by a known offset. */
const VIEWER_TZ = 'Asia/Kolkata';
const VIEWER_OFFSET_MIN = 330;

let root: string;
async function fold() {
  if (!root) {
    const r = await rig.c.post('/api/v1/auth/signup', { email: 'root@example.com', password: 'correct horse battery' });
    assert.equal(r.status, 201, r.text);
    root = r.body.token;
  }
  const r = await rig.c.post('/api/v1/admin/analytics/rollup', {}, { authorization: `Bearer ${root}` });
  assert.equal(r.status, 200, r.text);
}

/** `n` new devices open the app; folded; returns the KPI answer once the API counts `total` new users. */
async function newUsers(t: Tenant, n: number, total: number) {
  const batch = Array.from({ length: n }, () => makeEvent({ user: { anon_id: randomUUID() } }));
  const r = await rig.c.post('/api/v1/ingest/events', { batch }, { 'x-api-key': t.live.public_key });
  assert.equal(r.status, 202, r.text);
  for (;;) {
    await fold();
    const kpis = await rig.c.get('/api/v1/analytics/kpis', t.console);
    assert.equal(kpis.status, 200, kpis.text);
    if (kpis.body.kpis.find((k: any) => k.metric === 'new_users').current === total) return kpis.body;
  }
}

/** The new-users card shows `value` (as the console formats it). */
const card = (page: Page, value: number) =>
  page
    .getByRole('region', { name: 'new_users', exact: true })
    .locator('.value')
    .filter({ hasText: new RegExp(`^${formatValue('new_users', value)}$`) })
    .waitFor();

/** HH:MM of an instant in the viewer's zone, by plain arithmetic (not the Intl the page uses). */
function viewerMinute(iso: string) {
  const d = new Date(Date.parse(iso) + VIEWER_OFFSET_MIN * 60_000);
  return `${String(d.getUTCHours()).padStart(2, '0')}:${String(d.getUTCMinutes()).padStart(2, '0')}`;
}

test('a card moves from 0 to the API value without a reload: Refresh, the rollup interval, opening the page', async () => {
  const t = await createTenant(rig.c);
  const ctx = await rig.newContext({ timezoneId: VIEWER_TZ, locale: 'en-GB' });
  await ctx.addInitScript(
    ([token, pick]) => {
      sessionStorage.setItem('console.token', token);
      localStorage.setItem('console.pick', pick);
    },
    [t.token, JSON.stringify({ orgId: t.orgId, appId: t.appId })],
  );
  const page = await ctx.newPage();
  page.setDefaultTimeout(15_000);
  // The page's timers under the test's control: the interval is fast-forwarded, not waited for.
  await page.clock.install();
  await page.goto(`${rig.server.url}/console/`);
  await card(page, 0);

  // Events arrive and are folded after the page read its numbers: the Refresh button shows them.
  const first = await newUsers(t, 3, 3);
  const interval = first.meta.rollup_interval_s * 1000;
  assert.equal(first.meta.rollup_interval_s, rig.server.config.rollupIntervalS);
  await page.getByRole('button', { name: 'Refresh' }).click();
  await card(page, 3);
  // When the numbers were computed: the fold's instant, to the minute, in the viewer's zone.
  const stamp = page.getByRole('region', { name: 'Key metrics' }).locator('.fresh time');
  await stamp.and(page.locator(`[datetime="${first.meta.folded_at}"]`)).waitFor();
  assert.match((await stamp.textContent())!, new RegExp(`\\b${viewerMinute(first.meta.folded_at)}\\b`));

  // An open dashboard refetches on its own once the rollup interval has passed.
  await newUsers(t, 2, 5);
  await page.clock.fastForward(interval);
  await card(page, 5);

  // Another page, more events; back on the dashboard after an interval: it refetches on opening.
  await page.getByRole('link', { name: 'Retention' }).click();
  await page.getByRole('region', { name: 'Retention cohorts' }).locator('.fresh time').waitFor();
  await page.getByRole('button', { name: 'Refresh' }).waitFor();
  await newUsers(t, 4, 9);
  await page.clock.fastForward(interval + 1000);
  await page.getByRole('link', { name: 'Dashboard' }).click();
  await card(page, 9);
  await ctx.close();
});

/** The parts of a Content-Security-Policy: directive name to its sources. */
function csp(header: string | null) {
  assert.ok(header, 'a Content-Security-Policy header');
  return new Map(
    header
      .split(';')
      .map((d) => d.trim().split(/\s+/))
      .filter((d) => d[0])
      .map(([name, ...sources]) => [name!, sources]),
  );
}

test('security headers: a strict policy on the console and /docs, the cheap ones on the API; framing refused', async () => {
  const index = await rig.c.get('/console/');
  assert.equal(index.status, 200);
  const policy = csp(index.headers.get('content-security-policy'));
  assert.deepEqual(policy.get('frame-ancestors'), ["'none'"]);
  assert.deepEqual(policy.get('object-src'), ["'none'"]);
  assert.deepEqual(policy.get('base-uri'), ["'self'"]);
  assert.deepEqual(policy.get('style-src'), ["'self'"]);
  // The one inline script (the page preload) runs by its hash, computed here from the page served.
  const inline = [...index.text.matchAll(/<script>([\s\S]*?)<\/script>/g)].map(([, body]) => body!);
  assert.equal(inline.length, 1, 'index.html has its preload script inline');
  const hash = `'sha256-${createHash('sha256').update(inline[0]!).digest('base64')}'`;
  assert.deepEqual(policy.get('script-src'), ["'self'", hash]);
  for (const sources of policy.values()) assert.ok(!sources.includes("'unsafe-inline'"));
  // Framed by another origin: refused by both the CSP (above) and the older header.
  assert.equal(index.headers.get('x-frame-options'), 'DENY');

  const docs = await rig.c.get('/docs/static/index.html');
  assert.equal(docs.status, 200);
  const docsPolicy = csp(docs.headers.get('content-security-policy'));
  assert.deepEqual(docsPolicy.get('frame-ancestors'), ["'none'"]);
  assert.deepEqual(docsPolicy.get('script-src'), ["'self'"]);
  // swagger-ui's bundle injects a <style> element: inline styles only, never inline scripts.
  assert.deepEqual(docsPolicy.get('style-src'), ["'self'", "'unsafe-inline'"]);

  const api = await rig.c.get('/api/v1/me');
  assert.equal(api.status, 401);
  assert.deepEqual(csp(api.headers.get('content-security-policy')).get('default-src'), ["'none'"]);
  assert.equal(api.headers.get('x-frame-options'), 'DENY');
  const asset = /src="\/console\/(assets\/[^"]+\.js)"/.exec(index.text)![1];
  // Not a page though its path begins like one: the API's headers.
  const lookalike = await rig.c.get('/consolex');
  assert.equal(lookalike.headers.get('x-frame-options'), 'DENY');
  const pages = [index, docs, await rig.c.get(`/console/${asset}`), await rig.c.get('/docs/json')];
  for (const r of [...pages, api, lookalike, await rig.c.get('/livez')]) {
    assert.equal(r.headers.get('x-content-type-options'), 'nosniff');
    assert.equal(r.headers.get('referrer-policy'), 'no-referrer');
    // PUBLIC_URL is not https here: no HSTS (a browser would refuse plain http to the host for a year).
    assert.equal(r.headers.get('strict-transport-security'), null);
  }
});

test('/docs works under its policy (the browser reports no violation)', async () => {
  const ctx = await rig.newContext();
  const page = await ctx.newPage();
  await page.goto(`${rig.server.url}/docs`);
  // The document's title, then an operation of it: swagger-ui's script ran and fetched /docs/json.
  await page.getByRole('heading', { name: /Mobile SDK backend/ }).waitFor({ timeout: 30_000 });
  await page.locator('.opblock').first().waitFor({ timeout: 30_000 });
  await ctx.close();
});

test('HSTS is sent on every answer when PUBLIC_URL is https', async () => {
  const app = await buildApp({
    logger: pino({ level: 'silent' }),
    plugins: [consoleRoutes({ https: true })],
    version: 'test',
    publicUrl: 'https://console.example.com',
  });
  for (const url of ['/console/', '/docs/static/index.html', '/api/v1/nothing-here']) {
    const r = await app.inject({ url });
    assert.match(String(r.headers['strict-transport-security']), /^max-age=31536000; includeSubDomains$/, url);
    assert.equal(r.headers['x-content-type-options'], 'nosniff', url);
  }
  await app.close();
});
