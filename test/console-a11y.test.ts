import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, test } from 'node:test';
import type { Page } from 'playwright-core';
import { startFakeAdNetwork, type FakeAdNetwork } from '../tools/fake-adnetwork/server.js';
import { connect, REDIRECT_URI, setLive } from './helpers/ad-network.js';
import { blockingFindings, formatFindings } from './helpers/axe.js';
import { useConsole } from './helpers/browser.js';
import { makeEvent, type Tenant } from './helpers/client.js';

// Every console page, with data enough for its tables to render, scanned by axe-core: no critical
// or serious violation. The pages are those the navigation lists, so a new page is scanned too
// (and fails the test until it is given a "ready" condition below).
const fake: FakeAdNetwork = await startFakeAdNetwork();
const rig = useConsole({
  AD_NETWORK_REDIRECT_URI: REDIRECT_URI,
  AD_NETWORK_AUTH_URL: fake.authUrl,
  AD_NETWORK_API_URL: fake.apiUrl,
  AD_NETWORK_CLIENT_ID: fake.clientId,
  AD_NETWORK_CLIENT_SECRET: fake.clientSecret,
  ROLLUP_INTERVAL_S: '1', // the export schema is folded on this interval: the Exports page's table
});
const receiver: Server = createServer((req, res) => (req.resume(), req.on('end', () => res.end('ok'))));
after(() => Promise.all([fake?.stop(), new Promise((r) => receiver.close(r))]));

const PASSWORD = 'correct horse battery';
const found: string[] = [];
/** Scans what the page shows now; the findings are gathered so one run names them all. */
async function scan(page: Page, where: string) {
  const f = await blockingFindings(page);
  if (f.length) found.push(formatFindings(where, f));
}

/** Waits until no tile or page is still loading. */
const settled = (page: Page) => page.waitForFunction(() => !document.body.innerText.includes('Loading…'));
const table = (page: Page, name: string) => page.getByRole('region', { name, exact: true }).getByRole('table');

/** What each page shows once its data is in; extra states (a panel opened, a dialog) are scanned too. */
const READY: Record<string, (page: Page, scanAs: (where: string) => Promise<void>) => Promise<void>> = {
  Dashboard: async (page) => {
    await page.getByRole('region', { name: 'dau', exact: true }).waitFor();
    await page.getByRole('img', { name: 'Trends chart' }).locator('canvas').waitFor();
  },
  Funnels: (page) =>
    page.getByRole('region', { name: 'onboarding', exact: true }).getByRole('listitem').first().waitFor(),
  Retention: (page) => page.getByRole('table', { name: 'Retention heatmap' }).locator('tbody tr').first().waitFor(),
  Activity: (page) => page.getByText('App "A11y app" created').first().waitFor(),
  'API keys': async (page, scanAs) => {
    await page
      .getByRole('row', { name: /^Key svc_live_/ })
      .first()
      .getByRole('button', { name: 'Revoke' })
      .click();
    await page.getByRole('alertdialog').waitFor();
    await scanAs('API keys, revoke confirmation');
    await page.keyboard.press('Escape');
    await page.getByRole('alertdialog').waitFor({ state: 'detached' });
  },
  Members: (page) => page.getByRole('row', { name: /member-/ }).waitFor(),
  Experiments: async (page, scanAs) => {
    await page.getByRole('region', { name: 'All experiments' }).getByText('No experiment yet.').waitFor();
    await page.getByRole('button', { name: 'New experiment' }).click();
    await page.getByRole('form', { name: 'New experiment' }).waitFor();
    await scanAs('Experiments, the draft form');
  },
  Privacy: (page) =>
    page.getByRole('region', { name: 'Deletion requests' }).getByText('No deletion request yet.').waitFor(),
  Settings: (page) => page.getByRole('button', { name: 'Save settings' }).waitFor(),
  Content: async (page, scanAs) => {
    const kinds = [
      ['onboarding-flows', 'Onboarding flows', 'Item Welcome flow'],
      ['paywalls', 'Paywalls', 'Item Main paywall'],
      ['in-app-messages', 'In-app messages', 'Item Promo'],
      ['remote-config', 'Remote config', 'max_items'],
      ['feature-flags', 'Feature flags', 'Flag new_checkout'],
    ];
    for (const [kind, title, row] of kinds) {
      await page.getByLabel('Kind').selectOption(kind);
      await table(page, title).getByRole('row', { name: row }).waitFor();
      if (kind === 'paywalls') {
        await page.getByRole('row', { name: row }).getByRole('button', { name: 'Edit' }).click();
        await page.getByRole('region', { name: 'Editor' }).getByRole('button', { name: 'Delete' }).click();
        await page.getByRole('alertdialog').waitFor();
        await scanAs('Content, delete confirmation');
        await page.getByRole('alertdialog').getByRole('button', { name: 'Cancel' }).click();
      }
      if (kind === 'onboarding-flows') continue; // scanned as the page
      await settled(page);
      await scanAs(`Content, ${title}`);
    }
    await page.getByLabel('Kind').selectOption('onboarding-flows');
  },
  Releases: (page) => table(page, 'History').locator('tbody tr').nth(1).waitFor(),
  'Option sets': async (page, scanAs) => {
    await page.getByRole('row', { name: 'Set cities' }).waitFor();
    await scanAs('Option sets');
    await page.getByRole('button', { name: 'Open cities' }).click();
    await page.getByRole('row', { name: 'Option paris' }).waitFor();
  },
  Webhooks: async (page, scanAs) => {
    const row = page.getByRole('row', { name: /^Endpoint / });
    await row.waitFor();
    await scanAs('Webhooks');
    await row.getByRole('button', { name: 'Delete' }).click();
    await page.getByRole('alertdialog').waitFor();
    await scanAs('Webhooks, delete confirmation');
    await page.getByRole('alertdialog').getByRole('button', { name: 'Cancel' }).click();
    await row.getByRole('button', { name: 'Edit' }).click();
    await page.getByRole('form', { name: /^Edit endpoint/ }).waitFor();
    await scanAs('Webhooks, edit form');
    await page
      .getByRole('form', { name: /^Edit endpoint/ })
      .getByRole('button', { name: 'Cancel' })
      .click();
    await row.getByRole('button', { name: 'Deliveries' }).click();
    await page.getByRole('row', { name: 'Delivery webhook.test' }).waitFor();
  },
  Exports: async (page) => {
    await page.getByLabel('Export key').fill(key.public_key);
    await page.getByLabel('Export secret').fill(key.secret_key);
    await page.getByRole('button', { name: 'Use key' }).click();
    await table(page, 'Event schema').getByRole('row').nth(1).waitFor();
  },
  'Ad network': async (page, scanAs) => {
    const row = page.getByRole('row', { name: /^Account / }).first();
    await row.waitFor();
    await scanAs('Ad network');
    await row.getByRole('button', { name: 'Manage' }).click();
    await page.getByRole('row', { name: 'Campaigns Spring' }).waitFor();
  },
};

let key: Tenant['live'];

test('every console page: no critical or serious axe violation', async () => {
  const page = await rig.open('/');
  const scanAs = (where: string) => scan(page, where);

  // Sign in and first run, scanned on the way.
  await page.getByRole('button', { name: 'Create account' }).waitFor();
  await scanAs('Sign in');
  await page.getByLabel('Email').fill(`owner-${Date.now()}@example.com`);
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Create account' }).click();
  await page.getByLabel('Organization name').fill('A11y org');
  await scanAs('First run, organization');
  await page.getByRole('button', { name: 'Create organization' }).click();
  await page.getByLabel('App name').fill('A11y app');
  await scanAs('First run, app');
  await page.getByRole('button', { name: 'Create app' }).click();
  await page.getByRole('navigation', { name: 'Main' }).waitFor();

  await seed(page);
  await page.reload();

  const links = page.getByRole('navigation', { name: 'Main' }).getByRole('link');
  const labels = (await links.allTextContents()).map((s) => s.trim());
  assert.deepEqual([...labels].sort(), Object.keys(READY).sort(), 'every page in the navigation has a ready condition');
  let done = false;
  try {
    for (const label of labels) {
      const link = links.getByText(label, { exact: true });
      await link.click();
      await link.and(page.locator('[aria-current="page"]')).waitFor(); // the page shown is this one
      await page.getByRole('heading', { level: 1 }).waitFor();
      await READY[label](page, scanAs);
      await settled(page);
      await scanAs(label);
    }
    done = true;
  } finally {
    // A page that never got ready ends the test early: what was found before still shows.
    if (!done && found.length) console.log(found.join('\n\n'));
  }
  assert.equal(found.length, 0, `axe found blocking violations (see test/helpers/axe.ts):\n${found.join('\n\n')}`);
});

/** Data for every page's tables, through the API as the signed-in owner. */
async function seed(page: Page) {
  const token = (await page.evaluate(() => sessionStorage.getItem('console.token'))) ?? '';
  const pick = await page.evaluate(() => JSON.parse(localStorage.getItem('console.pick') ?? '{}'));
  const auth = { authorization: `Bearer ${token}` };
  const h = { ...auth, 'x-tenant-id': pick.orgId, 'x-app-id': pick.appId };
  const ok = async (r: Promise<{ status: number; text: string; body: any }>) => {
    const res = await r;
    assert.ok(res.status < 300, res.text);
    return res.body;
  };
  const c = rig.c;
  key = (await ok(c.post('/api/v1/sdk/api-keys', { environment: 'production', permissions: ['export_data'] }, h))).data;
  const sdk = { 'x-api-key': key.public_key };
  const pair = { ...sdk, 'x-api-secret': key.secret_key };

  // Events over a few days, folded: dashboard, funnels, retention and the export schema.
  const now = Date.now() - 60_000;
  const batch = [];
  for (let d = 0; d < 6; d++) {
    const user = { anon_id: randomUUID() };
    const at = now - (d % 3) * 86_400_000;
    for (const [i, name] of ['app_open', 'session_start', 'onboarding_flow_started', 'paywall_view'].entries())
      batch.push(makeEvent({ event_name: name, ts_ms: at + i * 1000, user }));
  }
  await ok(c.post('/api/v1/ingest/events', { batch }, sdk));
  const root = await ok(c.post('/api/v1/auth/signup', { email: 'root@example.com', password: PASSWORD }));
  const rootAuth = { authorization: `Bearer ${root.token}` };
  await ok(c.post('/api/v1/admin/analytics/rollup', {}, rootAuth));

  // A member, content of each kind (publishing makes releases), an option set, a webhook with a delivery.
  const member = `member-${Date.now()}@example.com`;
  await ok(c.post('/api/v1/auth/signup', { email: member, password: PASSWORD }));
  await ok(c.post(`/api/v1/organizations/${pick.orgId}/members`, { email: member, role: 'viewer' }, h));
  const paywall = await ok(c.post('/api/v1/paywalls', { name: 'Main paywall', plans: [{ product_id: 'pro' }] }, h));
  await ok(c.post(`/api/v1/paywalls/${paywall.data.id}/publish`, {}, h));
  await ok(c.post('/api/v1/onboarding-flows', { name: 'Welcome flow', steps: [{ id: 's1', title: 'Hi' }] }, h));
  await ok(c.post('/api/v1/in-app-messages', { name: 'Promo', content: { title: 'Sale' } }, h));
  await ok(c.put('/api/v1/remote-config', { values: { max_items: 5 } }, h));
  await ok(c.put('/api/v1/feature-flags/new_checkout', { enabled: true, rollout_pct: 50, rules: [] }, h));
  await ok(
    c.post(
      '/api/v1/sdk/option-sets/cities/sync',
      { mode: 'replace', items: [{ value: 'paris', label: 'Paris' }] },
      pair,
    ),
  );
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  const hook = await ok(c.post('/api/v1/webhooks', { url, events: ['user.identified'] }, h));
  await ok(c.post(`/api/v1/webhooks/${hook.data.id}/test`, {}, h));

  // The ad network connected, one account live, a campaign in it.
  // The owner as the ad-network helpers take it (they read its headers and app).
  const owner: Tenant = {
    token,
    userId: '',
    orgId: pick.orgId,
    appId: pick.appId,
    console: h,
    live: key,
    sandbox: key,
  };
  await connect(c, owner);
  const accounts = (await ok(c.get('/api/v1/ad-network/accounts', h))).data;
  await setLive(c, rootAuth, owner, accounts[0].id);
  await ok(
    c.post(`/api/v1/ad-network/accounts/${accounts[0].id}/campaigns`, { name: 'Spring', daily_budget_usd: 25 }, h),
  );
}
