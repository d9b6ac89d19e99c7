import assert from 'node:assert/strict';
import { test } from 'node:test';
import { useConsole } from './helpers/browser.js';

const rig = useConsole();

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
  const missingAsset = await rig.c.get('/console/assets/nope.js');
  assert.equal(missingAsset.text, index.text);
  assert.equal((await rig.c.get('/console/../package.json')).status, 404);
});

test('sign up, first run (organization, app), sign out and back in', async () => {
  const page = await rig.open('/');
  const email = `shell-${Date.now()}@example.com`;
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill('correct horse battery');
  await page.getByRole('button', { name: 'Create account' }).click();
  await page.getByLabel('Organization name').fill('Acme');
  await page.getByRole('button', { name: 'Create organization' }).click();
  await page.getByLabel('App name').fill('Acme iOS');
  await page.getByRole('button', { name: 'Create app' }).click();
  await page.getByRole('link', { name: 'Activity' }).click();
  await page.getByText('App "Acme iOS" created').waitFor();
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.getByLabel('Password').fill('correct horse battery');
  await page.getByLabel('Email').fill(email);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('link', { name: 'Dashboard' }).waitFor();
  assert.equal(await page.getByRole('combobox', { name: 'App', exact: true }).locator('option:checked').textContent(), 'Acme iOS');
});
