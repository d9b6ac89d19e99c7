import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Page, Request } from 'playwright-core';
import { createTenant } from './helpers/client.js';
import { useConsole } from './helpers/browser.js';

// A first load of an analytics page, signed in with an org and app picked before (both in
// storage): the page's queries go out beside /me, not after it answers; a pick that is no longer
// valid or a token that is, still end where /me says.
const rig = useConsole();

/** A new tab of a signed-in user at `to`, with `pick` as the org/app chosen last time. */
async function openSignedIn(token: string, pick: { orgId: string; appId: string }, to: string, hold?: HoldMe) {
  const ctx = await rig.newContext();
  await ctx.addInitScript(
    ([t, p]) => {
      sessionStorage.setItem('console.token', t);
      localStorage.setItem('console.pick', p);
    },
    [token, JSON.stringify(pick)],
  );
  const page = await ctx.newPage();
  page.setDefaultTimeout(15_000);
  if (hold) await hold.install(page);
  await page.goto(`${rig.server.url}/console${to}`);
  return page;
}

/**
 * Holds the /me call until the page has sent `expected` analytics calls (or 5 s passed), so what
 * went out before /me answered is known for sure.
 */
class HoldMe {
  readonly sent: Request[] = [];
  sentBeforeMe: string[] = [];
  constructor(private readonly expected: number) {}
  async install(page: Page) {
    let enough!: () => void;
    const seen = new Promise<void>((r) => (enough = r));
    page.on('request', (r) => {
      if (!r.url().includes('/api/v1/analytics/')) return;
      this.sent.push(r);
      if (this.sent.length >= this.expected) enough();
    });
    await page.route('**/api/v1/me', async (route) => {
      await Promise.race([seen, new Promise((r) => setTimeout(r, 5000))]);
      this.sentBeforeMe = this.sent.map((r) => new URL(r.url()).pathname);
      await route.continue();
    });
  }
}

const notBusy = (page: Page) => page.waitForFunction(() => !document.querySelector('[aria-busy="true"]'));

test('a first load of the dashboard and the funnels sends their queries beside /me, for the app picked', async () => {
  const t = await createTenant(rig.c);
  const pick = { orgId: t.orgId, appId: t.appId };

  const dash = new HoldMe(3);
  const page = await openSignedIn(t.token, pick, '/', dash);
  await page.getByRole('region', { name: 'dau', exact: true }).waitFor();
  await notBusy(page);
  assert.deepEqual(dash.sentBeforeMe.sort(), [
    '/api/v1/analytics/activity',
    '/api/v1/analytics/kpis',
    '/api/v1/analytics/kpis/timeseries',
  ]);
  for (const r of dash.sent) {
    assert.equal(r.headers()['x-tenant-id'], t.orgId);
    assert.equal(r.headers()['x-app-id'], t.appId);
  }
  // Answered before the page rendered, read by it: not asked twice.
  assert.equal(dash.sent.length, 3);
  assert.equal(await page.getByRole('alert').count(), 0);

  // The funnels: the list, then each funnel, all before /me answers.
  const funnels = new HoldMe(10);
  const fpage = await openSignedIn(t.token, pick, '/funnels', funnels);
  await fpage.getByRole('region', { name: 'onboarding', exact: true }).waitFor();
  await notBusy(fpage);
  assert.equal(funnels.sentBeforeMe.length, 10);
  assert.equal(funnels.sentBeforeMe.filter((p) => p.startsWith('/api/v1/analytics/funnel/')).length, 9);
  assert.equal(funnels.sent.length, 10);
  await page.context().close();
  await fpage.context().close();
});

test('a saved pick of an app the user is not in: the dashboard of the app /me offers; a bad token: sign-in', async () => {
  const [mine, theirs] = await Promise.all([createTenant(rig.c), createTenant(rig.c)]);
  const page = await openSignedIn(mine.token, { orgId: theirs.orgId, appId: theirs.appId }, '/');
  await page.getByRole('region', { name: 'dau', exact: true }).waitFor();
  await notBusy(page);
  // The early calls for the other org were refused (403); none of it shows on the page.
  assert.equal(await page.getByRole('alert').count(), 0);
  assert.equal(await page.getByLabel('Organization').inputValue(), mine.orgId);

  const signedOut = await openSignedIn('not-a-token', { orgId: mine.orgId, appId: mine.appId }, '/');
  await signedOut.getByRole('button', { name: 'Sign in' }).waitFor();
  assert.equal(await signedOut.evaluate(() => sessionStorage.getItem('console.token')), null);
  await page.context().close();
  await signedOut.context().close();
});
