import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { createTenant, makeEvent } from './helpers/client.js';
import { useTenantApp } from './helpers/suite.js';
import { startReceiver, verify, waitFor, type Receiver } from './webhooks-receiver.js';

const suite = useTenantApp();
let member: Record<string, string>;
let admin: Record<string, string>;
let viewer: Record<string, string>;
let rx: Receiver;

async function joinAs(role: 'member' | 'viewer' | 'admin') {
  const { c, t } = suite;
  const email = `${role}-${randomUUID()}@example.com`;
  const s = await c.post('/api/v1/auth/signup', { email, password: 'long enough pw' });
  const added = await c.post(
    `/api/v1/organizations/${t.orgId}/members`,
    { email, role },
    { authorization: `Bearer ${t.token}` },
  );
  assert.equal(added.status, 201, added.text);
  return { authorization: `Bearer ${s.body.token}`, 'x-tenant-id': t.orgId, 'x-app-id': t.appId };
}

// The suite's server starts in its own hook; the role holders are made by the first test that needs them.
let joined: Promise<void> | null = null;
const roles = () =>
  (joined ??= (async () => {
    member = await joinAs('member');
    admin = await joinAs('admin');
    viewer = await joinAs('viewer');
  })());
before(async () => {
  rx = await startReceiver();
});
after(() => rx.close());

const draft = (over: Record<string, unknown> = {}) => ({
  key: `paywall_${randomUUID().slice(0, 8)}`,
  name: 'Paywall Q4',
  hypothesis: 'A yearly-first paywall lifts paid conversion',
  variants: [
    { key: 'control', weight: 50, value: { paywall: 'monthly_first' } },
    { key: 'yearly', weight: 50, value: { paywall: 'yearly_first' } },
  ],
  primary_metric: 'paid_conversion',
  secondary_metrics: ['revenue', 'event:paywall_close'],
  guardrail_metrics: ['refund_rate'],
  ...over,
});
const create = (body: unknown, h = member) => suite.c.post('/api/v1/experiments', body, h);
const bundle = async () => {
  const r = await suite.c.get('/api/v1/sdk/config-bundle', { 'x-api-key': suite.t.live.public_key });
  assert.equal(r.status, 200, r.text);
  return r.body.data;
};

describe('experiments: resource and validation', () => {
  before(() => roles());
  it('creates a draft with the defaults, reads, lists, edits and deletes it (member)', async () => {
    const r = await create(draft({ key: 'paywall_q4' }));
    assert.equal(r.status, 201, r.text);
    const x = r.body.data;
    assert.equal(x.key, 'paywall_q4');
    assert.equal(x.status, 'draft');
    assert.equal(x.coverage_pct, 100);
    assert.equal(x.attribution_days, 14);
    assert.equal(x.sequential_tuning, 5000);
    assert.equal(x.targeting, null);
    assert.equal(x.started_at, null);
    assert.deepEqual(x.secondary_metrics, ['revenue', 'event:paywall_close']);
    const one = await suite.c.get(`/api/v1/experiments/${x.id}`, viewer);
    assert.equal(one.status, 200);
    assert.deepEqual(one.body.data, x);
    const list = await suite.c.get('/api/v1/experiments?status=draft', viewer);
    assert.ok(list.body.data.some((e: any) => e.id === x.id));
    assert.equal(typeof list.body.meta.total, 'number');
    const p = await suite.c.patch(
      `/api/v1/experiments/${x.id}`,
      { name: 'Renamed', coverage_pct: 40, variants: [...x.variants, { key: 'weekly', weight: 0, value: 1 }] },
      member,
    );
    assert.equal(p.status, 400, 'weight 0 is refused by the schema');
    const p2 = await suite.c.patch(
      `/api/v1/experiments/${x.id}`,
      {
        name: 'Renamed',
        coverage_pct: 40,
        targeting: { rules: [{ attribute: 'platform', op: 'eq', value: 'ios' }] },
        variants: [
          { key: 'control', weight: 34, value: 'a' },
          { key: 'b', weight: 33, value: 'b' },
          { key: 'c', weight: 33, value: 'c' },
        ],
      },
      member,
    );
    assert.equal(p2.status, 200, p2.text);
    assert.equal(p2.body.data.name, 'Renamed');
    assert.equal(p2.body.data.variants.length, 3);
    assert.equal(p2.body.bundle_version, undefined, 'a draft edit makes no bundle version');
    const dup = await create(draft({ key: 'paywall_q4' }));
    assert.equal(dup.status, 409);
    assert.equal(dup.body.errors[0].path, '/body/key');
    const d = await suite.c.del(`/api/v1/experiments/${x.id}`, member);
    assert.equal(d.status, 200);
    assert.equal((await suite.c.get(`/api/v1/experiments/${x.id}`, member)).status, 404);
  });

  it('names the field of each validation error', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [
        {
          variants: [
            { key: 'a', weight: 50, value: 1 },
            { key: 'b', weight: 40, value: 2 },
          ],
        },
        '/body/variants',
      ],
      [
        {
          variants: [
            { key: 'a', weight: 50, value: 1 },
            { key: 'a', weight: 50, value: 2 },
          ],
        },
        '/body/variants/1/key',
      ],
      [{ primary_metric: 'conversions' }, '/body/primary_metric'],
      [{ secondary_metrics: ['revenue', 'event:'] }, '/body/secondary_metrics/1'],
      [{ guardrail_metrics: ['nope'] }, '/body/guardrail_metrics/0'],
      [{ targeting: { rules: [{ attribute: 'country', op: 'matches', value: 'x' }] } }, '/body/targeting/rules/0/op'],
      [{ targeting: { rules: [{ attribute: 'n', op: 'gt', value: 'ten' }] } }, '/body/targeting/rules/0/value'],
      [{ key: 'Bad Key' }, '/body/key'],
      [{ coverage_pct: 0 }, '/body/coverage_pct'],
      [{ attribution_days: 91 }, '/body/attribution_days'],
      [{ variants: [{ key: 'only', weight: 100, value: 1 }] }, '/body/variants'],
    ];
    for (const [over, path] of cases) {
      const r = await create(draft(over));
      assert.equal(r.status, 400, `${JSON.stringify(over)}: ${r.text}`);
      assert.equal(r.body.code, 'validation_failed');
      assert.ok(
        r.body.errors.some((e: any) => e.path === path),
        `${JSON.stringify(over)} names ${path}: ${JSON.stringify(r.body.errors)}`,
      );
    }
  });

  it('roles: viewers read only; members edit drafts; only admins start, stop, ship', async () => {
    assert.equal((await create(draft(), viewer)).status, 403);
    const x = (await create(draft())).body.data;
    for (const a of ['start', 'stop'])
      assert.equal((await suite.c.post(`/api/v1/experiments/${x.id}/${a}`, {}, member)).status, 403);
    assert.equal((await suite.c.post(`/api/v1/experiments/${x.id}/ship`, { variant: 'control' }, member)).status, 403);
    assert.equal((await suite.c.patch(`/api/v1/experiments/${x.id}`, { name: 'v' }, viewer)).status, 403);
    assert.equal((await suite.c.post(`/api/v1/experiments/${x.id}/start`, {}, admin)).status, 200);
    const edit = await suite.c.patch(`/api/v1/experiments/${x.id}`, { name: 'while running' }, member);
    assert.equal(edit.status, 403, 'a started experiment needs an admin to change');
    assert.equal((await suite.c.del(`/api/v1/experiments/${x.id}`, member)).status, 403);
    assert.equal((await suite.c.get(`/api/v1/experiments/${x.id}/results`, viewer)).status, 200);
  });

  it("another tenant's experiment is 404 on every route", async () => {
    const x = (await create(draft())).body.data;
    const other = await createTenant(suite.c);
    const h = other.console;
    assert.equal((await suite.c.get(`/api/v1/experiments/${x.id}`, h)).status, 404);
    assert.equal((await suite.c.patch(`/api/v1/experiments/${x.id}`, { name: 'x' }, h)).status, 404);
    assert.equal((await suite.c.del(`/api/v1/experiments/${x.id}`, h)).status, 404);
    for (const a of ['start', 'stop'])
      assert.equal((await suite.c.post(`/api/v1/experiments/${x.id}/${a}`, {}, h)).status, 404);
    assert.equal((await suite.c.post(`/api/v1/experiments/${x.id}/ship`, { variant: 'control' }, h)).status, 404);
    assert.equal((await suite.c.get(`/api/v1/experiments/${x.id}/results`, h)).status, 404);
    assert.ok(!(await suite.c.get('/api/v1/experiments', h)).body.data.some((e: any) => e.id === x.id));
    assert.equal((await suite.c.get(`/api/v1/experiments/${x.id}`, suite.t.console)).status, 200);
  });
});

describe('experiments: lifecycle in the bundle', () => {
  before(() => roles());
  it('start, stop and ship each make a bundle version, recorded in history, that a rollback can undo', async () => {
    const hook = await suite.c.post(
      '/api/v1/webhooks',
      { url: rx.url('/shipped'), events: ['experiment.shipped', 'experiment.exposure'] },
      suite.t.console,
    );
    assert.equal(hook.status, 201, hook.text);
    const x = (
      await create(
        draft({
          key: 'onboarding_len',
          coverage_pct: 30,
          targeting: { rules: [{ attribute: 'country', op: 'in', values: ['US', 'DE'] }] },
        }),
      )
    ).body.data;
    const v0 = (await bundle()).bundle_version;
    assert.equal((await bundle()).content.experiments?.onboarding_len, undefined, 'drafts are not in the bundle');

    const started = await suite.c.post(`/api/v1/experiments/${x.id}/start`, {}, admin);
    assert.equal(started.status, 200, started.text);
    assert.equal(started.body.data.status, 'running');
    assert.ok(started.body.data.started_at);
    const v1 = started.body.bundle_version;
    assert.ok(v1 > v0);
    const b1 = await bundle();
    assert.equal(b1.bundle_version, v1, 'the answer comes after the bundle holds the change');
    assert.deepEqual(b1.content.experiments.onboarding_len, {
      key: 'onboarding_len',
      status: 'running',
      variants: [
        { key: 'control', weight: 50, value: { paywall: 'monthly_first' } },
        { key: 'yearly', weight: 50, value: { paywall: 'yearly_first' } },
      ],
      coverage_pct: 30,
      targeting: { rules: [{ attribute: 'country', op: 'in', values: ['US', 'DE'] }] },
    });
    assert.equal((await suite.c.post(`/api/v1/experiments/${x.id}/start`, {}, admin)).status, 409);

    // Frozen once started: variants, weights, metrics, window; coverage only grows.
    const frozen = await suite.c.patch(
      `/api/v1/experiments/${x.id}`,
      {
        variants: [
          { key: 'control', weight: 60, value: 1 },
          { key: 'yearly', weight: 40, value: 2 },
        ],
      },
      admin,
    );
    assert.equal(frozen.status, 409);
    assert.equal(frozen.body.errors[0].path, '/body/variants');
    const shrink = await suite.c.patch(`/api/v1/experiments/${x.id}`, { coverage_pct: 20 }, admin);
    assert.equal(shrink.status, 409);
    assert.equal(shrink.body.errors[0].path, '/body/coverage_pct');
    const grow = await suite.c.patch(`/api/v1/experiments/${x.id}`, { coverage_pct: 60 }, admin);
    assert.equal(grow.status, 200, grow.text);
    const v2 = grow.body.bundle_version;
    assert.ok(v2 > v1);
    assert.equal((await bundle()).content.experiments.onboarding_len.coverage_pct, 60);
    const rename = await suite.c.patch(`/api/v1/experiments/${x.id}`, { name: 'Renamed' }, admin);
    assert.equal(rename.body.bundle_version, undefined, 'a name change devices do not see makes no version');

    const stopped = await suite.c.post(`/api/v1/experiments/${x.id}/stop`, {}, admin);
    assert.equal(stopped.status, 200);
    const v3 = stopped.body.bundle_version;
    assert.ok(v3 > v2);
    assert.equal((await bundle()).content.experiments.onboarding_len.status, 'stopped');

    const bad = await suite.c.post(`/api/v1/experiments/${x.id}/ship`, { variant: 'weekly' }, admin);
    assert.equal(bad.status, 400);
    assert.equal(bad.body.errors[0].path, '/body/variant');
    const shipped = await suite.c.post(`/api/v1/experiments/${x.id}/ship`, { variant: 'yearly' }, admin);
    assert.equal(shipped.status, 200, shipped.text);
    assert.equal(shipped.body.data.status, 'shipped');
    assert.equal(shipped.body.data.shipped_variant, 'yearly');
    const v4 = shipped.body.bundle_version;
    const b4 = await bundle();
    assert.equal(b4.bundle_version, v4);
    assert.equal(b4.content.experiments.onboarding_len.status, 'shipped');
    assert.equal(b4.content.experiments.onboarding_len.shipped_variant, 'yearly');

    const hist = await suite.c.get('/api/v1/sdk/config-bundle/history?limit=10', suite.t.console);
    const reasons = Object.fromEntries(hist.body.data.map((h: any) => [h.bundle_version, h.reason]));
    assert.equal(reasons[v1], 'experiment.started:onboarding_len');
    assert.equal(reasons[v2], 'experiment.updated:onboarding_len');
    assert.equal(reasons[v3], 'experiment.stopped:onboarding_len');
    assert.equal(reasons[v4], 'experiment.shipped:onboarding_len');

    // Rolling the release back serves the running experiment again.
    const rb = await suite.c.post('/api/v1/sdk/config-bundle/rollback', { bundle_version: v1 }, suite.t.console);
    assert.equal(rb.status, 201, rb.text);
    const back = await bundle();
    assert.ok(back.bundle_version > v4);
    assert.equal(back.content.experiments.onboarding_len.status, 'running');
    assert.equal(back.content.experiments.onboarding_len.coverage_pct, 30);

    // experiment.shipped reaches its subscriber, signed; experiment.exposure still does.
    await suite.c.post(
      '/api/v1/ingest/events',
      {
        batch: [
          makeEvent({
            event_name: 'experiment_exposure',
            properties: { experiment_id: 'onboarding_len', variant: 'yearly' },
            context: { session_id: randomUUID(), experiment_exposures: [{ exp: 'onboarding_len', variant: 'yearly' }] },
          }),
        ],
      },
      { 'x-api-key': suite.t.live.public_key },
    );
    await waitFor(() => rx.at('/shipped').length >= 2, 'experiment.shipped and experiment.exposure deliveries');
    const ship = rx.at('/shipped').find((r) => r.json.type === 'experiment.shipped')!;
    verify(hook.body.data.secret, ship);
    assert.equal(ship.json.data.app_id, suite.t.appId);
    assert.equal(ship.json.data.experiment.id, x.id);
    assert.equal(ship.json.data.shipped_variant, 'yearly');
    assert.deepEqual(ship.json.data.value, { paywall: 'yearly_first' });
    assert.ok(rx.at('/shipped').some((r) => r.json.type === 'experiment.exposure'));

    // Deleting a started experiment takes it out of the bundle in a new version.
    const del = await suite.c.del(`/api/v1/experiments/${x.id}`, admin);
    assert.equal(del.status, 200);
    assert.ok(del.body.bundle_version > back.bundle_version);
    assert.equal((await bundle()).content.experiments?.onboarding_len, undefined);
  });
});
