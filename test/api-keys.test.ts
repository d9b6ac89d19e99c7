import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { client, createTenant } from './helpers/client.js';
import { startTestServer } from './helpers/server.js';
import { useTenantApp } from './helpers/suite.js';

const suite = useTenantApp();

const boot = (key: string, cl = suite.c) => cl.get('/api/v1/sdk/bootstrap', { 'x-api-key': key });

describe('API keys', () => {
  it('creates keys whose prefix selects the environment and shows the secret once', async () => {
    assert.match(suite.t.live.public_key, /^svc_live_/);
    assert.match(suite.t.sandbox.public_key, /^svc_test_/);
    assert.match(suite.t.live.secret_key, /^sk_/);
    const list = await suite.c.get('/api/v1/sdk/api-keys', suite.t.console);
    assert.equal(list.status, 200);
    assert.equal(list.body.data.length, 2);
    for (const k of list.body.data) {
      assert.equal(k.secret_key, undefined, 'list never shows secrets');
      assert.equal(k.status, 'active');
      assert.deepEqual(k.permissions, ['export_data']);
    }
    const { rows } = await suite.server.db.query('SELECT secret_hash FROM api_keys WHERE id = $1', [suite.t.live.id]);
    assert.notEqual(rows[0].secret_hash, suite.t.live.secret_key, 'only a hash is stored');
    assert.equal(rows[0].secret_hash.length, 64);
  });

  it('rejects unknown permissions and environments', async () => {
    const r1 = await suite.c.post('/api/v1/sdk/api-keys', { environment: 'staging' }, suite.t.console);
    assert.equal(r1.status, 400);
    const r2 = await suite.c.post(
      '/api/v1/sdk/api-keys',
      { environment: 'production', permissions: ['root'] },
      suite.t.console,
    );
    assert.equal(r2.status, 400);
  });

  it('distinguishes missing, unknown and malformed keys', async () => {
    const missing = await suite.c.get('/api/v1/sdk/bootstrap');
    assert.equal(missing.status, 401);
    assert.equal(missing.body.code, 'missing_credentials');
    for (const key of ['svc_live_doesnotexist', 'garbage', 'svc_test_' + 'x'.repeat(200)]) {
      const r = await boot(key);
      assert.equal(r.status, 401);
      assert.equal(r.body.code, 'invalid_credentials');
    }
  });

  it('rotates without overlap: new key works, old key is revoked at once', async () => {
    const k = (await suite.c.post('/api/v1/sdk/api-keys', { environment: 'production', name: 'rot' }, suite.t.console))
      .body.data;
    assert.equal((await boot(k.public_key)).status, 200);
    const r = await suite.c.post(`/api/v1/sdk/api-keys/${k.id}/rotate`, {}, suite.t.console);
    assert.equal(r.status, 201);
    assert.match(r.body.data.public_key, /^svc_live_/);
    assert.ok(r.body.data.secret_key);
    assert.equal(r.body.data.name, 'rot');
    assert.equal((await boot(r.body.data.public_key)).status, 200);
    assert.equal((await boot(k.public_key)).status, 401);
    const again = await suite.c.post(`/api/v1/sdk/api-keys/${k.id}/rotate`, {}, suite.t.console);
    assert.equal(again.status, 409, 'a revoked key cannot be rotated again');
  });

  it('rotates with overlap: both keys work until the overlap ends', async () => {
    const k = (
      await suite.c.post(
        '/api/v1/sdk/api-keys',
        { environment: 'sandbox', permissions: ['export_data'] },
        suite.t.console,
      )
    ).body.data;
    const r = await suite.c.post(`/api/v1/sdk/api-keys/${k.id}/rotate`, { overlap_seconds: 2 }, suite.t.console);
    assert.equal(r.status, 201);
    assert.deepEqual(r.body.data.permissions, ['export_data']);
    assert.equal(r.body.data.environment, 'sandbox');
    assert.equal((await boot(k.public_key)).status, 200, 'old key still valid during overlap');
    assert.equal((await boot(r.body.data.public_key)).status, 200);
    const listed = (await suite.c.get('/api/v1/sdk/api-keys', suite.t.console)).body.data.find(
      (x: any) => x.id === k.id,
    );
    assert.equal(listed.status, 'active');
    assert.ok(listed.revokes_at);
    await sleep(2200);
    assert.equal((await boot(k.public_key)).status, 401, 'old key revoked after overlap');
    const after2 = (await suite.c.get('/api/v1/sdk/api-keys', suite.t.console)).body.data.find(
      (x: any) => x.id === k.id,
    );
    assert.equal(after2.status, 'revoked');
  });

  it('refuses overlap above 7 days', async () => {
    const r = await suite.c.post(
      `/api/v1/sdk/api-keys/${suite.t.live.id}/rotate`,
      { overlap_seconds: 604801 },
      suite.t.console,
    );
    assert.equal(r.status, 400);
  });

  it('a revoked key stops working within 5 seconds on every instance', async () => {
    const other = await startTestServer({}, suite.server.databaseUrl);
    try {
      const c2 = client(other.url);
      const k = (await suite.c.post('/api/v1/sdk/api-keys', { environment: 'production' }, suite.t.console)).body.data;
      assert.equal((await boot(k.public_key, c2)).status, 200, 'warm the other instance cache');
      const revokedAt = Date.now();
      assert.equal((await suite.c.del(`/api/v1/sdk/api-keys/${k.id}`, suite.t.console)).status, 200);
      assert.equal((await boot(k.public_key)).status, 401, 'the revoking instance refuses at once');
      let refusedAfter = -1;
      while (Date.now() - revokedAt < 6000) {
        if ((await boot(k.public_key, c2)).status === 401) {
          refusedAfter = Date.now() - revokedAt;
          break;
        }
        await sleep(200);
      }
      assert.ok(refusedAfter >= 0 && refusedAfter <= 5000, `refused after ${refusedAfter} ms`);
    } finally {
      await other.stop();
    }
  });
});

describe('bootstrap', () => {
  it('returns org, app, store path and sdk settings, cacheable 24 h', async () => {
    const r = await boot(suite.t.live.public_key);
    assert.equal(r.status, 200);
    assert.equal(r.body.orgId, suite.t.orgId);
    assert.equal(r.body.appId, suite.t.appId);
    assert.equal(r.body.environment, 'production');
    assert.equal(typeof r.body.storePath, 'string');
    assert.deepEqual(r.body.settings, { flushInterval: 30, batchSize: 20, configTTL: 3600 });
    assert.equal(r.body.runtime_lock, undefined);
    assert.equal(r.body.data, undefined, 'bootstrap is not wrapped in data');
    assert.match(r.headers.get('cache-control')!, /max-age=86400/);
    assert.equal(r.headers.get('ratelimit-limit'), '60');
  });

  it('reflects sdk_settings changed in app settings', async () => {
    const p = await suite.c.patch('/api/v1/settings', { sdk_settings: { batchSize: 50 } }, suite.t.console);
    assert.equal(p.status, 200);
    assert.deepEqual(p.body.data.sdk_settings, { flushInterval: 30, batchSize: 50, configTTL: 3600 });
    const r = await boot(suite.t.sandbox.public_key);
    assert.equal(r.body.settings.batchSize, 50);
    assert.equal(r.body.environment, 'sandbox');
  });

  it('limits each key to 60 requests per minute with 429 and Retry-After', async () => {
    const k = (await suite.c.post('/api/v1/sdk/api-keys', { environment: 'production' }, suite.t.console)).body.data;
    const statuses: number[] = [];
    for (let i = 0; i < 61; i++) statuses.push((await boot(k.public_key)).status);
    assert.equal(statuses.filter((s) => s === 200).length, 60);
    const last = await boot(k.public_key);
    assert.equal(last.status, 429);
    assert.equal(last.body.code, 'rate_limited');
    assert.ok(Number(last.headers.get('retry-after')) >= 1);
    assert.equal(last.headers.get('ratelimit-remaining'), '0');
    assert.equal((await boot(suite.t.live.public_key)).status, 200, 'other keys are not affected');
  });
});

describe('settings', () => {
  it('has the documented defaults and validates changes', async () => {
    const fresh = await createTenant(suite.c);
    const r = await suite.c.get('/api/v1/settings', fresh.console);
    assert.equal(r.status, 200);
    assert.equal(r.body.data.events_per_minute, 60000);
    assert.equal(r.body.data.sampling_rate, 1);
    assert.equal(r.body.data.timezone, 'UTC');
    assert.match(r.body.data.callback_signing_secret, /^whsec_/);
    assert.equal((await suite.c.patch('/api/v1/settings', { timezone: 'Mars/Olympus' }, fresh.console)).status, 400);
    assert.equal((await suite.c.patch('/api/v1/settings', { sampling_rate: 1.5 }, fresh.console)).status, 400);
    assert.equal((await suite.c.patch('/api/v1/settings', { events_per_minute: 0 }, fresh.console)).status, 400);
    const ok = await suite.c.patch(
      '/api/v1/settings',
      { timezone: 'Europe/Berlin', sampling_rate: 0.25 },
      fresh.console,
    );
    assert.equal(ok.status, 200);
    assert.equal(ok.body.data.timezone, 'Europe/Berlin');
    assert.equal(ok.body.data.sampling_rate, 0.25);
  });
});
