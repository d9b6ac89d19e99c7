import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createSecretBox } from '../src/lib/secret-box.js';
import { createActivityStore } from '../src/modules/activity/store.js';
import { createWebhookService } from '../src/modules/webhooks/service.js';
import { createWebhookStore } from '../src/modules/webhooks/store.js';
import { makeEvent } from './helpers/client.js';
import { sleep, startReceiver, waitFor, type Receiver } from './webhooks-receiver.js';
import { useTenantApp } from './helpers/suite.js';

const suite = useTenantApp({ ALLOW_PRIVATE_TARGETS: '0', WEBHOOK_RETRY_SCHEDULE: '60', WEBHOOK_POLL_MS: '50' });
let rx: Receiver;

before(async () => {
  rx = await startReceiver();
});
after(() => rx.close());

describe('private targets (ALLOW_PRIVATE_TARGETS=0)', () => {
  it('refuses loopback, private, link-local and metadata targets at creation and on update', async () => {
    const p = rx.port;
    const refused = [
      `http://127.0.0.1:${p}/hook`,
      `http://localhost:${p}/hook`,
      `http://LOCALHOST.:${p}/hook`,
      `http://[::1]:${p}/hook`,
      `http://[::ffff:127.0.0.1]:${p}/hook`,
      'http://127.1/hook',
      'http://0.0.0.0/hook',
      'http://10.0.0.8/hook',
      'http://172.16.5.4/hook',
      'http://192.168.1.1/hook',
      'http://169.254.169.254/latest/meta-data/',
      'http://[fd00::1]/hook',
      // /etc/hosts maps `vm` to 127.0.0.1: a name that resolves to loopback.
      `http://vm:${p}/hook`,
    ];
    for (const url of refused) {
      const r = await suite.c.post('/api/v1/webhooks', { url, events: ['onboarding.started'] }, suite.t.console);
      assert.equal(r.status, 400, url);
      assert.equal(r.body.code, 'validation_failed', url);
      assert.equal(r.body.errors[0].path, '/body/url', url);
    }
    // A public literal passes (nothing is sent at creation).
    const ok = await suite.c.post(
      '/api/v1/webhooks',
      { url: 'https://93.184.215.14/hook', events: ['onboarding.started'] },
      suite.t.console,
    );
    assert.equal(ok.status, 201);
    const patch = await suite.c.patch(
      `/api/v1/webhooks/${ok.body.data.id}`,
      { url: 'http://169.254.169.254/' },
      suite.t.console,
    );
    assert.equal(patch.status, 400);
    await suite.c.del(`/api/v1/webhooks/${ok.body.data.id}`, suite.t.console);
    assert.equal(rx.received.length, 0);
  });

  it('checks again at send time: an endpoint whose address turned private is refused on connect', async () => {
    // Rows written straight to the table stand in for a host whose DNS changed after creation.
    const ids: string[] = [];
    for (const url of [rx.url('/literal'), `http://localhost:${rx.port}/name`, `http://vm:${rx.port}/hosts`]) {
      const { rows } = await suite.server.db.query(
        `INSERT INTO webhook_endpoints (tenant_id, app_id, url, events, secret) VALUES ($1, $2, $3, '{onboarding.started}', 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw') RETURNING id`,
        [suite.t.orgId, suite.t.appId, url],
      );
      ids.push(rows[0].id);
    }
    await suite.c.post(
      '/api/v1/ingest/events',
      { batch: [makeEvent({ event_name: 'onboarding_flow_started' })] },
      { 'x-api-key': suite.t.live.public_key },
    );
    for (const id of ids) {
      const [d] = await waitFor(async () => {
        const list = (await suite.c.get(`/api/v1/webhooks/${id}/deliveries`, suite.t.console)).body.data;
        return list[0]?.last_error ? list : null;
      }, 'refused attempt');
      assert.equal(d.attempts, 1);
      assert.equal(d.last_status_code, null);
      assert.match(d.last_error, /refused/);
      assert.equal(d.status, 'pending', 'retried on the schedule like any failure');
    }
    // A redirect to a private address cannot happen either: redirects are never followed (see webhooks-delivery).
    assert.equal(rx.received.length, 0, 'nothing reached the private receiver');
  });

  it('refuses export callbacks to private targets at send time', async () => {
    const svc = createWebhookService({
      db: suite.server.db,
      store: createWebhookStore(suite.server.db, createSecretBox(suite.server.config.encryptionKey)),
      activity: createActivityStore(suite.server.db),
      allowPrivateTargets: false,
      scheduleS: [60],
    });
    await svc.sendCallback(
      { tenantId: suite.t.orgId, appId: suite.t.appId },
      {
        url: rx.url('/cb'),
        secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
        eventType: 'export.completed',
        body: { ok: true },
      },
    );
    const row = await waitFor(
      async () =>
        (
          await suite.server.db.query(
            `SELECT attempts, last_error FROM webhook_deliveries WHERE kind = 'callback' AND last_error IS NOT NULL`,
          )
        ).rows[0],
      'callback attempt',
    );
    assert.equal(row.attempts, 1);
    assert.match(row.last_error, /refused/);
    await sleep(200);
    assert.equal(rx.at('/cb').length, 0);
  });
});
