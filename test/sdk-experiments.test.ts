import assert from 'node:assert/strict';
import murmur from 'murmurhash3js';
import { describe, it } from 'node:test';
import {
  assignVariant,
  createClient,
  memoryStorage,
  type Bundle,
  type ClientOptions,
  type ExperimentDefinition,
  type SdkError,
  type Storage,
} from '../packages/sdk/src/index.js';
import { useTenantApp } from './helpers/suite.js';
import { deviceEvents } from './helpers/client.js';

// getExperiment (decisions §10), the typed purchase and push events, and sdk_min_version, against
// the real service: each scenario reads back what the service stored through the export API.
const suite = useTenantApp();
const device = { platform: 'ios', os: '17.4', appVersion: '3.1.0', locale: 'en_US', country: 'US' } as const;

const PAYWALL: ExperimentDefinition = {
  key: 'paywall_q4',
  status: 'running',
  coverage_pct: 100,
  variants: [
    { key: 'control', weight: 50, value: { layout: 'monthly_first' } },
    { key: 'annual_first', weight: 50, value: { layout: 'annual_first' } },
  ],
};
const ONBOARDING: ExperimentDefinition = {
  key: 'onboarding_v2',
  status: 'running',
  coverage_pct: 40,
  variants: [
    { key: 'control', weight: 34, value: 5 },
    { key: 'short', weight: 33, value: 3 },
    { key: 'long', weight: 33, value: 8 },
  ],
};

// The vectors published in packages/sdk/README.md ("Experiment assignment").
const VECTORS: [ExperimentDefinition, string, number, string | null][] = [
  [PAYWALL, 'user-0', 3222, 'control'],
  [PAYWALL, 'user-1', 6573, 'annual_first'],
  [PAYWALL, 'user-11', 401, 'control'],
  [PAYWALL, 'user-4', 9686, 'annual_first'],
  [ONBOARDING, 'user-9', 742, 'control'],
  [ONBOARDING, 'user-1', 2468, null],
  [ONBOARDING, 'user-2', 4543, 'short'],
  [ONBOARDING, 'user-6', 6410, null],
  [ONBOARDING, 'user-0', 7552, 'long'],
  [ONBOARDING, 'user-3', 8357, null],
];

/** A second computation of the assignment: the service's murmur library (ASCII units) and the ranges spelled out. */
function independent(unit: string, e: ExperimentDefinition): string | null {
  const b = murmur.x86.hash32(`${unit}:${e.key}`) % 10_000;
  const cov = e.coverage_pct ?? 100;
  const ranges = e.variants.map((v, i) => {
    const s = 100 * e.variants.slice(0, i).reduce((n, w) => n + w.weight, 0);
    return [s, s + v.weight * cov, v.key] as const;
  });
  return ranges.find(([lo, hi]) => b >= lo && b < hi)?.[2] ?? null;
}

describe('sdk experiments: assignment', () => {
  it('the published vectors, incl. coverage below 100%', () => {
    for (const [e, unit, bucket, variant] of VECTORS) {
      assert.equal(murmur.x86.hash32(`${unit}:${e.key}`) % 10_000, bucket, `${unit}:${e.key}`);
      assert.equal(assignVariant(unit, e), variant, `${unit} in ${e.key}`);
    }
  });

  it('agrees with an independent computation; coverage and weights hold over 20,000 units', () => {
    for (const coverage of [100, 40, 1]) {
      const e = { ...ONBOARDING, coverage_pct: coverage };
      const counts = new Map<string | null, number>();
      for (let i = 0; i < 20_000; i++) {
        const unit = `00000000-0000-4000-8000-${i.toString(16).padStart(12, '0')}`;
        const v = assignVariant(unit, e);
        assert.equal(v, independent(unit, e), unit);
        counts.set(v, (counts.get(v) ?? 0) + 1);
      }
      const share = (k: string | null) => (counts.get(k) ?? 0) / 20_000;
      assert.ok(Math.abs(share(null) - (1 - coverage / 100)) < 0.02, `coverage ${coverage}: out ${share(null)}`);
      assert.ok(Math.abs(share('control') - 0.34 * (coverage / 100)) < 0.02, `coverage ${coverage}: control`);
    }
  });
});

describe('sdk experiments and typed events, end to end', () => {
  /** A bundled config newer than anything the service has, so it stays while the client talks to the service. */
  const bundled = (experiments: Record<string, ExperimentDefinition>): Bundle => ({
    bundle_version: 1e9,
    content: { remote_config: {}, feature_flags: {}, experiments },
  });
  function sdk(storage: Storage, over: Partial<ClientOptions> = {}) {
    const errors: SdkError[] = [];
    const client = createClient({
      apiKey: suite.t.live.public_key,
      baseUrl: suite.server.url,
      storage,
      device,
      stream: false,
      lifecycle: false,
      onError: (e) => errors.push(e),
      ...over,
    });
    return { client, errors };
  }
  const exported = (anonId: string) => deviceEvents(suite.c, suite.t.live.public_key, anonId);

  it('running: the assigned value; one experiment_exposure per (experiment, unit), also across restarts', async () => {
    const storage = memoryStorage();
    const exps = {
      paywall_q4: PAYWALL,
      targeted: {
        ...PAYWALL,
        key: 'targeted',
        targeting: { rules: [{ attribute: 'traits.plan', op: 'eq', value: 'pro' }] },
      },
    } as Record<string, ExperimentDefinition>;
    const { client } = sdk(storage, { bundledConfig: bundled(exps) });
    await client.start();
    const anon = client.getAnonId()!;
    const want = independent(anon, PAYWALL)!;
    const r = client.getExperiment('paywall_q4');
    assert.deepEqual(r, {
      inExperiment: true,
      variant: want,
      value: PAYWALL.variants.find((v) => v.key === want)!.value,
    });
    client.getExperiment('paywall_q4');
    assert.deepEqual(client.getExperiment('targeted'), {
      inExperiment: false,
      variant: 'control',
      value: PAYWALL.variants[0].value,
    });
    await client.flush();
    await client.shutdown();

    const again = sdk(storage, { bundledConfig: bundled(exps) }).client;
    await again.start();
    assert.equal(again.getExperiment('paywall_q4').variant, want, 'the same assignment after a restart');
    await again.identify('user-1', { plan: 'pro' });
    assert.deepEqual(again.getExperiment('paywall_q4'), {
      inExperiment: true,
      variant: 'annual_first',
      value: PAYWALL.variants[1].value,
    }); // the published vector: the unit is now the user id
    assert.equal(again.getExperiment('targeted').inExperiment, true, 'targeting by the flag rule evaluator');
    await again.flush();
    await again.shutdown();

    const exposures = (await exported(anon)).filter((e) => e.event_name === 'experiment_exposure');
    const seen = exposures.map((e) => `${e.properties.experiment_id}/${e.properties.variant}`).sort();
    assert.deepEqual(
      seen,
      [`paywall_q4/${want}`, 'paywall_q4/annual_first', `targeted/${independent('user-1', exps.targeted)}`].sort(),
    );
    for (const e of exposures)
      assert.deepEqual(e.context.experiment_exposures, [
        { exp: e.properties.experiment_id, variant: e.properties.variant },
      ]);
  });

  it('outside coverage, stopped, shipped, unknown: no exposure; the documented values', async () => {
    const { client } = sdk(memoryStorage(), {
      bundledConfig: bundled({
        out: { ...ONBOARDING, key: 'out', coverage_pct: 1 },
        stopped: { ...PAYWALL, key: 'stopped', status: 'stopped' },
        shipped: { ...PAYWALL, key: 'shipped', status: 'shipped', shipped_variant: 'annual_first' },
      }),
    });
    await client.start();
    const anon = client.getAnonId()!;
    const out = client.getExperiment('out');
    const inOut = independent(anon, { ...ONBOARDING, key: 'out', coverage_pct: 1 });
    assert.equal(out.inExperiment, inOut !== null);
    assert.deepEqual(client.getExperiment('stopped'), {
      inExperiment: false,
      variant: 'control',
      value: PAYWALL.variants[0].value,
    });
    assert.deepEqual(client.getExperiment('shipped'), {
      inExperiment: false,
      variant: 'annual_first',
      value: PAYWALL.variants[1].value,
    });
    assert.deepEqual(client.getExperiment('nope', 'dflt'), { inExperiment: false, variant: null, value: 'dflt' });
    await client.track('done');
    await client.flush();
    const stored = (await exported(anon)).map((e) => e.event_name);
    assert.deepEqual(stored, inOut === null ? ['done'] : ['experiment_exposure', 'done']);
  });

  it('purchase and push helpers: the names and properties the analytics read; bad input is refused before queueing', async () => {
    const { client } = sdk(memoryStorage());
    await client.start();
    const base = { product_id: 'pro_annual', price: 59.99, currency: 'EUR', period: 'P1Y' };
    await client.purchaseStarted({ product_id: 'pro_annual' });
    await client.purchaseCompleted({ ...base, is_trial: true });
    await client.purchaseFailed({ product_id: 'pro_annual', reason: 'card_declined' });
    await client.purchaseCanceled({ product_id: 'pro_annual' });
    await client.purchasePending({ product_id: 'pro_annual' });
    await client.purchaseRestored({ ...base });
    await client.pushTokenRegistered('tok-1');
    await client.pushPermission(true);
    await client.pushPermission(false);
    await client.pushDelivered('m-1');
    await client.pushTapped('m-1');
    const bad: [() => Promise<void>, RegExp][] = [
      [() => client.purchaseCompleted({ product_id: 'x' }), /price/],
      [() => client.purchaseCompleted({ ...base, currency: 'euro' }), /currency/],
      [() => client.purchaseCompleted({ ...base, period: 'yearly' }), /period/],
      [() => client.purchaseCompleted({ ...base, price: -1 }), /price/],
      [() => client.purchaseCompleted({ ...base, is_trial: 'yes' as never }), /is_trial/],
      [() => client.purchaseStarted({ product_id: '' }), /product_id/],
      [() => client.pushTapped(''), /push_id/],
    ];
    for (const [call, msg] of bad)
      await assert.rejects(call, (e: Error) => e instanceof TypeError && msg.test(e.message));
    assert.equal(client.queuedCount(), 11, 'nothing queued for the refused calls');
    await client.flush();
    const stored = await exported(client.getAnonId()!);
    assert.deepEqual(
      stored.map((e) => e.event_name),
      [
        'purchase_started',
        'purchase_completed',
        'purchase_failed',
        'purchase_canceled',
        'purchase_pending',
        'purchase_restored',
        'push_token_registered',
        'push_permission_granted',
        'push_permission_denied',
        'push_delivered',
        'push_tapped',
      ],
    );
    assert.deepEqual(stored[1].properties, { ...base, is_trial: true });
    assert.deepEqual(stored[6].properties, { token: 'tok-1' });
    assert.deepEqual(stored[10].properties, { push_id: 'm-1' });
  });

  it('sdk_min_version above this SDK: the bundle is not applied (cache / bundled config stays), reported once', async () => {
    const put = (v: string | null) =>
      suite.c.put('/api/v1/sdk/config-bundle/settings', { sdk_min_version: v }, suite.t.console);
    await suite.c.put('/api/v1/remote-config', { values: { greeting: 'server' } }, suite.t.console);
    assert.equal((await put('99.0.0')).status, 200);
    const local: Bundle = { bundle_version: 0, content: { remote_config: { greeting: 'bundled' } } };
    const { client, errors } = sdk(memoryStorage(), { bundledConfig: local });
    await client.start();
    assert.equal(client.getRemoteConfig('greeting', ''), 'bundled');
    assert.equal(await client.checkForUpdate(), false);
    await client.foreground();
    const refused = errors.filter((e) => e.code === 'bundle_requires_newer_sdk');
    assert.equal(refused.length, 1, 'reported once');
    assert.equal((refused[0].detail as { sdk_min_version: string }).sdk_min_version, '99.0.0');
    assert.equal((await put(null)).status, 200);
    assert.equal(await client.checkForUpdate(), true, 'a bundle this SDK can read is applied');
    assert.equal(client.getRemoteConfig('greeting', ''), 'server');
    await client.shutdown();
  });
});
