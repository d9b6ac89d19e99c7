import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import { startFakeAdNetwork, type FakeAdNetwork } from '../tools/fake-adnetwork/server.js';
import { REDIRECT_URI, setLive, superAdmin } from './helpers/ad-network.js';
import { screenshot, useConsole } from './helpers/browser.js';
import { cancel, confirmation } from './helpers/dialog.js';
import { createTenant, makeEvent, type Tenant } from './helpers/client.js';

// Part 2 of the console through the browser: authoring and publishing each content kind, releases
// (diff, roll back), option-set search, webhooks (test event), a bulk export, the ad network chain.
// The network's fake first (top-level await), so the service starts pointed at it.
const fake: FakeAdNetwork = await startFakeAdNetwork();
const env = {
  AD_NETWORK_REDIRECT_URI: REDIRECT_URI,
  AD_NETWORK_AUTH_URL: fake.authUrl,
  AD_NETWORK_API_URL: fake.apiUrl,
  AD_NETWORK_CLIENT_ID: fake.clientId,
  AD_NETWORK_CLIENT_SECRET: fake.clientSecret,
};
const rig = useConsole(env);
after(() => fake?.stop());

let t: Tenant;
let page: Page;
const email = `author-${Date.now()}@example.com`;
const sdk = () => ({ 'x-api-key': t.live.public_key });
const pair = () => ({ 'x-api-key': t.live.public_key, 'x-api-secret': t.live.secret_key });
const bundle = async () => {
  const r = await rig.c.get('/api/v1/sdk/config-bundle', sdk());
  assert.equal(r.status, 200, r.text);
  return r.body.data;
};
/** Polls a condition with a deadline (the UI is awaited with locators; this is for the API side). */
async function until<T>(what: string, f: () => Promise<T | undefined | false>, ms = 15_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setImmediate(r));
  }
}
const nav = (name: string) =>
  page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name, exact: true }).click();

describe('console part 2', () => {
  before(async () => {
    t = await createTenant(rig.c, { email });
    page = await rig.open('/');
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill('correct horse battery');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('link', { name: 'Content' }).waitFor();
  });

  test('author and publish each content kind, read back from the bundle', async () => {
    await nav('Content');
    const editor = page.getByRole('region', { name: 'Editor' });
    const kinds = [
      [
        'onboarding-flows',
        'Onboarding flows',
        'Welcome flow',
        { steps: [{ id: 's1', title: 'Hi' }], settings: { skippable: true } },
      ],
      [
        'paywalls',
        'Paywalls',
        'Main paywall',
        { plans: [{ product_id: 'pro_month' }], layout: { theme: 'dark' }, cta: { text: 'Start' } },
      ],
      [
        'in-app-messages',
        'In-app messages',
        'Promo',
        { content: { title: 'Sale' }, trigger_rules: { event: 'app_open' }, audience: {} },
      ],
    ] as const;
    for (const [value, label, name, def] of kinds) {
      await page.getByLabel('Kind').selectOption({ label }); // by its visible name
      await page.getByRole('button', { name: /^New / }).click();
      await editor.getByLabel('Name', { exact: true }).fill(name);
      await editor.getByLabel(/^Definition/).fill(JSON.stringify(def));
      await editor.getByRole('button', { name: 'Save' }).click();
      await editor.getByLabel('State').filter({ hasText: 'saved (draft)' }).waitFor();
      await editor.getByRole('button', { name: 'Publish' }).click();
      await editor
        .getByLabel('State')
        .filter({ hasText: /published \(bundle version \d+\)/ })
        .waitFor();
      const row = page.getByRole('row', { name: `Item ${name}` });
      await row.getByText(/in version \d+ \(served now\)/).waitFor(); // the list follows while the editor is open
      if (value === 'paywalls') await screenshot(page, 'content');
      await editor.getByRole('button', { name: 'Close' }).click();
      await row.getByText('published').waitFor();
    }

    // A server validation error lands on its field: a name over 200 characters.
    await page.getByRole('button', { name: /^New / }).click();
    await editor.getByLabel('Name', { exact: true }).fill('x'.repeat(201));
    await editor.getByRole('button', { name: 'Save' }).click();
    await editor.locator('label', { hasText: 'Name' }).getByRole('alert').filter({ hasText: 'name' }).waitFor();
    await editor.getByRole('button', { name: 'Close' }).click();

    await page.getByLabel('Kind').selectOption('remote-config');
    await page.getByLabel('Values (JSON object)').fill(JSON.stringify({ max_items: 5, welcome_text: 'Hello' }));
    await page.getByRole('button', { name: 'Publish' }).click();
    await page.getByRole('cell', { name: 'welcome_text' }).waitFor();

    await page.getByLabel('Kind').selectOption('feature-flags');
    await page.getByLabel('Flag key').fill('new_checkout');
    await page.getByLabel('Rollout %').fill('50');
    // An operator outside the SDK's rule language: the server's message is shown on the rules field.
    await page
      .getByLabel('Targeting rules (JSON)')
      .fill(JSON.stringify([{ attribute: 'country', op: 'bogus', value: 'US' }]));
    await page.getByRole('button', { name: 'Publish' }).click();
    await page.locator('label', { hasText: 'Targeting rules' }).getByRole('alert').waitFor();
    await page
      .getByLabel('Targeting rules (JSON)')
      .fill(JSON.stringify([{ attribute: 'country', op: 'in', values: ['US', 'DE'] }]));
    await page.getByRole('button', { name: 'Publish' }).click();
    await page.getByRole('row', { name: 'Flag new_checkout' }).waitFor();

    const b = await bundle();
    const names = (section: Record<string, { name?: string }>) => Object.values(section).map((x) => x.name);
    assert.deepEqual(names(b.content.onboarding_flows), ['Welcome flow']);
    assert.deepEqual(names(b.content.paywalls), ['Main paywall']);
    assert.deepEqual(names(b.content.in_app_messages), ['Promo']);
    assert.deepEqual(b.content.remote_config, { max_items: 5, welcome_text: 'Hello' });
    assert.equal(b.content.feature_flags.new_checkout.rollout_pct, 50);
  });

  test('releases: diff two versions, roll back, the bundle version moves', async () => {
    const before = (await bundle()).bundle_version;
    await nav('Releases');
    await page
      .getByLabel('Current version')
      .filter({ hasText: `version ${before}` })
      .waitFor();
    const compare = page.getByRole('region', { name: 'Compare versions' });
    await compare.getByLabel('From version').selectOption(String(before - 1));
    await compare.getByLabel('To version').selectOption(String(before));
    await compare.getByRole('list', { name: 'Changes' }).getByText('added: feature_flags').waitFor();
    await screenshot(page, 'releases');

    // Back to the version before the flows: the confirmation names what goes away.
    const first = (await rig.c.get('/api/v1/sdk/config-bundle/history?limit=100', t.console)).body.data.at(-1)
      .bundle_version as number;
    await page.getByRole('button', { name: `Roll back to version ${first}`, exact: true }).click();
    const confirm = page.getByRole('region', { name: 'Confirm roll back' });
    await confirm.getByText('removed: paywalls').waitFor();
    await screenshot(page, 'releases-rollback');
    await confirm.getByRole('button', { name: 'Roll back' }).click();
    await page
      .getByLabel('Current version')
      .filter({ hasText: `version ${before + 1}` })
      .waitFor();
    const b = await bundle();
    assert.equal(b.bundle_version, before + 1);
    assert.deepEqual(b.content.paywalls, {});
  });

  test('option sets: a set synced through the API, an accented item found unaccented', async () => {
    const items = [
      { value: 'zurich', label: 'Zürich' },
      { value: 'sao_paulo', label: 'São Paulo' },
      { value: 'paris', label: 'Paris' },
    ];
    const sync = async (list: { value: string; label: string }[]) => {
      const r = await rig.c.post('/api/v1/sdk/option-sets/cities/sync', { mode: 'replace', items: list }, pair());
      assert.equal(r.status, 200, r.text);
    };
    await sync([...items, { value: 'lyon', label: 'Lyon' }]);
    await sync(items); // replace: lyon archived
    await nav('Option sets');
    await page.getByRole('button', { name: 'Open cities' }).click();
    await page.getByRole('region', { name: 'Archived items' }).getByText('lyon').waitFor();
    assert.equal(await page.getByRole('region', { name: 'Sync history' }).getByRole('listitem').count(), 2);
    await page.getByRole('row', { name: 'Option paris' }).waitFor();
    await page.getByLabel('Search').fill('sao paulo');
    await page.getByRole('row', { name: 'Option paris' }).waitFor({ state: 'detached' });
    await page.getByRole('row', { name: 'Option sao_paulo' }).waitFor();
    assert.equal(await page.getByRole('row', { name: /^Option / }).count(), 1);
    await screenshot(page, 'option-sets');
  });

  test('webhooks: an endpoint to a local receiver, a test event in the delivery log', async () => {
    const got: string[] = [];
    const receiver: Server = createServer((req, res) => {
      let body = '';
      req.on('data', (d) => (body += d));
      req.on('end', () => (got.push(body), res.end('ok')));
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    try {
      const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
      await nav('Webhooks');
      await page.getByLabel('Endpoint URL').fill(url);
      await page.getByRole('button', { name: 'Create endpoint' }).click();
      assert.match((await page.getByLabel('Secret', { exact: true }).textContent())!, /^whsec_/);
      await page.getByRole('button', { name: 'Send test event' }).click();
      await page.getByRole('row', { name: 'Delivery webhook.test' }).getByRole('cell', { name: 'succeeded' }).waitFor();
      assert.equal(JSON.parse(got[0]).type, 'webhook.test');
      await screenshot(page, 'webhooks');

      // Edit: the server's validation on the field it concerns, then a new URL and events saved.
      const row = page.getByRole('row', { name: `Endpoint ${url}` });
      await row.getByRole('button', { name: 'Edit' }).click();
      const form = page.getByRole('form', { name: `Edit endpoint ${url}` });
      const urlField = form.getByRole('textbox'); // its name grows with the error shown in its label
      assert.equal(await urlField.evaluate((e) => e === document.activeElement), true, 'focus on the URL field');
      await urlField.fill('not a url');
      await form.getByRole('button', { name: 'Save' }).click();
      await form
        .locator('label', { hasText: 'URL' })
        .getByRole('alert')
        .filter({ hasText: /^url: / })
        .waitFor();
      assert.equal(await urlField.getAttribute('aria-invalid'), 'true');
      await urlField.fill(`${url}2`);
      await form.getByLabel('onboarding.started').uncheck();
      await form.getByRole('button', { name: 'Save' }).click();
      await form
        .getByRole('group', { name: 'Events' })
        .getByRole('alert')
        .filter({ hasText: /^events/ })
        .waitFor();
      await form.getByLabel('user.identified').check();
      await form.getByLabel('onboarding.completed').check();
      await form.getByRole('button', { name: 'Save' }).click();
      await form.waitFor({ state: 'detached' });
      const edited = page.getByRole('row', { name: `Endpoint ${url}2` });
      await edited.getByRole('cell', { name: 'onboarding.completed, user.identified' }).waitFor();
      const hooks = (await rig.c.get('/api/v1/webhooks', t.console)).body.data;
      assert.deepEqual(
        hooks.map((w: { url: string; events: string[] }) => [w.url, [...w.events].sort()]),
        [[`${url}2`, ['onboarding.completed', 'user.identified']]],
      );

      // Delete asks first, naming the endpoint: Escape and Cancel keep it, Confirm deletes it.
      for (const how of ['Escape', 'Cancel'] as const) {
        await edited.getByRole('button', { name: 'Delete' }).click();
        await cancel(await confirmation(page, `Delete the endpoint ${url}2?`, `${url}2`), how);
      }
      assert.equal((await rig.c.get(`/api/v1/webhooks/${hooks[0].id}`, t.console)).status, 200);
      await edited.getByRole('button', { name: 'Delete' }).click();
      const dialog = await confirmation(page, `Delete the endpoint ${url}2?`, `${url}2`);
      await screenshot(page, 'webhooks-delete');
      await dialog.getByRole('button', { name: 'Confirm' }).click();
      await edited.waitFor({ state: 'detached' });
      assert.equal((await rig.c.get(`/api/v1/webhooks/${hooks[0].id}`, t.console)).status, 404);
    } finally {
      await new Promise((r) => receiver.close(r));
    }
  });

  test('exports: a bulk export run to completion and downloaded', async () => {
    const events = [
      makeEvent({ event_name: 'app_open' }),
      makeEvent({ event_name: 'paywall_view', properties: { placement: 'home' } }),
    ];
    const ing = await rig.c.post('/api/v1/ingest/events', { batch: events }, sdk());
    assert.ok(ing.status < 300, ing.text);
    await nav('Exports');
    await page.getByLabel('Export key').fill(t.live.public_key);
    await page.getByLabel('Export secret').fill(t.live.secret_key);
    await page.getByRole('button', { name: 'Use key' }).click();
    // The events are stored asynchronously: export once the API's own export sees both.
    await until('ingested events', async () => {
      const r = await rig.c.get(
        `/api/v1/sdk/events/export?start_date=${new Date(Date.now() - 86_400_000).toISOString()}&end_date=${new Date(Date.now() + 60_000).toISOString()}`,
        pair(),
      );
      return r.status === 200 && r.body.data.length === 2;
    });
    await page.getByRole('button', { name: 'Start export' }).click();
    await page.getByLabel('Export status').filter({ hasText: 'completed' }).waitFor({ timeout: 30_000 });
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('button', { name: 'Download' }).click(),
    ]);
    const file = await download.path();
    const { readFileSync } = await import('node:fs');
    const rows = JSON.parse(readFileSync(file, 'utf8'));
    assert.deepEqual(rows.map((e: { event_name: string }) => e.event_name).sort(), ['app_open', 'paywall_view']);
    await screenshot(page, 'exports');
  });

  test('ad network: connect against the fake, then campaign, ad squad, media, creative and ad', async () => {
    // The network sends the browser to the configured redirect URI: here, the console's page.
    await page.route('https://console.example.com/**', (route) => {
      const q = new URL(route.request().url()).search;
      return route.fulfill({ status: 302, headers: { location: `${rig.server.url}/console/ad-network${q}` } });
    });
    await nav('Ad network');
    await page.getByRole('button', { name: 'Connect' }).click();
    await page
      .getByLabel('Connection status')
      .filter({ hasText: /^connected$/ })
      .waitFor();
    const usd = fake.accounts.usd;
    await setLive(rig.c, await superAdmin(rig.c), t, usd);
    await page.reload();
    const acct = (await rig.c.get('/api/v1/ad-network/accounts', t.console)).body.data.find(
      (a: { id: string }) => a.id === usd,
    );
    const row = page.getByRole('row', { name: `Account ${acct.name}` });
    await row.getByText('live: writes reach the network').waitFor();
    await row.getByRole('button', { name: 'Manage' }).click();

    await page.getByLabel('Campaign name').fill('Spring');
    await page.getByLabel('Daily budget (USD)').first().fill('25');
    await page.getByRole('button', { name: 'Create campaign' }).click();
    await page.getByRole('row', { name: 'Campaigns Spring' }).waitFor();
    const squads = page.getByRole('form', { name: 'Create ad squad' });
    await squads.getByLabel('Ad squad name').fill('US squad');
    await squads.getByLabel('Daily budget (USD)').fill('10');
    await squads.getByRole('button', { name: 'Create ad squad' }).click();
    await page.getByRole('row', { name: 'Ad squads US squad' }).waitFor();
    await page.getByLabel('Media name').fill('Hero');
    await page
      .getByLabel('Media file')
      .setInputFiles({ name: 'hero.png', mimeType: 'image/png', buffer: Buffer.alloc(64, 1) });
    await page.getByRole('button', { name: 'Upload media' }).click();
    await page.getByRole('row', { name: 'Media Hero' }).waitFor();
    await page.getByLabel('Creative name').fill('Hero creative');
    await page.getByLabel('Headline').fill('Try it');
    await page.getByLabel('Brand name').fill('Acme');
    await page.getByLabel('Profile id').fill('profile-1');
    await page.getByRole('button', { name: 'Create creative' }).click();
    await page.getByRole('row', { name: 'Creatives Hero creative' }).waitFor();
    await page.getByLabel('Ad name', { exact: true }).fill('Hero ad');
    await page.getByRole('button', { name: 'Create ad', exact: true }).click();
    await page.getByRole('row', { name: 'Ads Hero ad' }).waitFor();
    // An experiment over that creative, its per-variant results, and the account's stats pulled now.
    await page.getByLabel('Experiment name').fill('Hero test');
    await page.getByLabel('Daily budget per variant (USD)').fill('5');
    await page.getByRole('button', { name: 'Start experiment' }).click();
    await page.getByRole('row', { name: 'Experiment Hero test' }).getByRole('button', { name: 'Results' }).click();
    await page.getByRole('row', { name: 'Variant Control' }).waitFor();
    await page.getByRole('row', { name: 'Variant Treatment' }).waitFor();
    const [pulled] = await Promise.all([
      page.waitForResponse((r) => r.url().endsWith('/stats/pull')),
      page.getByRole('button', { name: 'Pull stats now' }).click(),
    ]);
    assert.equal(pulled.status(), 200, await pulled.text());
    const stats = page.getByRole('region', { name: 'Stats' });
    if ((await pulled.json()).data.rows > 0) await stats.getByRole('img', { name: 'Spend (USD) per day' }).waitFor();
    else await stats.getByText('No stats stored').waitFor();
    await screenshot(page, 'ad-network');

    const posts = fake.world.requests.filter((r) => r.method === 'POST').map((r) => r.path);
    for (const re of [/campaigns$/, /adsquads$/, /media$/, /creatives$/, /ads$/])
      assert.ok(
        posts.some((p) => re.test(p)),
        `${re} reached the network`,
      );
  });

  test('content: unpublish and delete ask first, naming the item; Cancel keeps it', async () => {
    const created = await rig.c.post(
      '/api/v1/in-app-messages',
      { name: 'Spring sale', content: { title: 'Sale' } },
      t.console,
    );
    assert.equal(created.status, 201, created.text);
    const id = created.body.data.id as string;
    assert.equal((await rig.c.post(`/api/v1/in-app-messages/${id}/publish`, {}, t.console)).status, 200);
    const status = async () => (await rig.c.get(`/api/v1/in-app-messages/${id}`, t.console)).body.data?.status;
    await nav('Content');
    await page.getByLabel('Kind').selectOption('in-app-messages');
    const row = page.getByRole('row', { name: 'Item Spring sale' });
    await row.getByRole('button', { name: 'Edit' }).click();
    const editor = page.getByRole('region', { name: 'Editor' });

    await editor.getByRole('button', { name: 'Unpublish' }).click();
    await cancel(await confirmation(page, 'Unpublish "Spring sale"?', 'goes back to draft'));
    assert.equal(await status(), 'published');
    await editor.getByRole('button', { name: 'Unpublish' }).click();
    await (await confirmation(page, 'Unpublish "Spring sale"?', 'Spring sale'))
      .getByRole('button', { name: 'Confirm' })
      .click();
    await editor
      .getByLabel('State')
      .filter({ hasText: /^draft \(bundle version \d+\)/ })
      .waitFor();
    assert.equal(await status(), 'draft');

    await editor.getByRole('button', { name: 'Delete' }).click();
    await cancel(await confirmation(page, 'Delete "Spring sale"?', 'deleted for good'), 'Escape');
    await row.waitFor();
    assert.equal(await status(), 'draft');
    await editor.getByRole('button', { name: 'Delete' }).click();
    await (await confirmation(page, 'Delete "Spring sale"?', 'Spring sale'))
      .getByRole('button', { name: 'Confirm' })
      .click();
    await row.waitFor({ state: 'detached' });
    assert.equal((await rig.c.get(`/api/v1/in-app-messages/${id}`, t.console)).status, 404);

    // A feature flag's delete too.
    await page.getByLabel('Kind').selectOption('feature-flags');
    const flag = page.getByRole('row', { name: 'Flag new_checkout' });
    await flag.getByRole('button', { name: 'Delete' }).click();
    await cancel(await confirmation(page, 'Delete the flag new_checkout?', 'new_checkout'));
    assert.equal((await rig.c.get('/api/v1/feature-flags/new_checkout', t.console)).status, 200);
    await flag.getByRole('button', { name: 'Delete' }).click();
    await (await confirmation(page, 'Delete the flag new_checkout?', 'new_checkout'))
      .getByRole('button', { name: 'Confirm' })
      .click();
    await flag.waitFor({ state: 'detached' });
    assert.equal((await rig.c.get('/api/v1/feature-flags/new_checkout', t.console)).status, 404);
  });
});
