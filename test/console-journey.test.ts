import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import type { Page } from 'playwright-core';
import { formatValue } from '../console/src/metrics.js';
import { makeEvent } from './helpers/client.js';
import { screenshot, useConsole } from './helpers/browser.js';
import { cancel, confirmation } from './helpers/dialog.js';

// The journey from an empty service, through the browser: account, organization, app, key;
// events through the API; the cards, range and compare, funnels, retention, a viewer, a failing tile.
const rig = useConsole();
const PASSWORD = 'correct horse battery';
const DAY = 86_400_000;

/** A week of a small app: 12 devices, sessions, onboarding, paywalls, trials and purchases. */
function events(): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  const now = Date.now() - 60_000;
  for (let d = 0; d < 12; d++) {
    const anon = randomUUID();
    const first = now - (d % 7) * DAY;
    const platform = d % 3 === 0 ? 'android' : 'ios';
    const at = (t: number, name: string, properties: Record<string, unknown> = {}) =>
      out.push(
        makeEvent({
          event_name: name,
          ts_ms: t,
          user: { anon_id: anon },
          properties,
          context: { session_id: randomUUID() },
          device: {
            platform,
            os: '17',
            app_version: '1.0',
            sdk_version: '2.0',
            locale: 'en_US',
            country: d % 2 ? 'US' : 'DE',
          },
        }),
      );
    at(first, 'app_open');
    at(first + 1000, 'session_start');
    at(first + 2000, 'onboarding_flow_started');
    if (d % 2 === 0) at(first + 3000, 'onboarding_step_completed');
    if (d % 4 === 0) at(first + 4000, 'onboarding_flow_completed');
    if (d % 3 !== 2) at(first + 5000, 'paywall_view');
    if (d % 3 === 0) at(first + 6000, 'purchase_started');
    if (d % 3 === 0) at(first + 7000, 'purchase_completed', { price: 9.99, currency: 'USD', period: 'P1M' });
    if (d % 5 === 1) at(first + 8000, 'purchase_completed', { price: 4.99, currency: 'USD', is_trial: true });
    if (d % 2 === 1 && first + DAY < now) at(first + DAY, 'session_start');
  }
  return out;
}

const valueOf = (page: Page, metric: string) =>
  page.getByRole('region', { name: metric, exact: true }).locator('.value');
const api = async (page: Page, path: string) => {
  const token = await page.evaluate(() => sessionStorage.getItem('console.token'));
  const pick = await page.evaluate(() => JSON.parse(localStorage.getItem('console.pick') ?? '{}'));
  const r = await rig.c.get(path, {
    authorization: `Bearer ${token}`,
    'x-tenant-id': pick.orgId,
    'x-app-id': pick.appId,
  });
  assert.equal(r.status, 200, r.text);
  return r.body;
};

test('the console journey from an empty service', async () => {
  const owner = `owner-${Date.now()}@example.com`;
  const page = await rig.open('/');

  // Sign up, then first run.
  await page.getByRole('button', { name: 'Create account' }).waitFor();
  await screenshot(page, 'sign-in');
  await page.getByLabel('Email').fill(owner);
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Create account' }).click();
  await page.getByLabel('Organization name').fill('Acme');
  await screenshot(page, 'first-run');
  await page.getByRole('button', { name: 'Create organization' }).click();
  await page.getByLabel('App name').fill('Acme iOS');
  await page.getByRole('button', { name: 'Create app' }).click();

  // A key: the secret is shown once, with a copy button and a warning.
  await page.getByRole('link', { name: 'API keys' }).click();
  await page.getByLabel('Key name').fill('ios app');
  await page.getByRole('button', { name: 'Create key' }).click();
  const secretBox = page.getByRole('region', { name: 'New secret key' });
  await secretBox.getByText('shown only once').waitFor();
  const publicKey = (await secretBox.getByRole('heading').textContent())!.split(' ')[1];
  assert.match(publicKey, /^svc_live_/);
  assert.match((await secretBox.getByLabel('Secret key').textContent())!, /^sk_/);
  await secretBox.getByRole('button', { name: 'Copy secret' }).click();
  await secretBox.getByRole('button', { name: 'Copied' }).waitFor();
  await screenshot(page, 'api-keys');
  await secretBox.getByRole('button', { name: 'I have stored it' }).click();

  mark('Events through th');
  // Events through the API with that key, folded into the rollups.
  const batch = events();
  const ingested = await rig.c.post('/api/v1/ingest/events', { batch }, { 'x-api-key': publicKey });
  assert.equal(ingested.status, 202, ingested.text);
  const root = await rig.c.post('/api/v1/auth/signup', { email: 'root@example.com', password: PASSWORD });
  assert.equal(root.status, 201, root.text);
  assert.equal(
    (await rig.c.post('/api/v1/admin/analytics/rollup', {}, { authorization: `Bearer ${root.body.token}` })).status,
    200,
  );

  mark('Every card shows');
  // Every card shows the value the API returns.
  await page.getByRole('link', { name: 'Dashboard' }).click();
  await page.reload();
  const kpis = await api(page, '/api/v1/analytics/kpis');
  assert.equal(kpis.kpis.length, 24);
  assert.ok(kpis.kpis.find((k: any) => k.metric === 'new_users').current > 0, 'the fold counted the new users');
  for (const k of kpis.kpis) {
    await assertText(valueOf(page, k.metric), formatValue(k.metric, k.current));
  }
  await page
    .getByText(/Data as of \d{4}-\d\d-\d\d/)
    .first()
    .waitFor();
  await page.getByRole('img', { name: 'Trends chart' }).locator('canvas').waitFor();
  await screenshot(page, 'dashboard');

  mark('Range and compare');
  // Range and compare.
  await page.getByLabel('Range').selectOption('7');
  await page.getByLabel('Compare to').selectOption('previous_year');
  const week = await api(
    page,
    `/api/v1/analytics/kpis?start_date=${addDays(kpis.period.end, -6)}&end_date=${kpis.period.end}&compare=previous_year`,
  );
  await page
    .getByText(`${week.period.start} to ${week.period.end} vs ${week.compared_to.start} to ${week.compared_to.end}`)
    .waitFor();
  for (const m of ['dau', 'mau', 'new_users', 'mrr', 'paywall_view_rate']) {
    await assertText(valueOf(page, m), formatValue(m, week.kpis.find((k: any) => k.metric === m).current));
  }
  await page.getByLabel('Compare overlay').check();
  await page
    .getByText(/Previous year \(/)
    .first()
    .waitFor();

  mark('A failing endpoin');
  // A failing endpoint fails its tile alone.
  await page.route('**/api/v1/analytics/kpis/timeseries**', (route) =>
    route.fulfill({
      status: 500,
      contentType: 'application/problem+json',
      body: JSON.stringify({
        status: 500,
        code: 'internal_error',
        title: 'Internal error',
        detail: 'Injected by the test',
      }),
    }),
  );
  await page.reload();
  const trends = page.getByRole('region', { name: 'Trends' });
  await trends.getByRole('alert').filter({ hasText: 'Injected by the test' }).waitFor();
  await assertText(
    valueOf(page, 'new_users'),
    formatValue('new_users', kpis.kpis.find((k: any) => k.metric === 'new_users').current),
  );
  await page.getByRole('region', { name: 'Activity feed' }).getByText('App "Acme iOS" created').waitFor();
  await screenshot(page, 'dashboard-failing-tile');
  await page.unroute('**/api/v1/analytics/kpis/timeseries**');

  mark('Funnels:');
  // Funnels: step bars with the API's counts.
  await page.getByRole('link', { name: 'Funnels' }).click();
  const onboarding = await api(page, '/api/v1/analytics/funnel/onboarding');
  const tile = page.getByRole('region', { name: 'onboarding', exact: true });
  for (const s of onboarding.steps) {
    await assertText(
      tile.getByRole('listitem', { name: s.step_name }).locator('strong'),
      s.users.toLocaleString('en-US'),
    );
  }
  assert.equal(onboarding.steps[0].users, 12);
  await tile
    .getByRole('listitem', { name: onboarding.steps[1].step_name })
    .getByText(`${onboarding.steps[1].conversion_rate}% converted`)
    .waitFor();
  await page.getByRole('region', { name: 'feedback_loop' }).getByText('entry').waitFor();
  await screenshot(page, 'funnels');

  mark('Retention:');
  // Retention: the heatmap, days not reached yet blank.
  await page.getByRole('link', { name: 'Retention' }).click();
  const retention = await api(page, '/api/v1/analytics/retention');
  const heat = page.getByRole('table', { name: 'Retention heatmap' });
  await heat.waitFor();
  assert.equal(await heat.locator('tbody tr').count(), retention.cohorts.length);
  const newest = retention.cohorts.at(-1);
  assert.equal(newest.retention.d90, null);
  const row = heat.locator('tbody tr').filter({ hasText: newest.cohort_date });
  assert.equal(await row.locator('td').last().textContent(), '');
  await screenshot(page, 'retention');

  await page.getByRole('link', { name: 'Activity' }).click();
  await page.getByText('App "Acme iOS" created').waitFor();
  await screenshot(page, 'activity');

  mark('Rotation');
  // Rotation with an overlap, revocation after a confirmation.
  await page.getByRole('link', { name: 'API keys' }).click();
  await page.getByLabel(`Overlap for ${publicKey}`).selectOption('3600');
  await page
    .getByRole('row', { name: `Key ${publicKey}` })
    .getByRole('button', { name: 'Rotate' })
    .click();
  await page.getByText(/The replaced key stops working at/).waitFor();
  await page.getByRole('button', { name: 'I have stored it' }).click();
  const oldRow = page.getByRole('row', { name: `Key ${publicKey}` });
  await oldRow.getByText(/active \(until/).waitFor();
  // Escape and Cancel keep the key; Confirm revokes it.
  for (const how of ['Escape', 'Cancel'] as const) {
    await oldRow.getByRole('button', { name: 'Revoke' }).click();
    await cancel(await confirmation(page, `Revoke the key ${publicKey}?`, 'ios app'), how);
    assert.equal(
      (await api(page, '/api/v1/sdk/api-keys')).data.find((k: any) => k.public_key === publicKey).status,
      'active',
    );
  }
  await oldRow.getByRole('button', { name: 'Revoke' }).click();
  await (await confirmation(page, `Revoke the key ${publicKey}?`, 'ios app'))
    .getByRole('button', { name: 'Confirm' })
    .click();
  await oldRow.getByRole('cell', { name: 'revoked' }).waitFor();

  mark('Settings:');
  // Settings: a timezone change shows the rebuild it starts.
  await page.getByRole('link', { name: 'Settings' }).click();
  await page.getByRole('textbox', { name: 'Timezone', exact: true }).fill('Asia/Tokyo');
  await page.getByRole('button', { name: 'Save settings' }).click();
  await page.getByText('Saved.').waitFor();
  await page.reload();
  await page.getByText(/Rebuilding the analytics in Asia\/Tokyo/).waitFor();
  await screenshot(page, 'settings');

  mark('Members:');
  // Members: a viewer added by email.
  const viewer = `viewer-${Date.now()}@example.com`;
  assert.equal((await rig.c.post('/api/v1/auth/signup', { email: viewer, password: PASSWORD })).status, 201);
  await page.getByRole('link', { name: 'Members' }).click();
  await page.getByLabel('Member email').fill(viewer);
  await page.getByLabel('Role', { exact: true }).selectOption('viewer');
  await page.getByRole('button', { name: 'Invite' }).click();
  assert.equal(await page.getByLabel(`Role of ${viewer}`).inputValue(), 'viewer');
  await screenshot(page, 'members');
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.getByRole('button', { name: 'Sign in' }).waitFor();
  assert.equal(await page.evaluate(() => sessionStorage.getItem('console.token')), null);

  mark('viewer');
  // The viewer's view: the numbers, disabled controls, the API's 403 shown plainly.
  const vpage = await rig.open('/');
  await vpage.getByLabel('Email').fill(viewer);
  await vpage.getByLabel('Password').fill(PASSWORD);
  await vpage.getByRole('button', { name: 'Sign in' }).click();
  await assertText(
    valueOf(vpage, 'new_users'),
    formatValue('new_users', kpis.kpis.find((k: any) => k.metric === 'new_users').current),
  );
  await vpage.getByRole('link', { name: 'Members' }).click();
  await vpage.getByLabel(`Role of ${owner}`).waitFor();
  assert.equal(await vpage.getByRole('button', { name: 'Invite' }).isDisabled(), true);
  assert.equal(await vpage.getByLabel(`Role of ${owner}`).isDisabled(), true);
  assert.equal(await vpage.getByRole('button', { name: `Remove ${owner}` }).isDisabled(), true);
  await screenshot(vpage, 'members-viewer');
  await vpage.getByRole('link', { name: 'API keys' }).click();
  await vpage
    .getByRole('alert')
    .filter({ hasText: /^Forbidden: / })
    .waitFor();
  assert.equal(await vpage.getByRole('button', { name: 'Create key' }).count(), 0);
  await screenshot(vpage, 'api-keys-viewer');

  // Signup closed by a Super Admin: sign-in only.
  const rootAuth = { authorization: `Bearer ${root.body.token}` };
  assert.equal((await rig.c.put('/api/v1/admin/signup-enabled', { enabled: false }, rootAuth)).status, 200);
  const closed = await rig.open('/');
  await closed.getByText('Signup is closed').waitFor();
  assert.equal(await closed.getByRole('button', { name: 'Create account' }).count(), 0);
  assert.equal((await rig.c.put('/api/v1/admin/signup-enabled', { enabled: true }, rootAuth)).status, 200);
});

const t0 = Date.now();
const mark = (what: string) => process.env.CONSOLE_TEST_TIMES && console.log(`${what}: ${Date.now() - t0} ms`);

test('serves the console: hashed assets cached for a year, deep links fall back to index.html', async () => {
  const index = await rig.c.get('/console/');
  assert.equal(index.status, 200);
  assert.equal(index.headers.get('cache-control'), 'no-cache');
  const asset = /src="\/console\/(assets\/[^"]+\.js)"/.exec(index.text)?.[1];
  assert.ok(asset, 'index.html names its script');
  const js = await rig.c.get(`/console/${asset}`);
  assert.equal(js.status, 200);
  assert.match(js.headers.get('cache-control') ?? '', /max-age=31536000.*immutable/);
  const deep = await rig.c.get('/console/settings');
  assert.equal(deep.status, 200);
  assert.equal(deep.text, index.text);
  assert.equal((await rig.c.get('/console/assets/nope.js')).text, index.text);
  assert.equal((await fetch(`${rig.server.url}/console`, { redirect: 'manual' })).headers.get('location'), '/console/');
});

async function assertText(loc: ReturnType<Page['locator']>, expected: string) {
  await loc
    .filter({ hasText: expected })
    .waitFor()
    .catch(async () => assert.equal(await loc.textContent(), expected));
}

function addDays(date: string, n: number) {
  return new Date(Date.parse(`${date}T00:00:00Z`) + n * DAY).toISOString().slice(0, 10);
}
