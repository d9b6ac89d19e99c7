import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import { assignVariant } from '../packages/sdk/src/experiments.js';
import { createClient, memoryStorage, type Client as Sdk } from '../packages/sdk/src/index.js';
import { screenshot, useConsole } from './helpers/browser.js';
import { createTenant, type Tenant } from './helpers/client.js';

// Issue 35's journey: a paywall experiment made and started in the console, two SDK clients per
// variant exposed and buying, the results page equal to numbers worked out by hand below, and the
// winner shipped after a confirmation.
const rig = useConsole();
let t: Tenant;
let page: Page;
let root: Record<string, string>;
const email = `experimenter-${Date.now()}@example.com`;
const KEY = 'paywall_q4';
const sdks: Sdk[] = [];
after(async () => {
  for (const s of sdks) await s.shutdown().catch(() => undefined);
});

async function paywall(name: string): Promise<string> {
  const r = await rig.c.post(
    '/api/v1/paywalls',
    { name, layout: { title: name }, plans: [{ product_id: 'pro' }], cta: { text: 'Buy' }, dismiss: true },
    t.console,
  );
  assert.equal(r.status, 201, r.text);
  const p = await rig.c.post(`/api/v1/paywalls/${r.body.data.id}/publish`, {}, t.console);
  assert.equal(p.status, 200, p.text);
  return r.body.data.id;
}

function sdk(): Sdk {
  const s = createClient({
    apiKey: t.live.public_key,
    baseUrl: rig.server.url,
    storage: memoryStorage(),
    device: { platform: 'ios', os: '17.4', appVersion: '3.1.0', locale: 'en_US', country: 'US' },
    stream: false,
    lifecycle: false,
  });
  sdks.push(s);
  return s;
}

// Standard normal CDF at 1 (tables): the p-value of a z of 1 is 2 (1 - Phi(1)).
const PHI_1 = 0.8413447460685429;
const Z = 1.959964;

describe('experiments journey', () => {
  before(async () => {
    t = await createTenant(rig.c, { email });
    const r = await rig.c.post('/api/v1/auth/signup', { email: 'root@example.com', password: 'correct horse battery' });
    root = { authorization: `Bearer ${r.body.token}` };
    page = await rig.open('/');
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill('correct horse battery');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('link', { name: 'Experiments' }).waitFor();
  });

  test('create, start, expose, read results, ship', { timeout: 240_000 }, async () => {
    const current = await paywall('Current paywall');
    const bold = await paywall('Bold paywall');

    await page
      .getByRole('navigation', { name: 'Main' })
      .getByRole('link', { name: 'Experiments', exact: true })
      .click();
    await page.getByRole('button', { name: 'New experiment' }).click();
    const form = page.getByRole('form', { name: 'New experiment' });
    await form.getByLabel('Key', { exact: true }).fill(KEY);
    await form.getByLabel('Name', { exact: true }).fill('Q4 paywall');
    const v1 = form.getByRole('group', { name: 'Variant 1' });
    await v1.getByRole('combobox', { name: 'Paywall', exact: true }).selectOption({ label: 'Current paywall' });
    const v2 = form.getByRole('group', { name: 'Variant 2' });
    await v2.getByRole('combobox', { name: 'Paywall', exact: true }).selectOption({ label: 'Bold paywall' });
    await form.getByRole('button', { name: 'Create experiment' }).click();
    const row = page.getByRole('row', { name: `Experiment ${KEY}` });
    await row.getByRole('button', { name: 'Start' }).click();
    await row.getByText('running').waitFor();

    // Two SDK clients per variant, picked by the published assignment function.
    const list = await rig.c.get('/api/v1/experiments', t.console);
    const def = list.body.data.find((e: { key: string }) => e.key === KEY);
    assert.deepEqual(
      def.variants.map((v: { value: unknown }) => v.value),
      [{ paywall_id: current }, { paywall_id: bold }],
    );
    const by: Record<string, Sdk[]> = { control: [], treatment: [] };
    while (by.control.length < 2 || by.treatment.length < 2) {
      const s = sdk();
      await s.start();
      const v = assignVariant(s.getAnonId()!, def)!;
      if (by[v].length < 2) by[v].push(s);
    }
    for (const [variant, clients] of Object.entries(by))
      for (const s of clients) {
        const got = s.getExperiment(KEY);
        assert.equal(got.inExperiment, true);
        assert.equal(got.variant, variant);
        assert.deepEqual(got.value, { paywall_id: variant === 'control' ? current : bold });
        s.getExperiment(KEY); // a second read exposes nothing more
      }
    // Control: one of two buys; treatment: both buy.
    await by.control[0].purchaseCompleted({ product_id: 'pro', price: 4.99, currency: 'USD', period: 'P1M' });
    for (const s of by.treatment)
      await s.purchaseCompleted({ product_id: 'pro', price: 9.99, currency: 'USD', period: 'P1M' });
    for (const s of sdks) await s.flush();
    const folded = await rig.c.post('/api/v1/admin/experiments/fold', {}, root);
    assert.equal(folded.status, 200, folded.text);

    // The golden numbers of paid_conversion, worked out by hand from the four devices.
    const res = await rig.c.get(`/api/v1/experiments/${def.id}/results?environment=production`, t.console);
    assert.equal(res.status, 200, res.text);
    const r = res.body.data;
    assert.deepEqual(
      r.variants.map((v: any) => [v.key, v.devices]),
      [
        ['control', 2],
        ['treatment', 2],
      ],
    );
    assert.equal(r.health.srm.flagged, false);
    assert.equal(r.health.multiple_variant_devices, 0);
    assert.equal(r.health.assignment_mismatches, 0);
    const m = r.metrics.find((x: any) => x.metric === 'paid_conversion');
    assert.equal(m.role, 'primary');
    const [c, tr] = m.variants;
    assert.deepEqual([c.n, c.sum, c.sum_squares, c.mean, c.variance], [2, 1, 1, 0.5, 0.5]);
    assert.deepEqual([tr.n, tr.sum, tr.sum_squares, tr.mean, tr.variance], [2, 2, 2, 1, 0]);
    const cmp = m.comparisons[0];
    const se = Math.sqrt(0 / 2 + 0.5 / 2); // 0.5
    const close = (a: number, b: number) => assert.ok(Math.abs(a - b) < 1e-6, `${a} vs ${b}`);
    close(cmp.absolute.estimate, 0.5);
    close(cmp.absolute.ci_95[0], 0.5 - Z * se);
    close(cmp.absolute.ci_95[1], 0.5 + Z * se);
    close(cmp.absolute.p_value, 2 * (1 - PHI_1));
    // Relative: 0.5 / 0.5; variance 0 / (0.25 * 2) + 0.5 * 1 / (0.0625 * 2) = 4.
    close(cmp.relative.estimate, 1);
    close(cmp.relative.ci_95[1], 1 + Z * 2);
    // Sequential (N = 4 devices, tuning 5000): wider than the fixed interval, around the same estimate.
    const r2 = (-2 * Math.log(0.05) + Math.log(-2 * Math.log(0.05) + 1)) / 5000;
    const half =
      se * Math.sqrt(4) * Math.sqrt(((2 * (4 * r2 + 1)) / (16 * r2)) * Math.log(Math.sqrt(4 * r2 + 1) / 0.05));
    close(cmp.sequential.ci_95[0], 0.5 - half);
    close(cmp.sequential.ci_95[1], 0.5 + half);

    // The console shows the same numbers.
    await row.getByRole('button', { name: 'Open' }).click();
    // Opened since the start (0 devices then): Refresh reads the folded results.
    await page.getByRole('region', { name: 'Results' }).getByRole('button', { name: 'Refresh' }).click();
    const results = page.getByRole('region', { name: 'Results' });
    // The refetched row: 2 devices, mean 1, difference 0.5 [0.5 - 1.96 x 0.5, ...], p = 0.317.
    const trRow = results.getByRole('row', { name: 'paid_conversion treatment' }).filter({ hasText: '0.317' });
    await trRow.waitFor();
    assert.match((await trRow.textContent()) ?? '', /^treatment210\.5 \[-0\.48/);
    assert.equal(await results.getByRole('alert').count(), 0, 'no sample ratio mismatch');
    await screenshot(page, 'experiments');

    // Ship the winner: the confirmation names what every device gets.
    await page.getByRole('button', { name: 'Ship treatment' }).click();
    const confirm = page.getByRole('dialog', { name: 'Confirm ship treatment' });
    await confirm.getByText(`paywall ${bold}`).waitFor();
    await confirm.getByRole('button', { name: 'Confirm ship' }).click();
    await row.getByText('shipped (treatment)').waitFor();
    const fresh = sdk();
    await fresh.start();
    const served = fresh.getExperiment(KEY);
    assert.deepEqual([served.inExperiment, served.variant, served.value], [false, 'treatment', { paywall_id: bold }]);
  });
});
