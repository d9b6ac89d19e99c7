import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { client, createTenant, makeEvent, type Client, type Tenant } from './helpers/client.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { waitFor } from './webhooks-receiver.js';

/*
 * Issue 36: a person on two devices (identify links them) is erased by user_id from every store;
 * the KPIs afterwards equal those of a second app that was only ever sent the remaining events (an
 * independent route to the same numbers), and the person's later data is suppressed and counted.
 */

let server: TestServer;
let c: Client;
let t: Tenant;
let twin: Tenant;
let root: Record<string, string>;

const DAY = 86_400_000;
const base = Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), new Date().getUTCDate()) - 5 * DAY;
const iso = (ms: number) => new Date(ms).toISOString();
const USER = 'person-42@example.com';
const phone = randomUUID();
const tablet = randomUUID();
const others = [randomUUID(), randomUUID(), randomUUID()];

function ev(anon: string, name: string, at: number, extra: Record<string, any> = {}) {
  return makeEvent({
    event_name: name,
    ts_ms: at,
    user: { anon_id: anon, ...(extra.user_id ? { user_id: extra.user_id } : {}) },
    context: { session_id: extra.session ?? randomUUID() },
    properties: extra.properties ?? {},
  });
}

const EXPERIMENT = 'paywall-copy';
const exposure = (variant: string) => ({ experiment_id: EXPERIMENT, variant });
const experimentIds = new Map<Tenant, string>();

/** Events of the person (phone with user id, tablet anonymous) and of three other devices. */
function events() {
  const person = [
    ev(phone, 'app_open', base + 1000, { user_id: USER }),
    ev(phone, 'experiment_exposure', base + 1500, { user_id: USER, properties: exposure('control') }),
    ev(phone, 'onboarding_flow_started', base + 2000, { user_id: USER, properties: { flow_id: 'f1' } }),
    ev(phone, 'purchase_completed', base + DAY + 3000, {
      user_id: USER,
      properties: { product_id: 'pro', price: 9.99, currency: 'USD', period: 'P1M' },
    }),
    ev(tablet, 'app_open', base + 2 * DAY + 1000),
    ev(tablet, 'experiment_exposure', base + 2 * DAY + 1500, { properties: exposure('treatment') }),
    ev(tablet, 'paywall_view', base + 2 * DAY + 2000, {
      properties: { paywall_id: 'p1', option_set_id: 'cities', option_value: 'Zürich-only-person' },
    }),
  ];
  const rest = others.flatMap((d, i) => [
    ev(d, 'app_open', base + i * DAY + 500),
    ev(d, 'experiment_exposure', base + i * DAY + 550, { properties: exposure(i % 2 ? 'treatment' : 'control') }),
    ev(d, 'onboarding_flow_started', base + i * DAY + 600, { properties: { flow_id: 'f1' } }),
    ev(d, 'paywall_view', base + i * DAY + 700, { properties: { option_set_id: 'cities', option_value: 'Paris' } }),
    ...(i === 0
      ? [
          ev(d, 'purchase_completed', base + DAY + 800, {
            properties: { product_id: 'pro', price: 4.99, currency: 'USD', period: 'P1M' },
          }),
        ]
      : []),
  ]);
  return { person, rest };
}

const sdk = (k: Tenant) => ({ 'x-api-key': k.live.public_key });
async function ingest(k: Tenant, batch: unknown[]) {
  const r = await c.post('/api/v1/ingest/events', { batch }, sdk(k));
  assert.equal(r.status, 202, r.text);
  assert.equal(r.body.rejected, 0, r.text);
  return r.body;
}
async function fold() {
  const r = await c.post('/api/v1/admin/analytics/rollup', {}, root);
  assert.equal(r.status, 200, r.text);
}
async function foldExperiments() {
  const r = await c.post('/api/v1/admin/experiments/fold', {}, root);
  assert.equal(r.status, 200, r.text);
}
async function experimentResults(k: Tenant) {
  const r = await c.get(`/api/v1/experiments/${experimentIds.get(k)}/results?environment=production`, k.console);
  assert.equal(r.status, 200, r.text);
  const { experiment_id, as_of, ...numbers } = r.body.data;
  return numbers;
}
/** Every non-zero cell of every rollup histogram of the app, as the fold or an erasure left them. */
async function cells(k: Tenant) {
  const out: Record<string, unknown[]> = {};
  for (const table of [
    'an_active_hist',
    'an_session_hist',
    'an_cohort_hist',
    'an_onb_hist',
    'an_flag_hist',
    'an_rev_hist',
  ]) {
    const { rows } = await server.db.query(`SELECT * FROM ${table} WHERE app_id = $1`, [k.appId]);
    out[table] = rows
      .map(({ tenant_id, app_id, ...cell }) => cell)
      .filter((cell) =>
        Object.entries(cell).some(([col, v]) => ['n', 'dur', 'usd', 'mrr'].includes(col) && Number(v) !== 0),
      )
      .map((cell) => JSON.stringify(cell))
      .sort();
  }
  return out;
}
/** The onboarding funnel's users per step (a stored answer when there is one, docs/analytics.md). */
async function funnel(k: Tenant) {
  const r = await c.get('/api/v1/analytics/funnel/onboarding', k.console);
  assert.equal(r.status, 200, r.text);
  return r.body.steps.map((x: { users: number }) => x.users);
}
async function kpis(k: Tenant) {
  const q = `start_date=${iso(base).slice(0, 10)}&end_date=${iso(base + 6 * DAY).slice(0, 10)}`;
  const r = await c.get(`/api/v1/analytics/kpis?${q}`, k.console);
  assert.equal(r.status, 200, r.text);
  return Object.fromEntries(r.body.kpis.map((x: any) => [x.metric, x.current]));
}
/** The project's poll (webhooks-receiver.ts `waitFor`), with this file's patience. */
const until = <T>(what: string, f: () => Promise<T>, ms = 60_000) => waitFor(f, what, ms);
async function exported(k: Tenant): Promise<any[]> {
  const r = await c.get(
    `/api/v1/sdk/events/export?start_date=${iso(base - DAY)}&end_date=${iso(Date.now() + DAY)}&limit=1000`,
    sdk(k),
  );
  assert.equal(r.status, 200, r.text);
  return r.body.data;
}
const holdsPerson = (e: any) => e.user?.anon_id === phone || e.user?.anon_id === tablet || e.user?.user_id === USER;

before(async () => {
  // A short key cache: the deletion waits one TTL for every instance to see the suppression.
  server = await startTestServer({ KEY_CACHE_TTL_MS: '500', ROLLUP_INTERVAL_S: '3600' });
  c = client(server.url);
  t = await createTenant(c);
  twin = await createTenant(c);
  const signup = await c.post('/api/v1/auth/signup', { email: 'root@example.com', password: 'correct horse battery' });
  root = { authorization: `Bearer ${signup.body.token}` };
  // The same running experiment in both apps: its results are compared after the erasure.
  for (const k of [t, twin]) {
    const x = await c.post(
      '/api/v1/experiments',
      {
        key: EXPERIMENT,
        name: 'Paywall copy',
        variants: [
          { key: 'control', weight: 50, value: 'a' },
          { key: 'treatment', weight: 50, value: 'b' },
        ],
        attribution_days: 7,
        primary_metric: 'paid_conversion',
        secondary_metrics: ['revenue', 'onboarding_completed'],
      },
      k.console,
    );
    assert.equal(x.status, 201, x.text);
    assert.equal((await c.post(`/api/v1/experiments/${x.body.data.id}/start`, {}, k.console)).status, 200);
    experimentIds.set(k, x.body.data.id);
  }
});
after(() => server?.stop());

describe('privacy: erase a person everywhere', () => {
  it('erases by user_id from events, identity, webhooks, exports, locks and analytics, with a receipt', {
    timeout: 180_000,
  }, async () => {
    const { person, rest } = events();
    // Webhooks to a closed port: their deliveries wait for a retry, carrying the person's events.
    const hook = await c.post(
      '/api/v1/webhooks',
      { url: 'http://127.0.0.1:9/hook', events: ['onboarding.started', 'user.identified'] },
      t.console,
    );
    assert.equal(hook.status, 201, hook.text);
    await ingest(t, [...person, ...rest]);
    const id = await c.post(
      '/api/v1/ingest/identify',
      { anon_id: tablet, user_id: USER, ts_ms: base + 2 * DAY, traits: { plan: 'pro', email: USER } },
      sdk(t),
    );
    assert.equal(id.status, 202, id.text);
    const carrying = async () =>
      (
        await server.db.query(
          `SELECT (SELECT count(*) FROM outbox WHERE payload::text LIKE $1)
                + (SELECT count(*) FROM webhook_deliveries WHERE body LIKE $1) AS n`,
          [`%${phone}%`],
        )
      ).rows[0].n > 0;
    await until('the webhook copies of the person', carrying);

    // A bulk export holding the person's events.
    const bulk = await c.post(
      '/api/v1/sdk/events/export/bulk',
      { start_date: iso(base - DAY), end_date: iso(base + 6 * DAY) },
      sdk(t),
    );
    assert.equal(bulk.status, 202, bulk.text);
    const exportId = bulk.body.data.id;
    await until('the export', async () => {
      const r = await c.get(`/api/v1/sdk/events/export/bulk/${exportId}`, sdk(t));
      return r.body.data.status === 'completed';
    });
    const file = await c.get(`/api/v1/sdk/events/export/bulk/${exportId}/download`, sdk(t));
    assert.equal(file.status, 200);
    assert.ok(file.text.includes(phone), 'the export file holds the person');

    // The twin app is sent only what must remain; its KPIs are the independent recomputation.
    await ingest(
      twin,
      rest.map((e) => ({ ...e, event_id: randomUUID() })),
    );
    await fold();
    await foldExperiments();
    assert.ok((await exported(t)).some(holdsPerson), 'the person is in the export API before');
    const stored = await funnel(t); // an answer counting the person, stored

    const req = await c.post('/api/v1/privacy/deletions', { subjects: [{ user_id: USER }] }, t.console);
    assert.equal(req.status, 202, req.text);
    assert.equal(req.body.data.status, 'pending');
    assert.ok(!req.text.includes(USER), 'the answer names the subject by hash only');
    const done = await until('the deletion', async () => {
      const r = await c.get(`/api/v1/privacy/deletions/${req.body.data.id}`, t.console);
      assert.equal(r.status, 200, r.text);
      assert.notEqual(r.body.data.status, 'failed', r.text);
      return r.body.data.status === 'done' && r.body.data;
    });
    const stores = done.receipt.stores;
    assert.equal(done.receipt.verified, true);
    assert.equal(stores.events.deleted, person.length);
    assert.equal(stores.option_locks.deleted, 1, 'the lock only the person held');
    assert.ok(stores.identity.deleted >= 2, 'identify link, identity and traits');
    assert.ok(stores.webhooks.deleted >= 1);
    assert.equal(stores.exports.deleted, 1);
    assert.ok(stores.analytics.deleted >= 2, 'both devices had analytics rows');
    assert.ok(stores.experiments.deleted >= 3, "both devices' exposures and the phone's purchase");
    for (const s of Object.values<any>(stores)) {
      assert.equal(s.remaining, 0);
      assert.ok(Date.parse(s.finished_at) >= Date.parse(done.created_at));
    }
    assert.ok(!JSON.stringify(done).includes(USER) && !JSON.stringify(done).includes(phone));

    // Each store searched through its own route or table.
    assert.ok(!(await exported(t)).some(holdsPerson), 'export API');
    assert.equal((await exported(t)).length, rest.length);
    const gone = await c.get(`/api/v1/sdk/events/export/bulk/${exportId}/download`, sdk(t));
    assert.equal(gone.status, 409);
    assert.equal(gone.body.code, 'export_expired');
    const q = (sql: string, p: unknown[]) => server.db.query(sql, p).then((r) => Number(r.rows[0].n));
    assert.equal(await q('SELECT count(*) AS n FROM user_traits WHERE user_id = $1', [USER]), 0);
    assert.equal(await q('SELECT count(*) AS n FROM identity_links WHERE user_id = $1', [USER]), 0);
    assert.equal(
      await q('SELECT count(*) AS n FROM an_devices WHERE anon_id = ANY ($1::uuid[])', [[phone, tablet]]),
      0,
    );
    assert.equal(await q('SELECT count(*) AS n FROM webhook_deliveries WHERE body LIKE $1', [`%${phone}%`]), 0);
    assert.equal(await q("SELECT count(*) AS n FROM option_value_locks WHERE value = 'Zürich-only-person'", []), 0);
    assert.equal(
      await q("SELECT count(*) AS n FROM option_value_locks WHERE app_id = $1 AND value = 'Paris'", [t.appId]),
      1,
    );
    const files = await q('SELECT count(*) AS n FROM exports WHERE id = $1 AND file_deleted_at IS NOT NULL', [
      exportId,
    ]);
    assert.equal(files, 1, 'the export file is deleted');

    // Right away (no fold since), the stored funnel answer that counted the person is not served.
    assert.notDeepEqual(await funnel(t), stored);
    assert.deepEqual(await funnel(t), await funnel(twin));

    // The rollups after the erasure (the person's contributions subtracted, no rebuild) equal, cell by
    // cell, those the fold built for the app that only ever had the remaining events; so do the KPIs
    // and the experiment's results.
    await fold();
    await foldExperiments();
    assert.deepEqual(await cells(t), await cells(twin));
    assert.deepEqual(await kpis(t), await kpis(twin));
    assert.deepEqual(await experimentResults(t), await experimentResults(twin));
    assert.equal(
      (await experimentResults(t)).variants.reduce((n: number, v: any) => n + v.devices, 0),
      others.length,
    );

    // Later data of the person is dropped at the door, counted, and not retried.
    const later = await ingest(t, [
      ev(phone, 'app_open', Date.now() - 1000, { user_id: USER }),
      ev(others[0], 'app_open', Date.now() - 900),
    ]);
    assert.equal(later.suppressed, 1);
    const laterByTablet = await ingest(t, [ev(tablet, 'app_open', Date.now() - 800)]);
    assert.equal(laterByTablet.suppressed, 0, 'an anon id linked to the user is erased, not suppressed by itself');
    const again = await c.post('/api/v1/ingest/identify', { anon_id: phone, user_id: USER, ts_ms: Date.now() }, sdk(t));
    assert.equal(again.status, 202);
    assert.equal(again.body.suppressed, true);
    assert.equal(await q('SELECT count(*) AS n FROM identity_links WHERE user_id = $1', [USER]), 0);
  });

  it('lists and lifts suppressions, cancels a pending request, and is admin-only and tenant-scoped', async () => {
    const anon = randomUUID();
    const req = await c.post('/api/v1/privacy/deletions', { subjects: [{ anon_id: anon }] }, t.console);
    assert.equal(req.status, 202, req.text);
    const cancelled = await c.del(`/api/v1/privacy/deletions/${req.body.data.id}`, t.console);
    assert.equal(cancelled.status, 200, cancelled.text);
    assert.equal(cancelled.body.data.status, 'cancelled');
    assert.equal((await c.del(`/api/v1/privacy/deletions/${req.body.data.id}`, t.console)).status, 409);
    assert.equal((await c.get(`/api/v1/privacy/deletions/${req.body.data.id}`, twin.console)).status, 404);

    const hash = req.body.data.subjects[0].hash;
    const list = await c.get('/api/v1/privacy/suppressions', t.console);
    assert.ok(list.body.data.some((s: any) => s.hash === hash));
    // Each instance reloads an app's suppressions within KEY_CACHE_TTL_MS (500 ms here).
    await until(
      'the suppression to reach ingestion',
      async () => (await ingest(t, [ev(anon, 'app_open', Date.now() - 500)])).suppressed === 1,
    );
    assert.equal((await c.get(`/api/v1/privacy/suppressions/${hash}`, twin.console)).status, 404);
    assert.equal((await c.del(`/api/v1/privacy/suppressions/${hash}`, t.console)).status, 204);
    await until(
      'the lift to reach ingestion',
      async () => (await ingest(t, [ev(anon, 'app_open', Date.now() - 400)])).suppressed === 0,
    );

    const bad = await c.post('/api/v1/privacy/deletions', { subjects: [] }, t.console);
    assert.equal(bad.status, 400);
    const tooMany = Array.from({ length: 1001 }, () => ({ anon_id: randomUUID() }));
    assert.equal((await c.post('/api/v1/privacy/deletions', { subjects: tooMany }, t.console)).status, 400);
    const activity = await c.get('/api/v1/analytics/activity', t.console);
    assert.ok(activity.body.items.some((a: any) => a.action === 'deletion_requested'));
    assert.ok(activity.body.items.some((a: any) => a.action === 'suppression_lifted'));
  });
});
