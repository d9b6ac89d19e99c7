import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Page, Response } from 'playwright-core';
import { screenshot, useConsole } from './helpers/browser.js';
import { createTenant, type Tenant } from './helpers/client.js';

// The console keeps its sign-in alive by itself (a refresh before the ID token expires, and a 401
// renewed and retried once), without remounting the page being edited; when the sign-in ends under
// the user, the page and its draft stay under a sign-in dialog (docs/auth.md).
const TTL_S = 6;
const rig = useConsole({ TOKEN_TTL_S: String(TTL_S) });
const PASSWORD = 'correct horse battery';

const renewed = (page: Page, status = 200) =>
  page.waitForResponse((r: Response) => r.url().endsWith('/api/v1/auth/refresh') && r.status() === status, {
    timeout: TTL_S * 3000,
  });
const stored = (page: Page) => page.evaluate(() => sessionStorage.getItem('console.token'));

describe('console session', () => {
  let t: Tenant;
  let page: Page;
  /** The ID token of the sign-in: expired once the first test has seen two renewals. */
  let first: string;
  const email = `session-${Date.now()}@example.com`;

  test('renews its token by itself; the paywall draft stays, survives an ended sign-in, and saves', async () => {
    t = await createTenant(rig.c, { email });
    page = await rig.open('/');
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Content' }).click();
    first = (await stored(page))!;
    assert.ok(first);

    // A paywall draft, not saved.
    const editor = page.getByRole('region', { name: 'Editor' });
    await page.getByLabel('Kind').selectOption({ label: 'Paywalls' });
    await page.getByRole('button', { name: /^New / }).click();
    const name = editor.getByLabel('Name', { exact: true });
    await name.fill('Spring paywall');
    await editor.getByLabel(/^Definition/).fill(JSON.stringify({ plans: [{ product_id: 'pro_year' }] }));

    // Two renewals: by then the first token has expired (6 s), and the page was never left.
    await renewed(page);
    await renewed(page);
    assert.notEqual(await stored(page), first);
    const old = await rig.c.get('/api/v1/me', { authorization: `Bearer ${first}` });
    assert.equal(old.status, 401, 'the token signed in with has expired');
    assert.equal(await name.inputValue(), 'Spring paywall');
    assert.equal(await page.getByRole('heading', { name: 'Sign in' }).count(), 0);
    await editor.getByRole('button', { name: 'Save' }).click();
    await editor.getByLabel('State').filter({ hasText: 'saved (draft)' }).waitFor();

    // The sign-in ends under the user (revoked elsewhere): the next renewal is refused, and the
    // page stays, with an edit not saved yet, under a sign-in dialog.
    await name.fill('Spring paywall v2');
    const cookie = (await page.context().cookies()).find((k) => k.name === 'refresh_token');
    assert.ok(cookie?.httpOnly, 'the refresh cookie is HttpOnly');
    const out = await rig.c.post('/api/v1/auth/logout', undefined, { cookie: `refresh_token=${cookie.value}` });
    assert.equal(out.status, 204);
    await renewed(page, 401);
    const dialog = page.getByRole('dialog', { name: 'Your session ended' });
    await dialog.waitFor();
    await screenshot(page, 'session-ended');
    assert.equal(await name.inputValue(), 'Spring paywall v2');
    assert.equal(await dialog.getByLabel('Email').inputValue(), email, 'the email is filled in');
    await dialog.getByLabel('Password').fill(PASSWORD);
    await dialog.getByRole('button', { name: 'Sign in' }).click();
    await dialog.waitFor({ state: 'hidden' });
    assert.equal(await name.inputValue(), 'Spring paywall v2', 'back to the draft as it was');
    await editor.getByRole('button', { name: 'Save' }).click();
    await editor.getByLabel('State').filter({ hasText: 'saved (draft)' }).waitFor();
    // The tenant's own token has expired too (6 s): a new one to read the list.
    const token = (await rig.c.post('/api/v1/auth/login', { email, password: PASSWORD })).body.token;
    const list = await rig.c.get('/api/v1/paywalls', { ...t.console, authorization: `Bearer ${token}` });
    assert.equal(list.status, 200, list.text);
    assert.deepEqual(
      list.body.data.map((p: { name: string }) => p.name),
      ['Spring paywall v2'],
      'the edit made before the sign-in ended is what was saved',
    );
  });

  test('a call answered 401 (an expired token, the timer not due) is renewed and retried once', async () => {
    // The expired token back in the tab, its renewal not due for an hour: only a 401 can start one.
    await page.evaluate((token) => {
      sessionStorage.setItem('console.token', token);
      sessionStorage.setItem('console.token.exp', String(Date.now() + 3600_000));
      sessionStorage.setItem('console.token.ttl', '4500');
    }, first);
    const renewal = renewed(page);
    await page.reload();
    await renewal;
    await page.getByLabel('Kind').selectOption({ label: 'Paywalls' });
    await page.getByRole('row', { name: 'Item Spring paywall v2' }).waitFor();
    assert.equal(await page.getByRole('heading', { name: 'Sign in' }).count(), 0);
  });
});
