import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import murmur from 'murmurhash3js';
import { useCrossOriginRig } from './helpers/browser.js';
import { createTenant, type Tenant } from './helpers/client.js';
import { startReactPage } from './helpers/react-page.js';

// @mobile-sdk-backend/react in Chromium: a page (its own origin; CORS allows it) renders a component
// using useFlag and useExperiment with the browser client against the real service, and re-renders
// when a publish reaches it through the config stream.
let t: Tenant;
declare const sdkReady: Promise<string>;

const VARIANTS = [
  { key: 'control', weight: 50, value: 'monthly_first' },
  { key: 'annual_first', weight: 50, value: 'annual_first' },
];

async function ok(r: Promise<{ status: number; text: string; body: any }>, status = 200) {
  const a = await r;
  assert.equal(a.status, status, a.text);
  return a.body;
}

describe('react bindings in Chromium', () => {
  const rig = useCrossOriginRig(startReactPage);
  before(async () => {
    t = await createTenant(rig.c);
  });

  it('renders the flag and the assigned variant, and re-renders after a publish', async () => {
    await ok(rig.c.put('/api/v1/feature-flags/new_checkout', { enabled: true }, t.console));
    const body = { key: 'layout_test', name: 'Layout', variants: VARIANTS, primary_metric: 'trial_started' };
    const x = await ok(rig.c.post('/api/v1/experiments', body, t.console), 201);
    await ok(rig.c.post(`/api/v1/experiments/${x.data.id}/start`, {}, t.console));

    const page = await (await rig.browser.newContext()).newPage();
    page.setDefaultTimeout(15_000);
    await page.goto(`${rig.site.url}/?key=${t.live.public_key}&api=${encodeURIComponent(rig.server.url)}`);
    const anon = await page.evaluate(() => sdkReady);
    // The assignment computed apart (the service's murmur library): bucket < 5000 is control.
    const v = VARIANTS[murmur.x86.hash32(`${anon}:layout_test`) % 10_000 < 5000 ? 0 : 1];
    const out = page.locator('#out');
    await out.filter({ hasText: `flag:true exp:${v.key}/${v.value}` }).waitFor();

    await ok(rig.c.put('/api/v1/feature-flags/new_checkout', { enabled: false }, t.console));
    await out.filter({ hasText: `flag:false exp:${v.key}/${v.value}` }).waitFor();
    await ok(
      rig.c.post(
        `/api/v1/experiments/${x.data.id}/ship`,
        { variant: 'annual_first', acknowledge_srm: true },
        t.console,
      ),
    );
    await out.filter({ hasText: 'flag:false exp:annual_first/annual_first' }).waitFor();
    assert.equal(await out.textContent(), 'flag:false exp:annual_first/annual_first');
  });
});
