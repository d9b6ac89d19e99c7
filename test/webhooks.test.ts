import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { createSecretBox } from '../src/lib/secret-box.js';
import { createActivityStore } from '../src/modules/activity/store.js';
import { createWebhookService } from '../src/modules/webhooks/service.js';
import { createWebhookStore } from '../src/modules/webhooks/store.js';
import { createTenant, makeEvent } from './helpers/client.js';
import { startReceiver, verify, waitFor, type Receiver } from './webhooks-receiver.js';
import { useTenantApp } from './helpers/suite.js';

const suite = useTenantApp({ WEBHOOK_RETRY_SCHEDULE: '1,1,1', WEBHOOK_POLL_MS: '50' });
let rx: Receiver;

before(async () => {
  rx = await startReceiver();
});
after(() => rx.close());

const create = (body: unknown, headers = suite.t.console) => suite.c.post('/api/v1/webhooks', body, headers);
const ingest = (batch: unknown[], key = suite.t.live.public_key) =>
  suite.c.post('/api/v1/ingest/events', { batch }, { 'x-api-key': key });

describe('webhook endpoints: configuration', () => {
  it('creates an endpoint, shows the secret once, lists, reads, updates and deletes it', async () => {
    const r = await create({ url: rx.url('/crud'), events: ['onboarding.started'], description: 'crm' });
    assert.equal(r.status, 201);
    const w = r.body.data;
    assert.match(w.id, /^[0-9a-f-]{36}$/);
    assert.equal(w.url, rx.url('/crud'));
    assert.deepEqual(w.events, ['onboarding.started']);
    assert.equal(w.enabled, true);
    assert.match(w.secret, /^whsec_/);

    const list = await suite.c.get('/api/v1/webhooks', suite.t.console);
    assert.equal(list.status, 200);
    const listed = list.body.data.find((x: any) => x.id === w.id);
    assert.ok(listed);
    assert.equal(listed.secret, undefined, 'the secret is never shown again');
    const one = await suite.c.get(`/api/v1/webhooks/${w.id}`, suite.t.console);
    assert.equal(one.status, 200);
    assert.equal(one.body.data.secret, undefined);

    const p = await suite.c.patch(
      `/api/v1/webhooks/${w.id}`,
      { events: ['user.identified', 'experiment.exposure'], enabled: false, url: rx.url('/crud2') },
      suite.t.console,
    );
    assert.equal(p.status, 200);
    assert.deepEqual(p.body.data.events, ['user.identified', 'experiment.exposure']);
    assert.equal(p.body.data.enabled, false);
    assert.equal(p.body.data.url, rx.url('/crud2'));

    assert.equal((await suite.c.del(`/api/v1/webhooks/${w.id}`, suite.t.console)).status, 204);
    assert.equal((await suite.c.get(`/api/v1/webhooks/${w.id}`, suite.t.console)).status, 404);
    assert.equal((await suite.c.del(`/api/v1/webhooks/${w.id}`, suite.t.console)).status, 404);
  });

  it('refuses ad-network webhooks with 400 webhooks_not_supported', async () => {
    const r = await create({ url: rx.url(), events: ['ad_network.ad_disapproved'] });
    assert.equal(r.status, 400);
    assert.equal(r.body.code, 'webhooks_not_supported');
    assert.match(r.body.detail, /not supported for the ad network/i);
    const ok = await create({ url: rx.url(), events: ['onboarding.started'] });
    const p = await suite.c.patch(
      `/api/v1/webhooks/${ok.body.data.id}`,
      { events: ['onboarding.started', 'ad_network.daily_cap_hit'] },
      suite.t.console,
    );
    assert.equal(p.status, 400);
    assert.equal(p.body.code, 'webhooks_not_supported');
    await suite.c.del(`/api/v1/webhooks/${ok.body.data.id}`, suite.t.console);
  });

  it('validates url and events', async () => {
    for (const body of [
      { url: 'ftp://example.com/x', events: ['onboarding.started'] },
      { url: 'not a url', events: ['onboarding.started'] },
      { url: 'https://user:pw@example.com/x', events: ['onboarding.started'] },
      { url: rx.url(), events: [] },
      { url: rx.url(), events: ['onboarding.finished'] },
      { url: rx.url() },
      { url: 'https://example.com/' + 'a'.repeat(3000), events: ['onboarding.started'] },
    ]) {
      const r = await create(body);
      assert.equal(r.status, 400, JSON.stringify(body).slice(0, 80));
      assert.equal(r.body.code, 'validation_failed');
    }
  });

  it('is admin+ only, and another app answers 404', async () => {
    const email = `member-${randomUUID()}@example.com`;
    const m = await suite.c.post('/api/v1/auth/signup', { email, password: 'long enough pw' });
    assert.equal(
      (
        await suite.c.post(
          `/api/v1/organizations/${suite.t.orgId}/members`,
          { email, role: 'member' },
          { authorization: `Bearer ${suite.t.token}` },
        )
      ).status,
      201,
    );
    const asMember = {
      authorization: `Bearer ${m.body.token}`,
      'x-tenant-id': suite.t.orgId,
      'x-app-id': suite.t.appId,
    };
    assert.equal((await create({ url: rx.url(), events: ['onboarding.started'] }, asMember)).status, 403);
    assert.equal((await suite.c.get('/api/v1/webhooks', asMember)).status, 403);

    const mine = await create({ url: rx.url(), events: ['onboarding.started'] });
    const other = await createTenant(suite.c);
    assert.equal((await suite.c.get(`/api/v1/webhooks/${mine.body.data.id}`, other.console)).status, 404);
    assert.equal(
      (await suite.c.patch(`/api/v1/webhooks/${mine.body.data.id}`, { enabled: false }, other.console)).status,
      404,
    );
    assert.equal((await suite.c.get(`/api/v1/webhooks/${mine.body.data.id}/deliveries`, other.console)).status, 404);
    assert.equal((await suite.c.del(`/api/v1/webhooks/${mine.body.data.id}`, other.console)).status, 404);
    assert.ok(
      !(await suite.c.get('/api/v1/webhooks', other.console)).body.data.some((x: any) => x.id === mine.body.data.id),
    );
    await suite.c.del(`/api/v1/webhooks/${mine.body.data.id}`, suite.t.console);
  });
});

describe('fan-out and signed delivery', () => {
  it('delivers all four types, each only to its subscribers, signed per Standard Webhooks', async () => {
    const a = (await create({ url: rx.url('/a'), events: ['onboarding.started', 'user.identified'] })).body.data;
    const b = (
      await create({
        url: rx.url('/b'),
        events: ['onboarding.started', 'onboarding.completed', 'experiment.exposure', 'user.identified'],
      })
    ).body.data;
    const off = (await create({ url: rx.url('/off'), events: ['onboarding.started'] })).body.data;
    await suite.c.patch(`/api/v1/webhooks/${off.id}`, { enabled: false }, suite.t.console);
    const other = await createTenant(suite.c);
    const foreign = (await create({ url: rx.url('/foreign'), events: ['onboarding.started'] }, other.console)).body
      .data;

    const started = makeEvent({ event_name: 'onboarding_flow_started', properties: { flow_id: 'f1' } });
    const completed = makeEvent({ event_name: 'onboarding_flow_completed' });
    const exposure = makeEvent({ event_name: 'experiment_exposure', properties: { exp: 'e1', variant: 'b' } });
    const plain = makeEvent({ event_name: 'app_open' });
    const noConsent = makeEvent({ event_name: 'onboarding_flow_started', privacy: { consent: { analytics: false } } });
    assert.equal((await ingest([started, completed, exposure, plain, noConsent])).status, 202);
    const anon = randomUUID();
    const idr = await suite.c.post(
      '/api/v1/ingest/identify',
      { anon_id: anon, user_id: 'u-42', ts_ms: 1_700_000_000_000, traits: { plan: 'pro' } },
      { 'x-api-key': suite.t.live.public_key },
    );
    assert.equal(idr.status, 202);

    await waitFor(() => rx.at('/b').length >= 4 && rx.at('/a').length >= 2, 'deliveries to a and b');
    const types = (path: string) =>
      rx
        .at(path)
        .map((r) => r.json.type)
        .sort();
    assert.deepEqual(types('/b'), [
      'experiment.exposure',
      'onboarding.completed',
      'onboarding.started',
      'user.identified',
    ]);
    assert.deepEqual(types('/a'), ['onboarding.started', 'user.identified']);

    for (const r of rx.at('/a')) verify(a.secret, r);
    for (const r of rx.at('/b')) verify(b.secret, r);
    assert.throws(() => verify(a.secret, rx.at('/b')[0]), 'another endpoint secret does not verify');

    const s = rx.at('/b').find((r) => r.json.type === 'onboarding.started')!;
    assert.deepEqual(Object.keys(s.json), ['type', 'timestamp', 'environment', 'data']);
    assert.equal(s.json.environment, 'production');
    assert.ok(!Number.isNaN(Date.parse(s.json.timestamp)));
    assert.equal(s.json.data.app_id, suite.t.appId);
    assert.equal(s.json.data.event.event_id, started.event_id);
    assert.deepEqual(s.json.data.event.properties, { flow_id: 'f1' });
    assert.equal(s.headers['content-type'], 'application/json');
    assert.match(String(s.headers['webhook-signature']), /^v1,[A-Za-z0-9+/=]+$/);
    const ident = rx.at('/b').find((r) => r.json.type === 'user.identified')!;
    assert.deepEqual(ident.json.data, {
      app_id: suite.t.appId,
      anon_id: anon,
      user_id: 'u-42',
      traits: { plan: 'pro' },
      ts_ms: 1_700_000_000_000,
    });

    // Give stragglers a chance to (wrongly) arrive before asserting absence.
    await new Promise((r) => setTimeout(r, 400));
    assert.equal(rx.at('/b').length, 4);
    assert.equal(rx.at('/a').length, 2);
    assert.equal(rx.at('/off').length, 0, 'disabled endpoint gets nothing');
    assert.equal(rx.at('/foreign').length, 0, "another app's endpoint gets nothing");
    assert.equal(
      rx.received.filter((r) => r.json?.data?.event?.event_id === noConsent.event_id).length,
      0,
      'consent=false never leaves',
    );

    const log = await suite.c.get(`/api/v1/webhooks/${b.id}/deliveries`, suite.t.console);
    assert.equal(log.status, 200);
    assert.equal(log.body.meta.total, 4);
    for (const d of log.body.data) {
      assert.equal(d.status, 'succeeded');
      assert.equal(d.attempts, 1);
      assert.equal(d.last_status_code, 200);
      assert.equal(d.next_attempt_at, null);
      assert.ok(d.last_attempt_at && d.created_at && d.last_duration_ms >= 0);
      assert.equal(d.attempt_log.length, 1);
    }
    const ids = new Set(rx.at('/b').map((r) => r.headers['webhook-id']));
    assert.deepEqual(ids, new Set(log.body.data.map((d: any) => d.id)), 'webhook-id is the delivery id');
    const paged = await suite.c.get(`/api/v1/webhooks/${b.id}/deliveries?limit=3&offset=3`, suite.t.console);
    assert.equal(paged.body.data.length, 1);
    assert.deepEqual(paged.body.meta, { total: 4, limit: 3, offset: 3, hasMore: false });
    const one = await suite.c.get(`/api/v1/webhooks/${b.id}/deliveries/${log.body.data[0].id}`, suite.t.console);
    assert.equal(one.status, 200);
    assert.equal(typeof one.body.data.body, 'string');
    assert.equal(
      (await suite.c.get(`/api/v1/webhooks/${a.id}/deliveries/${log.body.data[0].id}`, suite.t.console)).status,
      404,
      'delivery of another endpoint',
    );
    assert.equal(foreign.enabled, true);
  });

  it('signs with both the old and the new secret for 24 h after a rotation', async () => {
    const w = (await create({ url: rx.url('/rot'), events: ['onboarding.completed'] })).body.data;
    const rot = await suite.c.post(`/api/v1/webhooks/${w.id}/rotate-secret`, {}, suite.t.console);
    assert.equal(rot.status, 200);
    const fresh = rot.body.data.secret;
    assert.match(fresh, /^whsec_/);
    assert.notEqual(fresh, w.secret);
    const until = Date.parse(rot.body.data.previous_secret_expires_at) - Date.now();
    assert.ok(until > 23.9 * 3600_000 && until <= 24 * 3600_000);
    await ingest([makeEvent({ event_name: 'onboarding_flow_completed' })]);
    const [r] = await waitFor(() => (rx.at('/rot').length ? rx.at('/rot') : null), 'rotated delivery');
    assert.equal(String(r.headers['webhook-signature']).split(' ').length, 2);
    verify(fresh, r);
    verify(w.secret, r);
    // Once the overlap is over only the new secret signs.
    await suite.server.db.query(
      `UPDATE webhook_endpoints SET previous_secret_expires_at = now() - interval '1 s' WHERE id = $1`,
      [w.id],
    );
    await ingest([makeEvent({ event_name: 'onboarding_flow_completed' })]);
    await waitFor(() => rx.at('/rot').length >= 2, 'second delivery');
    const second = rx.at('/rot')[1];
    assert.equal(String(second.headers['webhook-signature']).split(' ').length, 1);
    verify(fresh, second);
    assert.throws(() => verify(w.secret, second));
  });

  it('sends an export callback durably through the same machinery, body exactly as given', async () => {
    // The export module calls this function; here it is driven directly against the test database.
    const svc = createWebhookService({
      db: suite.server.db,
      store: createWebhookStore(suite.server.db, createSecretBox(suite.server.config.encryptionKey)),
      activity: createActivityStore(suite.server.db),
      allowPrivateTargets: true,
      scheduleS: [1, 1, 1],
    });
    rx.respond((r, n) => (r.path === '/cb' && n === 1 ? { status: 500 } : { status: 200 }));
    const body = {
      export_id: randomUUID(),
      status: 'completed',
      download_url: '/api/v1/sdk/events/export/bulk/x/download',
      nested: { b: 1, a: [2] },
    };
    await svc.sendCallback(
      { tenantId: suite.t.orgId, appId: suite.t.appId },
      {
        url: rx.url('/cb'),
        secret: 'whsec_' + Buffer.from('callback-secret-callback').toString('base64'),
        eventType: 'export.completed',
        body,
      },
    );
    await waitFor(() => rx.at('/cb').length >= 2, 'callback retried and delivered', 10_000);
    rx.respond(() => ({ status: 200 }));
    const [first, second] = rx.at('/cb');
    assert.equal(first.body, JSON.stringify(body));
    assert.equal(second.body, JSON.stringify(body));
    assert.equal(first.headers['webhook-id'], second.headers['webhook-id']);
    verify('whsec_' + Buffer.from('callback-secret-callback').toString('base64'), second);
    const row = await waitFor(
      async () =>
        (
          await suite.server.db.query(
            `SELECT status, attempts, kind, endpoint_id FROM webhook_deliveries WHERE id = $1 AND status = 'succeeded'`,
            [first.headers['webhook-id']],
          )
        ).rows[0],
      'callback row',
    );
    assert.deepEqual(row, { status: 'succeeded', attempts: 2, kind: 'callback', endpoint_id: null });
  });
});
