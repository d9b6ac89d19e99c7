import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { client, createTenant, type Client, type Tenant } from './helpers/client.js';
import { startTestServer, type TestServer } from './helpers/server.js';

let server: TestServer;
let c: Client;
let t: Tenant;
let member: Record<string, string>;
let viewer: Record<string, string>;

async function joinAs(role: 'member' | 'viewer' | 'admin') {
  const email = `${role}-${randomUUID()}@example.com`;
  const s = await c.post('/api/v1/auth/signup', { email, password: 'long enough pw' });
  assert.equal(
    (await c.post(`/api/v1/organizations/${t.orgId}/members`, { email, role }, { authorization: `Bearer ${t.token}` }))
      .status,
    201,
  );
  return { authorization: `Bearer ${s.body.token}`, 'x-tenant-id': t.orgId, 'x-app-id': t.appId };
}

before(async () => {
  server = await startTestServer();
  c = client(server.url);
  t = await createTenant(c);
  member = await joinAs('member');
  viewer = await joinAs('viewer');
});
after(() => server.stop());

const sdk = () => ({ 'x-api-key': t.live.public_key });
const bundle = async () => {
  const r = await c.get('/api/v1/sdk/config-bundle', sdk());
  assert.equal(r.status, 200);
  return r.body.data;
};

describe('content round-trips into the bundle', () => {
  it('onboarding flow: draft stays out, publish puts it in (answer carries the version), unpublish takes it out', async () => {
    const created = await c.post(
      '/api/v1/onboarding-flows',
      { name: 'Welcome', steps: [{ type: 'intro', title: 'Hi' }], settings: { skippable: true } },
      member,
    );
    assert.equal(created.status, 201);
    const id = created.body.data.id;
    assert.equal(created.body.data.status, 'draft');
    assert.deepEqual(created.body.data.steps, [{ type: 'intro', title: 'Hi' }]);
    assert.equal(created.body.data.created_by, created.body.data.updated_by);
    assert.equal((await bundle()).content.onboarding_flows[id], undefined);

    const pub = await c.post(`/api/v1/onboarding-flows/${id}/publish`, {}, t.console);
    assert.equal(pub.status, 200);
    assert.equal(pub.body.data.status, 'published');
    const v = pub.body.bundle_version;
    assert.equal(typeof v, 'number');
    assert.equal(pub.body.data.bundle_version, v);
    const b = await bundle();
    assert.equal(b.bundle_version, v);
    assert.deepEqual(b.content.onboarding_flows[id], {
      id,
      name: 'Welcome',
      steps: [{ type: 'intro', title: 'Hi' }],
      settings: { skippable: true },
      published_at: pub.body.data.published_at,
    });

    const un = await c.post(`/api/v1/onboarding-flows/${id}/unpublish`, {}, t.console);
    assert.equal(un.status, 200);
    assert.equal(un.body.bundle_version, v + 1);
    const b2 = await bundle();
    assert.equal(b2.bundle_version, v + 1);
    assert.equal(b2.content.onboarding_flows[id], undefined);
    // Unpublishing what is not published is a state conflict.
    assert.equal((await c.post(`/api/v1/onboarding-flows/${id}/unpublish`, {}, t.console)).status, 409);
  });

  it('paywall: publish, update while published (new version, new content), unpublish', async () => {
    const p = await c.post(
      '/api/v1/paywalls',
      {
        name: 'Main',
        layout: { template: 'hero' },
        plans: [{ sku: 'pro.month', price: 9.99 }],
        cta: { text: 'Go' },
        dismiss: false,
      },
      member,
    );
    assert.equal(p.status, 201);
    const id = p.body.data.id;
    const pub = await c.post(`/api/v1/paywalls/${id}/publish`, {}, t.console);
    const entry = (await bundle()).content.paywalls[id];
    assert.deepEqual(entry, {
      id,
      name: 'Main',
      layout: { template: 'hero' },
      plans: [{ sku: 'pro.month', price: 9.99 }],
      cta: { text: 'Go' },
      dismiss: false,
      published_at: pub.body.data.published_at,
    });

    const upd = await c.patch(`/api/v1/paywalls/${id}`, { cta: { text: 'Start trial' } }, t.console);
    assert.equal(upd.status, 200);
    assert.equal(upd.body.bundle_version, pub.body.bundle_version + 1);
    const b = await bundle();
    assert.equal(b.bundle_version, upd.body.bundle_version);
    assert.deepEqual(b.content.paywalls[id].cta, { text: 'Start trial' });
    assert.deepEqual(b.content.paywalls[id].plans, [{ sku: 'pro.month', price: 9.99 }]);

    await c.post(`/api/v1/paywalls/${id}/unpublish`, {}, t.console);
    assert.equal((await bundle()).content.paywalls[id], undefined);
  });

  it('in-app message: publish and delete while published both make versions', async () => {
    const m = await c.post(
      '/api/v1/in-app-messages',
      {
        name: 'Promo',
        message_type: 'banner',
        content: { title: 'Sale' },
        trigger_rules: { event: 'app_open' },
        audience: { country: ['US'] },
        priority: 5,
      },
      member,
    );
    assert.equal(m.status, 201);
    const id = m.body.data.id;
    const pub = await c.post(`/api/v1/in-app-messages/${id}/publish`, {}, t.console);
    assert.deepEqual((await bundle()).content.in_app_messages[id], {
      id,
      name: 'Promo',
      message_type: 'banner',
      content: { title: 'Sale' },
      trigger_rules: { event: 'app_open' },
      audience: { country: ['US'] },
      priority: 5,
    });
    // A member may not delete what is live.
    assert.equal((await c.del(`/api/v1/in-app-messages/${id}`, member)).status, 403);
    const del = await c.del(`/api/v1/in-app-messages/${id}`, t.console);
    assert.equal(del.status, 200);
    assert.equal(del.body.bundle_version, pub.body.bundle_version + 1);
    assert.equal((await bundle()).content.in_app_messages[id], undefined);
    assert.equal((await c.get(`/api/v1/in-app-messages/${id}`, t.console)).status, 404);
  });

  it('remote config: each change is a version; an identical PUT is not', async () => {
    const put = await c.put(
      '/api/v1/remote-config',
      { values: { theme: 'dark', max_items: 5, nested: { a: [1, 2] } } },
      t.console,
    );
    assert.equal(put.status, 200);
    const v = put.body.bundle_version;
    assert.equal(typeof v, 'number');
    assert.deepEqual((await bundle()).content.remote_config, { theme: 'dark', max_items: 5, nested: { a: [1, 2] } });
    const same = await c.put(
      '/api/v1/remote-config',
      { values: { theme: 'dark', max_items: 5, nested: { a: [1, 2] } } },
      t.console,
    );
    assert.equal(same.status, 200);
    assert.equal(same.body.bundle_version, undefined);
    assert.equal((await bundle()).bundle_version, v);
    const put2 = await c.put('/api/v1/remote-config', { values: { theme: 'light' } }, t.console);
    assert.equal(put2.body.bundle_version, v + 1);
    assert.deepEqual((await bundle()).content.remote_config, { theme: 'light' });
    assert.deepEqual((await c.get('/api/v1/remote-config', viewer)).body.data.values, { theme: 'light' });
    assert.equal((await c.put('/api/v1/remote-config', { values: { 'bad key!': 1 } }, t.console)).status, 400);
    assert.equal((await c.put('/api/v1/remote-config', { values: { x: 1 } }, member)).status, 403);
  });

  it('feature flags: put, change, delete each make a version; rules and rollout are in the bundle', async () => {
    const put = await c.put(
      '/api/v1/feature-flags/new_checkout',
      { enabled: true, rules: [{ attribute: 'country', op: 'in', values: ['US'] }], rollout_pct: 25 },
      t.console,
    );
    assert.equal(put.status, 200);
    assert.deepEqual((await bundle()).content.feature_flags.new_checkout, {
      key: 'new_checkout',
      enabled: true,
      rules: [{ attribute: 'country', op: 'in', values: ['US'] }],
      rollout_pct: 25,
    });
    const off = await c.put('/api/v1/feature-flags/new_checkout', { enabled: false }, t.console);
    assert.equal(off.body.bundle_version, put.body.bundle_version + 1);
    assert.deepEqual((await bundle()).content.feature_flags.new_checkout, {
      key: 'new_checkout',
      enabled: false,
      rules: [],
      rollout_pct: 100,
    });
    assert.equal((await c.get('/api/v1/feature-flags', viewer)).body.meta.total, 1);
    const del = await c.del('/api/v1/feature-flags/new_checkout', t.console);
    assert.equal(del.body.bundle_version, off.body.bundle_version + 1);
    assert.equal((await bundle()).content.feature_flags.new_checkout, undefined);
    assert.equal((await c.del('/api/v1/feature-flags/new_checkout', t.console)).status, 404);
    assert.equal((await c.put('/api/v1/feature-flags/x', { enabled: true, rollout_pct: 101 }, t.console)).status, 400);
    assert.equal((await c.put('/api/v1/feature-flags/x', { enabled: true }, member)).status, 403);
  });
});

describe('roles, bounds and isolation', () => {
  it('viewer cannot create; viewer and member cannot publish; member cannot edit published content', async () => {
    assert.equal((await c.post('/api/v1/paywalls', { name: 'V' }, viewer)).status, 403);
    const p = await c.post('/api/v1/paywalls', { name: 'Roles' }, member);
    const id = p.body.data.id;
    assert.equal((await c.post(`/api/v1/paywalls/${id}/publish`, {}, viewer)).status, 403);
    assert.equal((await c.post(`/api/v1/paywalls/${id}/publish`, {}, member)).status, 403);
    assert.equal((await c.patch(`/api/v1/paywalls/${id}`, { name: 'Roles 2' }, member)).status, 200);
    assert.equal((await c.post(`/api/v1/paywalls/${id}/publish`, {}, t.console)).status, 200);
    const r = await c.patch(`/api/v1/paywalls/${id}`, { name: 'Roles 3' }, member);
    assert.equal(r.status, 403);
    assert.equal(r.body.code, 'forbidden');
    assert.equal((await c.get(`/api/v1/paywalls/${id}`, viewer)).body.data.name, 'Roles 2');
  });

  it('validates names, versions and sizes; free-form JSON is bounded at 256 KB per item', async () => {
    assert.equal((await c.post('/api/v1/paywalls', { name: '' }, member)).status, 400);
    assert.equal((await c.post('/api/v1/paywalls', { name: 'x'.repeat(201) }, member)).status, 400);
    assert.equal((await c.post('/api/v1/paywalls', { name: 'ok', sdk_min_version: 'latest' }, member)).status, 400);
    assert.equal(
      (await c.post('/api/v1/paywalls', { name: 'ok', plans: Array.from({ length: 51 }, () => ({})) }, member)).status,
      400,
    );
    assert.equal((await c.post('/api/v1/in-app-messages', { name: 'ok', priority: 'high' }, member)).status, 400);
    const big = await c.post('/api/v1/paywalls', { name: 'big', layout: { blob: 'x'.repeat(270 * 1024) } }, member);
    assert.equal(big.status, 413);
    assert.match(big.headers.get('content-type')!, /problem\+json/);
    const fits = await c.post('/api/v1/paywalls', { name: 'fits', layout: { blob: 'x'.repeat(200 * 1024) } }, member);
    assert.equal(fits.status, 201);
    let deep: unknown = {};
    for (let i = 0; i < 40; i++) deep = { d: deep };
    assert.equal((await c.post('/api/v1/onboarding-flows', { name: 'deep', settings: deep }, member)).status, 400);
    assert.equal((await c.get('/api/v1/paywalls/not-a-uuid', member)).status, 400);
  });

  it("another app's items answer 404 and its key never sees them", async () => {
    const other = await createTenant(c);
    const p = await c.post('/api/v1/paywalls', { name: 'Secret' }, t.console);
    const id = p.body.data.id;
    await c.post(`/api/v1/paywalls/${id}/publish`, {}, t.console);
    assert.equal((await c.get(`/api/v1/paywalls/${id}`, other.console)).status, 404);
    assert.equal((await c.patch(`/api/v1/paywalls/${id}`, { name: 'x' }, other.console)).status, 404);
    assert.equal((await c.post(`/api/v1/paywalls/${id}/unpublish`, {}, other.console)).status, 404);
    assert.equal((await c.del(`/api/v1/paywalls/${id}`, other.console)).status, 404);
    const theirs = await c.get('/api/v1/sdk/config-bundle', { 'x-api-key': other.live.public_key });
    assert.equal(theirs.status, 200);
    assert.equal(theirs.body.data.content.paywalls[id], undefined);
    assert.deepEqual(theirs.body.data.content.paywalls, {});
  });

  it('lists page by offset, filter by status, and record activity for every change', async () => {
    const list = await c.get('/api/v1/paywalls?limit=2&offset=0', viewer);
    assert.equal(list.status, 200);
    assert.equal(list.body.data.length, 2);
    assert.equal(list.body.meta.limit, 2);
    assert.equal(list.body.meta.hasMore, true);
    const pub = await c.get('/api/v1/paywalls?status=published&limit=100', viewer);
    assert.ok(pub.body.data.every((p: any) => p.status === 'published'));
    assert.equal((await c.get('/api/v1/paywalls?limit=101', viewer)).status, 400);
    const acts = await server.db.query(`SELECT entity_type, action FROM activity WHERE app_id = $1`, [t.appId]);
    const seen = new Set(acts.rows.map((r) => `${r.entity_type}:${r.action}`));
    for (const k of [
      'paywall:created',
      'paywall:published',
      'paywall:updated',
      'paywall:unpublished',
      'in_app_message:deleted',
      'onboarding_flow:published',
      'remote_config:updated',
      'feature_flag:created',
      'feature_flag:deleted',
      'config_bundle:generated',
    ]) {
      assert.ok(seen.has(k), `activity ${k} missing`);
    }
  });

  it('sdk_min_version is the highest any published item declares, with the app floor', async () => {
    const a = await createTenant(c);
    const key = { 'x-api-key': a.live.public_key };
    assert.equal((await c.get('/api/v1/sdk/config-bundle/version', key)).body.data.sdk_min_version, '1.0.0');
    const f1 = await c.post('/api/v1/onboarding-flows', { name: 'a', sdk_min_version: '2.10.0' }, a.console);
    const f2 = await c.post('/api/v1/paywalls', { name: 'b', sdk_min_version: '2.9.5' }, a.console);
    await c.post(`/api/v1/onboarding-flows/${f1.body.data.id}/publish`, {}, a.console);
    await c.post(`/api/v1/paywalls/${f2.body.data.id}/publish`, {}, a.console);
    assert.equal((await c.get('/api/v1/sdk/config-bundle/version', key)).body.data.sdk_min_version, '2.10.0');
    const floor = await c.put('/api/v1/sdk/config-bundle/settings', { sdk_min_version: '3.0.0' }, a.console);
    assert.equal(floor.status, 200);
    assert.equal(typeof floor.body.data.bundle_version, 'number');
    assert.equal((await c.get('/api/v1/sdk/config-bundle', key)).body.data.sdk_min_version, '3.0.0');
    await c.put('/api/v1/sdk/config-bundle/settings', { sdk_min_version: null }, a.console);
    await c.post(`/api/v1/onboarding-flows/${f1.body.data.id}/unpublish`, {}, a.console);
    assert.equal((await c.get('/api/v1/sdk/config-bundle/version', key)).body.data.sdk_min_version, '2.9.5');
  });
});

describe('option sets inside flows', () => {
  it('a flow step referencing a set carries its first page; a sync of that set makes a new version', async () => {
    const a = await createTenant(c);
    const pair = { 'x-api-key': a.live.public_key, 'x-api-secret': a.live.secret_key };
    const key = { 'x-api-key': a.live.public_key };
    const s1 = await c.post(
      '/api/v1/sdk/option-sets/cities/sync',
      { items: [{ value: 'berlin', label: 'Berlin' }] },
      pair,
    );
    assert.equal(s1.status, 200);
    const f = await c.post(
      '/api/v1/onboarding-flows',
      {
        name: 'Pick',
        steps: [
          { type: 'select', option_set_id: 'cities' },
          { type: 'select', option_set_id: 'missing' },
        ],
      },
      a.console,
    );
    const pub = await c.post(`/api/v1/onboarding-flows/${f.body.data.id}/publish`, {}, a.console);
    const flow = (await c.get('/api/v1/sdk/config-bundle', key)).body.data.content.onboarding_flows[f.body.data.id];
    assert.deepEqual(Object.keys(flow.option_sets), ['cities']);
    assert.equal(flow.option_sets.cities.version, s1.body.data.version);
    assert.equal(flow.option_sets.cities.items[0].value, 'berlin');
    assert.equal(flow.option_sets.cities.next_cursor, null);

    const s2 = await c.post(
      '/api/v1/sdk/option-sets/cities/sync',
      { items: [{ value: 'paris', label: 'Paris' }] },
      pair,
    );
    const after = (await c.get('/api/v1/sdk/config-bundle', key)).body.data;
    assert.equal(after.bundle_version, pub.body.bundle_version + 1);
    assert.equal(after.content.onboarding_flows[f.body.data.id].option_sets.cities.version, s2.body.data.version);
    // A set no published flow references does not touch the bundle.
    await c.post('/api/v1/sdk/option-sets/unrelated/sync', { items: [{ value: 'x', label: 'X' }] }, pair);
    assert.equal(
      (await c.get('/api/v1/sdk/config-bundle/version', key)).body.data.bundle_version,
      after.bundle_version,
    );
  });
});

describe('hostile input never reaches the database as a 500', () => {
  it('refuses NUL characters and unpaired surrogates with 400', async () => {
    const nul = await c.raw('POST', '/api/v1/paywalls', '{"name":"a\\u0000b"}', {
      ...t.console,
      'content-type': 'application/json',
    });
    assert.equal(nul.status, 400);
    const lone = await c.raw('POST', '/api/v1/onboarding-flows', '{"name":"ok","settings":{"k":"\\ud800"}}', {
      ...t.console,
      'content-type': 'application/json',
    });
    assert.equal(lone.status, 400);
    const key = await c.raw('PUT', '/api/v1/remote-config', '{"values":{"k":{"\\u0000":1}}}', {
      ...t.console,
      'content-type': 'application/json',
    });
    assert.equal(key.status, 400);
    const paired = await c.post('/api/v1/paywalls', { name: 'emoji 😀', layout: { t: '😀' } }, t.console);
    assert.equal(paired.status, 201);
    assert.equal(paired.body.data.layout.t, '😀');
  });
});
