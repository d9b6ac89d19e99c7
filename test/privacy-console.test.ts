import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { screenshot, useConsole } from './helpers/browser.js';
import { createTenant, makeEvent } from './helpers/client.js';

// Issue 36's Privacy page: an admin requests an erasure, follows it to its verified receipt, and lifts
// the suppression it made.
const rig = useConsole({ KEY_CACHE_TTL_MS: '300' });

describe('console: privacy', () => {
  test('request a deletion, read its receipt, lift the suppression', { timeout: 180_000 }, async () => {
    const email = `dpo-${Date.now()}@example.com`;
    const t = await createTenant(rig.c, { email });
    const batch = [1, 2, 3].map(() => makeEvent({ user: { anon_id: crypto.randomUUID(), user_id: 'erase-me' } }));
    const r = await rig.c.post('/api/v1/ingest/events', { batch }, { 'x-api-key': t.live.public_key });
    assert.equal(r.status, 202, r.text);

    const page = await rig.open('/');
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill('correct horse battery');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Privacy', exact: true }).click();
    await page.getByLabel(/People to erase/).fill('erase-me');
    await page.getByRole('button', { name: 'Request deletion' }).click();
    const requests = page.getByRole('region', { name: 'Deletion requests' });
    // The page follows the request until it ends.
    await requests.getByText('done (verified)').waitFor({ timeout: 120_000 });
    await requests.getByText(/events 3/).waitFor();
    await screenshot(page, 'privacy');

    const suppressed = page.getByRole('region', { name: 'Suppressed subjects' });
    await suppressed.getByRole('button', { name: 'Lift' }).click();
    await suppressed.getByText('Nobody is suppressed.').waitFor();
    const left = await rig.c.get('/api/v1/privacy/suppressions', t.console);
    assert.equal(left.body.data.length, 0);
  });
});
