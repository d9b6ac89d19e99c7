import assert from 'node:assert/strict';
import { test } from 'node:test';
import { useTenantApp } from './helpers/suite.js';

// Endpoints added for the console: members listed and removed, the funnel definitions, freshness meta.
const s = useTenantApp();
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

async function user(email: string) {
  const r = await s.c.post('/api/v1/auth/signup', { email, password: 'correct horse battery' });
  assert.equal(r.status, 201, r.text);
  return r.body as { token: string; user: { id: string } };
}

test('members: any member lists them; admins remove; owners only by owners; never the last owner', async () => {
  const { orgId, token } = s.t;
  const members = `/api/v1/organizations/${orgId}/members`;
  const admin = await user('console-admin@example.com');
  const viewer = await user('console-viewer@example.com');
  const outsider = await user('console-outsider@example.com');
  assert.equal(
    (await s.c.post(members, { email: 'console-admin@example.com', role: 'admin' }, bearer(token))).status,
    201,
  );
  assert.equal(
    (await s.c.post(members, { email: 'console-viewer@example.com', role: 'viewer' }, bearer(token))).status,
    201,
  );

  const list = await s.c.get(members, bearer(viewer.token));
  assert.equal(list.status, 200, list.text);
  assert.deepEqual(list.body.data.map((m: any) => m.role).sort(), ['admin', 'owner', 'viewer']);
  assert.equal((await s.c.get(members, bearer(outsider.token))).status, 403);

  assert.equal((await s.c.del(`${members}/${admin.user.id}`, bearer(viewer.token))).status, 403);
  assert.equal(
    (await s.c.del(`${members}/${s.t.userId}`, bearer(admin.token))).status,
    403,
    'an admin cannot remove an owner',
  );
  assert.equal((await s.c.del(`${members}/${outsider.user.id}`, bearer(token))).status, 404);
  const last = await s.c.del(`${members}/${s.t.userId}`, bearer(token));
  assert.equal(last.status, 409, last.text);
  assert.equal((await s.c.del(`${members}/${viewer.user.id}`, bearer(admin.token))).status, 204);
  assert.equal((await s.c.get(members, bearer(viewer.token))).status, 403, 'a removed member loses access at once');
  assert.equal((await s.c.get(members, bearer(token))).body.data.length, 2);
});

test('analytics: the nine funnel definitions with overrides, and freshness meta on every answer', async () => {
  const defs = await s.c.get('/api/v1/analytics/funnels', s.t.console);
  assert.equal(defs.status, 200, defs.text);
  assert.equal(defs.body.data.length, 9);
  assert.ok(defs.body.data.every((f: any) => f.overridden === false));
  const steps = [
    { name: 'open', event: 'app_open' },
    { name: 'paywall', event: 'paywall_view' },
  ];
  assert.equal((await s.c.put('/api/v1/analytics/funnels/onboarding', { steps }, s.t.console)).status, 200);
  const after = (await s.c.get('/api/v1/analytics/funnels', s.t.console)).body.data;
  assert.deepEqual(
    after.find((f: any) => f.funnel_name === 'onboarding'),
    { funnel_name: 'onboarding', steps, overridden: true },
  );

  for (const p of [
    '/api/v1/analytics/kpis',
    '/api/v1/analytics/retention',
    '/api/v1/analytics/funnel/onboarding',
    '/api/v1/analytics/kpis/timeseries?metrics=dau',
  ]) {
    const r = await s.c.get(p, s.t.console);
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(
      Object.keys(r.body.meta).sort(),
      ['as_of', 'folded_at', 'rebuilding', 'rollup_interval_s', 'timezone'],
      p,
    );
    assert.equal(r.body.meta.timezone, 'UTC');
  }
  // A fold records the timezone the app's rollups are built in; a change waits for the next fold's rebuild.
  const root = bearer((await user('root@example.com')).token);
  const fold = async () => assert.equal((await s.c.post('/api/v1/admin/analytics/rollup', {}, root)).status, 200);
  await fold();
  assert.equal((await s.c.patch('/api/v1/settings', { timezone: 'Asia/Tokyo' }, s.t.console)).status, 200);
  const meta = (await s.c.get('/api/v1/analytics/kpis', s.t.console)).body.meta;
  assert.deepEqual([meta.timezone, meta.rebuilding], ['Asia/Tokyo', true]);
  await fold();
  assert.equal((await s.c.get('/api/v1/analytics/retention', s.t.console)).body.meta.rebuilding, false);
});
