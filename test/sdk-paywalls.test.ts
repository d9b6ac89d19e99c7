import assert from 'node:assert/strict';
import murmur from 'murmurhash3js';
import { before, describe, it } from 'node:test';
import { createClient, memoryStorage } from '../packages/sdk/src/index.js';
import { paywall } from '../packages/sdk/src/paywalls.js';
import { useTenantApp } from './helpers/suite.js';
import { deviceEvents } from './helpers/client.js';

// The paywall runtime (issue 34 §4) with paywalls and an experiment made through the API: the SDK
// downloads them in the bundle, and the events it tracks are read back through the export API.
const suite = useTenantApp();
const device = { platform: 'ios', os: '17.4', appVersion: '3.1.0', locale: 'en_US', country: 'US' } as const;
const ids: Record<'a' | 'b' | 'c' | 'lone', string> = { a: '', b: '', c: '', lone: '' };

/** The paywall_q4 split of the published vectors, computed apart: bucket < 5000 is control. */
const inControl = (unit: string) => murmur.x86.hash32(`${unit}:paywall_q4`) % 10_000 < 5000;

async function publishPaywall(name: string): Promise<string> {
  const p = await suite.c.post(
    '/api/v1/paywalls',
    { name, plans: [{ product_id: `${name}_annual` }] },
    suite.t.console,
  );
  assert.equal(p.status, 201, p.text);
  const r = await suite.c.post(`/api/v1/paywalls/${p.body.data.id}/publish`, {}, suite.t.console);
  assert.equal(r.status, 200, r.text);
  return p.body.data.id;
}

async function experiment(key: string, control: string, other: string, ship = false) {
  const variants = [
    { key: 'control', weight: 50, value: { paywall_id: control } },
    { key: 'annual_first', weight: 50, value: { paywall_id: other } },
  ];
  const x = await suite.c.post(
    '/api/v1/experiments',
    { key, name: key, variants, primary_metric: 'trial_started' },
    suite.t.console,
  );
  assert.equal(x.status, 201, x.text);
  const s = await suite.c.post(`/api/v1/experiments/${x.body.data.id}/start`, {}, suite.t.console);
  assert.equal(s.status, 200, s.text);
  if (ship) {
    const r = await suite.c.post(
      `/api/v1/experiments/${x.body.data.id}/ship`,
      { variant: 'annual_first', acknowledge_srm: true },
      suite.t.console,
    );
    assert.equal(r.status, 200, r.text);
  }
}

const stored = (anon: string) => deviceEvents(suite.c, suite.t.live.public_key, anon);

const sdk = () =>
  createClient({
    apiKey: suite.t.live.public_key,
    baseUrl: suite.server.url,
    storage: memoryStorage(),
    device,
    stream: false,
    lifecycle: false,
  });

describe('sdk paywall runtime', () => {
  before(async () => {
    for (const k of Object.keys(ids) as (keyof typeof ids)[]) ids[k] = await publishPaywall(`pw_${k}`);
    await experiment('paywall_q4', ids.a, ids.b);
    await experiment('shipped_pw', ids.c, ids.a, true);
  });

  it('a placement asking for A gets the assigned variant; view once per display, close, purchases carry paywall_id', async () => {
    const c = sdk();
    await c.start();
    await c.identify('user-1'); // the published vector: bucket 6573, annual_first
    assert.equal(inControl('user-1'), false);
    assert.equal(paywall(c, 'no-such-paywall'), null);
    const run = paywall(c, ids.a)!;
    assert.equal(run.requestedId, ids.a);
    assert.equal(run.paywallId, ids.b, 'the variant names paywall B');
    assert.equal(run.content.name, 'pw_b');
    assert.deepEqual(run.content.plans, [{ product_id: 'pw_b_annual' }]);
    assert.deepEqual(run.experiment, { key: 'paywall_q4', variant: 'annual_first', inExperiment: true });
    assert.equal(run.displayed, false);
    await run.shown();
    await paywall(c, ids.a)!.shown(); // a re-render with a new handle: the same display
    assert.equal(run.displayed, true);
    await run.purchaseStarted({ product_id: 'pw_b_annual' });
    await run.purchaseCompleted({ product_id: 'pw_b_annual', price: 59.99, currency: 'EUR', period: 'P1Y' });
    await assert.rejects(run.purchaseCompleted({ product_id: 'x' }), TypeError, 'the typed checks hold');
    await run.closed();
    await run.closed(); // already closed: nothing
    await run.shown(); // a second display
    await run.closed();

    await c.identify('user-0'); // control: paywall A itself
    const control = paywall(c, ids.a)!;
    assert.equal(control.paywallId, ids.a);
    assert.equal(control.experiment?.variant, 'control');
    await control.shown();
    await c.flush();

    const pw = { paywall_id: ids.b, experiment_id: 'paywall_q4', variant: 'annual_first' };
    const events = (await stored(c.getAnonId()!)).map((e) => [e.event_name, e.properties]);
    assert.deepEqual(events, [
      ['experiment_exposure', { experiment_id: 'paywall_q4', variant: 'annual_first' }],
      ['paywall_view', pw],
      ['purchase_started', { product_id: 'pw_b_annual', ...pw }],
      ['purchase_completed', { product_id: 'pw_b_annual', price: 59.99, currency: 'EUR', period: 'P1Y', ...pw }],
      ['paywall_close', pw],
      ['paywall_view', pw],
      ['paywall_close', pw],
      ['experiment_exposure', { experiment_id: 'paywall_q4', variant: 'control' }],
      ['paywall_view', { paywall_id: ids.a, experiment_id: 'paywall_q4', variant: 'control' }],
    ]);
    await c.shutdown();
  });

  it('a shipped experiment serves its shipped paywall (no exposure); a paywall no experiment names is itself', async () => {
    const c = sdk();
    await c.start();
    const shipped = paywall(c, ids.c)!;
    assert.equal(shipped.paywallId, ids.a);
    assert.deepEqual(shipped.experiment, { key: 'shipped_pw', variant: 'annual_first', inExperiment: false });
    const lone = paywall(c, ids.lone)!;
    assert.equal(lone.paywallId, ids.lone);
    assert.equal(lone.experiment, null);
    await lone.shown();
    await lone.purchaseFailed({ product_id: 'pw_lone_annual', reason: 'card_declined' });
    await lone.closed();
    await c.flush();
    const events = (await stored(c.getAnonId()!)).map((e) => [e.event_name, e.properties]);
    assert.deepEqual(events, [
      ['paywall_view', { paywall_id: ids.lone }],
      ['purchase_failed', { product_id: 'pw_lone_annual', reason: 'card_declined', paywall_id: ids.lone }],
      ['paywall_close', { paywall_id: ids.lone }],
    ]);
    await c.shutdown();
  });

  it('the client announces changes: storage read, a new bundle, identify', async () => {
    const c = sdk();
    let calls = 0;
    const off = c.subscribe(() => calls++);
    await c.start();
    assert.ok(calls >= 1, 'storage read and bundle applied');
    const before = calls;
    await c.identify('user-9');
    assert.equal(calls, before + 1);
    const r = await suite.c.put('/api/v1/remote-config', { values: { greeting: 'hi' } }, suite.t.console);
    assert.equal(r.status, 200, r.text);
    assert.equal(await c.checkForUpdate(), true);
    assert.equal(calls, before + 2, 'the new bundle');
    assert.equal(c.getRemoteConfig('greeting', ''), 'hi');
    off();
    await c.reset();
    assert.equal(calls, before + 2, 'unsubscribed');
    await c.shutdown();
  });
});
