import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import murmur from 'murmurhash3js';
import { ensureExampleBuilt, exampleDist } from '../examples/paywall-demo/scripts/build.mjs';
import { OPTION_SET_ID } from '../scripts/demo/content.js';
import { type Demo, seedDemo } from '../scripts/demo/seed.js';
import { serveStatic } from '../scripts/demo/serve.js';
import { useCrossOriginRig } from './helpers/browser.js';

// The example app a newcomer runs (examples/paywall-demo, built with Vite) in Chromium, on its own
// origin, against a service seeded by the demo's own seeding (scripts/demo/seed.ts) at a small
// size. A user walks it: onboarding (an Option Set search in the select step), the paywall chosen
// by the running experiment, a fake purchase, then closes the tab. The export API must hold each
// automatic event once, in order, with the fields the analytics read; the dashboard's onboarding
// completion and paywall view rate must move by exactly this one device, as the export counts.

interface Stored {
  event_id: string;
  event_name: string;
  ts_ms: number;
  user: { anon_id: string };
  device: Record<string, unknown>;
  context: { session_id: string; client_seq: number };
  properties: Record<string, unknown>;
}

/** Six days of history: every seeded event falls in the dashboard's `period=7d` (today and the 6 days before). */
const DAYS = 6;
const DEVICES = 60;

let demo: Demo;
let root: Record<string, string>;

describe('example app (Chromium)', () => {
  const rig = useCrossOriginRig(() => {
    ensureExampleBuilt(() => undefined);
    return serveStatic(exampleDist);
  });
  before(async () => {
    demo = await seedDemo({ baseUrl: rig.server.url, devices: DEVICES, days: DAYS, seed: 7 });
    const r = await rig.c.post('/api/v1/auth/signup', { email: 'root@example.com', password: 'correct horse battery' });
    root = { authorization: `Bearer ${r.body.token}` };
  });

  /** The app's raw events in the window, every page of the export API. */
  async function exported(): Promise<Stored[]> {
    const q = `start_date=${new Date(Date.now() - (DAYS + 2) * 86_400_000).toISOString()}&end_date=${new Date(Date.now() + 3600_000).toISOString()}&limit=1000`;
    const all: Stored[] = [];
    for (let offset = 0; ; offset += 1000) {
      const r = await rig.c.get(`/api/v1/sdk/events/export?${q}&offset=${offset}`, { 'x-api-key': demo.publicKey });
      assert.equal(r.status, 200, r.text);
      all.push(...r.body.data);
      if (!r.body.meta.hasMore) return all;
    }
  }

  /** A fold now (every committed event), then the dashboard's KPIs as the console reads them. */
  async function kpis(): Promise<Record<string, number>> {
    assert.equal((await rig.c.post('/api/v1/admin/analytics/rollup', {}, root)).status, 200);
    const r = await rig.c.get('/api/v1/analytics/kpis?period=7d', demo.console);
    assert.equal(r.status, 200, r.text);
    return Object.fromEntries(r.body.kpis.map((k: { metric: string; current: number }) => [k.metric, k.current]));
  }

  /** Equal as the dashboard rounds (two decimals; a half may round either way in binary). */
  const near = (kpi: number, computed: number) => assert.ok(Math.abs(kpi - computed) < 0.011, `${kpi} vs ${computed}`);

  /** The two rates computed apart, from the exported events: users with each event, distinct devices. */
  function rates(events: Stored[]) {
    const users = (name?: string) =>
      new Set(events.filter((e) => !name || e.event_name === name).map((e) => e.user.anon_id)).size;
    const pct = (a: number, b: number) => Math.round((10_000 * a) / b) / 100;
    return {
      onboarding_completion_rate: pct(users('onboarding_flow_completed'), users('onboarding_flow_started')),
      paywall_view_rate: pct(users('paywall_view'), users()),
    };
  }

  it('walks onboarding, the paywall and a purchase; every automatic event arrives once, in order; the KPIs move', async () => {
    const before = await kpis();
    const seeded = rates(await exported());
    // The seeded history has drop-off (so one more completing device moves both rates up).
    assert.ok(seeded.onboarding_completion_rate < 100 && seeded.paywall_view_rate < 100, JSON.stringify(seeded));
    near(before.onboarding_completion_rate, seeded.onboarding_completion_rate);
    near(before.paywall_view_rate, seeded.paywall_view_rate);

    const page = await (await rig.browser.newContext()).newPage();
    page.setDefaultTimeout(15_000);
    await page.goto(`${rig.site.url}/?api=${encodeURIComponent(rig.server.url)}&key=${demo.publicKey}`);
    await page.getByRole('heading', { name: 'Welcome to Lingo' }).waitFor();
    const anon = await page.evaluate(() => (window as unknown as { sdk: { getAnonId(): string } }).sdk.getAnonId());
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.getByRole('heading', { name: 'Where do you live?' }).waitFor();
    // The select step searches the Option Set through the SDK: "lis" finds Lisbon, not Paris.
    await page.getByRole('button', { name: /^Paris/ }).waitFor(); // the bundle's first page
    await page.getByRole('searchbox', { name: 'Search' }).fill('lis');
    await page.getByRole('button', { name: /^Paris/ }).waitFor({ state: 'detached' });
    await page.getByRole('button', { name: /^Lisbon/ }).click();
    await page.getByRole('heading', { name: 'Daily reminders' }).waitFor();
    await page.getByRole('button', { name: 'Continue' }).click();

    // The paywall the experiment assigns this device, computed apart (murmur3 of "anon:key").
    const x = demo.experiment;
    const variant = murmur.x86.hash32(`${anon}:${x.key}`) % 10_000 < 5000 ? 'control' : 'monthly_first';
    const paywallId = variant === 'control' ? demo.paywalls.annual : demo.paywalls.monthly;
    await page.getByText(`Paywall ${paywallId} chosen by experiment ${x.key}, variant ${variant}`).waitFor();
    await page.getByRole('button', { name: /^Annual/ }).click();
    await page.getByRole('heading', { name: 'Welcome to Pro!' }).waitFor();
    // The visible list: the events the service acknowledged, in the order sent.
    const list = page.locator('#sent-events li');
    await list.filter({ hasText: 'paywall_close' }).waitFor();
    const shown = await list.evaluateAll((li) => li.map((e) => e.getAttribute('data-event')));
    await page.close({ runBeforeUnload: true }); // the tab closes: session_end leaves with keepalive

    const names = [
      'app_open',
      'session_start',
      'onboarding_flow_started',
      ...['welcome', 'city', 'reminders'].flatMap(() => ['onboarding_step_viewed', 'onboarding_step_completed']),
      'onboarding_flow_completed',
      'experiment_exposure',
      'paywall_view',
      'purchase_started',
      'purchase_completed',
      'paywall_close',
    ];
    assert.deepEqual(shown, names);
    let mine: Stored[] = [];
    for (const end = Date.now() + 10_000; Date.now() < end; await new Promise((r) => setTimeout(r, 100))) {
      mine = (await exported()).filter((e) => e.user.anon_id === anon);
      if (mine.some((e) => e.event_name === 'session_end')) break;
    }
    mine.sort((a, b) => a.context.client_seq - b.context.client_seq);
    assert.deepEqual(
      mine.map((e) => e.event_name),
      [...names, 'session_end'],
    );
    assert.equal(new Set(mine.map((e) => e.event_id)).size, mine.length, 'each event stored once');
    assert.ok(
      mine.every((e, i) => i === 0 || e.ts_ms >= mine[i - 1].ts_ms),
      'time order = sequence order',
    );
    assert.equal(new Set(mine.map((e) => e.context.session_id)).size, 1, 'one session');
    assert.equal(mine[0].device.platform, 'ios');

    const p = (name: string, i = 0) => mine.filter((e) => e.event_name === name)[i].properties;
    assert.equal(p('app_open').first_open, true);
    const flow = { flow_id: demo.flowId, total_steps: 3 };
    assert.deepEqual(p('onboarding_flow_started'), flow);
    ['welcome', 'city', 'reminders'].forEach((step_id, step_index) => {
      assert.deepEqual(p('onboarding_step_viewed', step_index), { ...flow, step_id, step_index });
      // The select step's answer goes with its completion, locking the Option Set value (decisions §3).
      const answer = step_id === 'city' ? { option_set_id: OPTION_SET_ID, option_value: 'lisbon' } : {};
      assert.deepEqual(p('onboarding_step_completed', step_index), { ...flow, step_id, step_index, ...answer });
    });
    assert.deepEqual(p('onboarding_flow_completed'), flow);
    assert.deepEqual(p('experiment_exposure'), { experiment_id: x.key, variant });
    const shownPaywall = { paywall_id: paywallId, experiment_id: x.key, variant };
    assert.deepEqual(p('paywall_view'), shownPaywall);
    assert.deepEqual(p('paywall_close'), shownPaywall);
    const plan = { product_id: 'pro_annual', price: 59.99, currency: 'USD', period: 'P1Y', ...shownPaywall };
    assert.deepEqual(p('purchase_started'), plan);
    const { transaction_id, ...completed } = p('purchase_completed');
    assert.deepEqual(completed, { ...plan, is_trial: true });
    assert.match(String(transaction_id), /^fake-/);
    const end = p('session_end').duration_ms as number;
    assert.ok(end >= 0 && end <= mine[mine.length - 1].ts_ms - mine[0].ts_ms + 1, `duration_ms ${end}`);

    // The dashboard moved by this one device, as the exported events count it.
    const after = await kpis();
    const walked = rates(await exported());
    assert.ok(walked.onboarding_completion_rate > seeded.onboarding_completion_rate);
    assert.ok(walked.paywall_view_rate > seeded.paywall_view_rate);
    near(after.onboarding_completion_rate, walked.onboarding_completion_rate);
    near(after.paywall_view_rate, walked.paywall_view_rate);
  });

  it('a second seeding reuses the demo organization (idempotent) and uploads nothing', async () => {
    const again = await seedDemo({ baseUrl: rig.server.url, devices: DEVICES, days: DAYS, seed: 7 });
    assert.equal(again.uploaded, 0);
    assert.deepEqual(
      [again.orgId, again.appId, again.publicKey, again.flowId, again.experiment.id, again.paywalls],
      [demo.orgId, demo.appId, demo.publicKey, demo.flowId, demo.experiment.id, demo.paywalls],
    );
    const me = await rig.c.get('/api/v1/me', { authorization: `Bearer ${again.token}` });
    assert.equal(me.body.data.organizations.length, 1);
    assert.equal(me.body.data.organizations[0].apps.length, 1);
  });
});
