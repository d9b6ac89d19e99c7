import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { client, createTenant, type Tenant } from './helpers/client.js';
import { startTestServer } from './helpers/server.js';
import { useTenantApp } from './helpers/suite.js';

const suite = useTenantApp();

const live = () => ({ 'x-api-key': suite.t.live.public_key });

async function publishPaywall(tenant: Tenant, name: string, extra: Record<string, unknown> = {}) {
  const p = await suite.c.post('/api/v1/paywalls', { name, ...extra }, tenant.console);
  assert.equal(p.status, 201);
  const r = await suite.c.post(`/api/v1/paywalls/${p.body.data.id}/publish`, {}, tenant.console);
  assert.equal(r.status, 200);
  return { id: p.body.data.id as string, version: r.body.bundle_version as number };
}

describe('SDK reads', () => {
  it('before any content, the first read answers version 1 with empty content; version agrees', async () => {
    const fresh = await createTenant(suite.c);
    const key = { 'x-api-key': fresh.sandbox.public_key };
    const v = await suite.c.get('/api/v1/sdk/config-bundle/version', key);
    assert.equal(v.status, 200);
    assert.deepEqual(Object.keys(v.body.data).sort(), ['bundle_version', 'generated_at', 'sdk_min_version']);
    assert.equal(v.body.data.bundle_version, 1);
    assert.equal(v.body.data.sdk_min_version, '1.0.0');
    const b = await suite.c.get('/api/v1/sdk/config-bundle', key);
    assert.equal(b.status, 200);
    assert.match(b.headers.get('content-type')!, /application\/json/);
    assert.deepEqual(b.body.data.content, {
      onboarding_flows: {},
      paywalls: {},
      remote_config: {},
      feature_flags: {},
      in_app_messages: {},
    });
    assert.equal(b.body.data.bundle_version, 1);
    assert.equal(b.body.data.generated_at, v.body.data.generated_at);
    assert.equal(b.body.data.size_bytes, Buffer.byteLength(JSON.stringify(b.body.data.content)));
  });

  it('the version endpoint agrees with the bundle after changes; sandbox and production keys read the same bundle', async () => {
    const { version } = await publishPaywall(suite.t, 'agree');
    const v = await suite.c.get('/api/v1/sdk/config-bundle/version', live());
    const b = await suite.c.get('/api/v1/sdk/config-bundle', live());
    const sb = await suite.c.get('/api/v1/sdk/config-bundle', { 'x-api-key': suite.t.sandbox.public_key });
    assert.equal(v.body.data.bundle_version, version);
    assert.equal(b.body.data.bundle_version, version);
    assert.equal(v.body.data.sdk_min_version, b.body.data.sdk_min_version);
    assert.equal(v.body.data.generated_at, b.body.data.generated_at);
    assert.equal(sb.text, b.text);
    assert.equal(sb.headers.get('etag'), b.headers.get('etag'));
    assert.equal(v.body.data.content, undefined);
  });

  it('strong ETag with If-None-Match -> 304, and a new version changes the tag', async () => {
    const b = await suite.c.get('/api/v1/sdk/config-bundle', live());
    const etag = b.headers.get('etag')!;
    assert.match(etag, /^"[^"]+"$/);
    const nm = await suite.c.get('/api/v1/sdk/config-bundle', { ...live(), 'if-none-match': etag });
    assert.equal(nm.status, 304);
    assert.equal(nm.text, '');
    assert.equal(nm.headers.get('etag'), etag);
    assert.equal(
      (await suite.c.get('/api/v1/sdk/config-bundle', { ...live(), 'if-none-match': '"other", ' + etag })).status,
      304,
    );
    assert.equal(
      (await suite.c.get('/api/v1/sdk/config-bundle', { ...live(), 'if-none-match': '"nope"' })).status,
      200,
    );
    const v = await suite.c.get('/api/v1/sdk/config-bundle/version', live());
    assert.notEqual(v.headers.get('etag'), etag);
    assert.equal(
      (await suite.c.get('/api/v1/sdk/config-bundle/version', { ...live(), 'if-none-match': v.headers.get('etag')! }))
        .status,
      304,
    );

    await publishPaywall(suite.t, 'newer');
    const again = await suite.c.get('/api/v1/sdk/config-bundle', { ...live(), 'if-none-match': etag });
    assert.equal(again.status, 200);
    assert.notEqual(again.headers.get('etag'), etag);
  });

  it('compresses with br or gzip when asked, with its own tag; the 304 honours either', async () => {
    await publishPaywall(suite.t, 'big', { layout: { blob: 'abc '.repeat(5000) } });
    const plain = await fetch(`${suite.server.url}/api/v1/sdk/config-bundle`, {
      headers: { ...live(), 'accept-encoding': 'identity' },
    });
    const plainText = await plain.text();
    assert.equal(plain.headers.get('content-encoding'), null);
    for (const enc of ['gzip', 'br']) {
      const r = await fetch(`${suite.server.url}/api/v1/sdk/config-bundle`, {
        headers: { ...live(), 'accept-encoding': enc },
      });
      assert.equal(r.status, 200);
      assert.equal(r.headers.get('content-encoding'), enc);
      assert.match(r.headers.get('vary')!, /accept-encoding/i);
      assert.ok(Number(r.headers.get('content-length')) < plainText.length / 5, `${enc} body is compressed`);
      assert.equal(await r.text(), plainText); // fetch decodes it
      assert.notEqual(r.headers.get('etag'), plain.headers.get('etag'));
      const nm = await fetch(`${suite.server.url}/api/v1/sdk/config-bundle`, {
        headers: { ...live(), 'accept-encoding': enc, 'if-none-match': r.headers.get('etag')! },
      });
      assert.equal(nm.status, 304);
    }
  });

  it('needs an SDK key; another app key never sees this app bundle', async () => {
    assert.equal((await suite.c.get('/api/v1/sdk/config-bundle')).status, 401);
    assert.equal(
      (await suite.c.get('/api/v1/sdk/config-bundle/version', { 'x-api-key': 'svc_live_nope' })).status,
      401,
    );
    const mine = await publishPaywall(suite.t, 'mine-only');
    const other = await createTenant(suite.c);
    const theirs = await suite.c.get('/api/v1/sdk/config-bundle', { 'x-api-key': other.live.public_key });
    assert.equal(theirs.status, 200);
    assert.equal(theirs.body.data.content.paywalls[mine.id], undefined);
    assert.equal(JSON.stringify(theirs.body).includes(mine.id), false);
    // Their ETag never matches ours, though both apps share the URL.
    const ours = await suite.c.get('/api/v1/sdk/config-bundle', live());
    assert.equal(
      (
        await suite.c.get('/api/v1/sdk/config-bundle', {
          'x-api-key': other.live.public_key,
          'if-none-match': ours.headers.get('etag')!,
        })
      ).status,
      200,
    );
  });
});

describe('generation', () => {
  it('20 concurrent publishes give 20 distinct, increasing versions', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 20; i++)
      ids.push((await suite.c.post('/api/v1/onboarding-flows', { name: `flow ${i}` }, suite.t.console)).body.data.id);
    const before = (await suite.c.get('/api/v1/sdk/config-bundle/version', live())).body.data.bundle_version;
    const rs = await Promise.all(
      ids.map((id) => suite.c.post(`/api/v1/onboarding-flows/${id}/publish`, {}, suite.t.console)),
    );
    const versions = rs.map((r) => {
      assert.equal(r.status, 200);
      return r.body.bundle_version as number;
    });
    assert.equal(new Set(versions).size, 20);
    const sorted = [...versions].sort((a, b) => a - b);
    assert.deepEqual(
      sorted,
      Array.from({ length: 20 }, (_, i) => before + 1 + i),
    );
    const b = await suite.c.get('/api/v1/sdk/config-bundle', live());
    assert.equal(b.body.data.bundle_version, before + 20);
    for (const id of ids) assert.ok(b.body.data.content.onboarding_flows[id], 'the last version holds every flow');
    // Each version holds every flow published before it: version k has exactly k - before of them.
    const mid = await suite.c.get(`/api/v1/sdk/config-bundle/history/${before + 10}`, suite.t.console);
    assert.equal(Object.keys(mid.body.data.content.onboarding_flows).filter((id) => ids.includes(id)).length, 10);
  });

  it('POST generate answers 201 with the bundle; only admin+', async () => {
    const before = (await suite.c.get('/api/v1/sdk/config-bundle/version', live())).body.data.bundle_version;
    const g = await suite.c.post('/api/v1/sdk/config-bundle/generate', undefined, suite.t.console);
    assert.equal(g.status, 201);
    assert.equal(g.body.data.bundle_version, before + 1);
    assert.ok(g.body.data.content.paywalls);
    assert.equal(typeof g.body.data.size_bytes, 'number');
    assert.equal((await suite.c.get('/api/v1/sdk/config-bundle/version', live())).body.data.bundle_version, before + 1);
    for (const role of ['viewer', 'member'] as const) {
      const email = `${role}-${randomUUID()}@example.com`;
      const s = await suite.c.post('/api/v1/auth/signup', { email, password: 'long enough pw' });
      await suite.c.post(
        `/api/v1/organizations/${suite.t.orgId}/members`,
        { email, role },
        { authorization: `Bearer ${suite.t.token}` },
      );
      const h = { authorization: `Bearer ${s.body.token}`, 'x-tenant-id': suite.t.orgId, 'x-app-id': suite.t.appId };
      assert.equal((await suite.c.post('/api/v1/sdk/config-bundle/generate', undefined, h)).status, 403);
      assert.equal((await suite.c.post('/api/v1/sdk/config-bundle/rollback', { bundle_version: 1 }, h)).status, 403);
      assert.equal((await suite.c.get('/api/v1/sdk/config-bundle/history', h)).status, 200);
    }
    assert.equal((await suite.c.post('/api/v1/sdk/config-bundle/generate')).status, 401);
    // "No body": an empty body with a JSON content type is fine too.
    const empty = await suite.c.raw('POST', '/api/v1/sdk/config-bundle/generate', '', {
      ...suite.t.console,
      'content-type': 'application/json',
    });
    assert.equal(empty.status, 201);
    assert.equal(empty.body.data.bundle_version, before + 2);
  });
});

describe('history and rollback', () => {
  it('history pages by offset with bounds', async () => {
    const h = await suite.c.get('/api/v1/sdk/config-bundle/history', suite.t.console);
    assert.equal(h.status, 200);
    const total = h.body.meta.total;
    assert.ok(total > 20);
    assert.equal(h.body.data.length, 20);
    assert.deepEqual(h.body.meta, { total, limit: 20, offset: 0, hasMore: true });
    const row = h.body.data[0];
    for (const k of ['bundle_version', 'generated_at', 'size_bytes', 'sdk_min_version', 'reason'])
      assert.ok(k in row, k);
    assert.equal(row.bundle_version, total);
    assert.equal(row.current, true);
    assert.ok(
      h.body.data.every((r: any, i: number) => i === 0 || r.bundle_version < h.body.data[i - 1].bundle_version),
    );
    const tail = await suite.c.get(`/api/v1/sdk/config-bundle/history?limit=100&offset=${total - 3}`, suite.t.console);
    assert.deepEqual(
      tail.body.data.map((r: any) => r.bundle_version),
      [3, 2, 1],
    );
    assert.equal(tail.body.meta.hasMore, false);
    assert.equal(tail.body.data[2].reason, 'paywall.published');
    const past = await suite.c.get(`/api/v1/sdk/config-bundle/history?offset=${total + 5}`, suite.t.console);
    assert.deepEqual(past.body.data, []);
    for (const q of ['limit=101', 'limit=0', 'offset=-1', 'limit=abc'])
      assert.equal((await suite.c.get(`/api/v1/sdk/config-bundle/history?${q}`, suite.t.console)).status, 400, q);
    const other = await createTenant(suite.c);
    assert.equal((await suite.c.get('/api/v1/sdk/config-bundle/history', other.console)).body.meta.total, 0);
  });

  it('rollback makes a new, higher version with the earlier content; unknown versions 404', async () => {
    const put = await suite.c.put('/api/v1/remote-config', { values: { color: 'red' } }, suite.t.console);
    const target = put.body.bundle_version;
    const targetBody = (await suite.c.get(`/api/v1/sdk/config-bundle/history/${target}`, suite.t.console)).body.data;
    await suite.c.put('/api/v1/remote-config', { values: { color: 'blue' } }, suite.t.console);
    const rb = await suite.c.post('/api/v1/sdk/config-bundle/rollback', { bundle_version: target }, suite.t.console);
    assert.equal(rb.status, 201);
    assert.equal(rb.body.data.bundle_version, target + 2);
    assert.deepEqual(rb.body.data.content, targetBody.content);
    const b = await suite.c.get('/api/v1/sdk/config-bundle', live());
    assert.equal(b.body.data.bundle_version, target + 2);
    assert.deepEqual(b.body.data.content.remote_config, { color: 'red' });
    const h = await suite.c.get('/api/v1/sdk/config-bundle/history?limit=1', suite.t.console);
    assert.equal(h.body.data[0].reason, 'rollback');
    assert.equal(h.body.data[0].rolled_back_from, target);
    assert.equal(
      (await suite.c.post('/api/v1/sdk/config-bundle/rollback', { bundle_version: 99999 }, suite.t.console)).status,
      404,
    );
    assert.equal(
      (await suite.c.post('/api/v1/sdk/config-bundle/rollback', { bundle_version: 0 }, suite.t.console)).status,
      400,
    );
    assert.equal((await suite.c.post('/api/v1/sdk/config-bundle/rollback', {}, suite.t.console)).status, 400);
    // Another app cannot roll back to (or read) this app's versions.
    const other = await createTenant(suite.c);
    assert.equal(
      (await suite.c.post('/api/v1/sdk/config-bundle/rollback', { bundle_version: target }, other.console)).status,
      404,
    );
    assert.equal((await suite.c.get(`/api/v1/sdk/config-bundle/history/${target}`, other.console)).status, 404);
    // The 404 did not use up a version number.
    assert.equal(
      (await suite.c.post('/api/v1/sdk/config-bundle/generate', undefined, suite.t.console)).body.data.bundle_version,
      target + 3,
    );
  });
});

describe('across instances', () => {
  it("a second instance's cache sees a version made on the first", async () => {
    const url = suite.server.db.options.connectionString!;
    const second = await startTestServer({}, url);
    try {
      const c2 = client(second.url);
      await c2.get('/api/v1/sdk/config-bundle/version', live()); // starts LISTEN on the second instance
      await sleep(300);
      // Now cached there and fresh: without the NOTIFY it would be served for up to the 30 s safety TTL.
      const v1 = (await c2.get('/api/v1/sdk/config-bundle/version', live())).body.data.bundle_version;
      const { version } = await publishPaywall(suite.t, 'cross-instance');
      assert.ok(version > v1);
      const t0 = Date.now();
      let seen = 0;
      for (let i = 0; i < 100 && seen !== version; i++) {
        seen = (await c2.get('/api/v1/sdk/config-bundle/version', live())).body.data.bundle_version;
        if (seen !== version) await sleep(10);
      }
      assert.equal(seen, version);
      assert.ok(
        Date.now() - t0 < 500,
        `seen after ${Date.now() - t0} ms: the notification, not the TTL, invalidated it`,
      );
      const b = await c2.get('/api/v1/sdk/config-bundle', live());
      assert.equal(b.body.data.bundle_version, version);
    } finally {
      await second.stop();
    }
  });
});

describe('documentation', () => {
  it('the OpenAPI document lists the bundle and content endpoints', async () => {
    const doc = await suite.c.get('/docs/json');
    assert.equal(doc.status, 200);
    for (const p of [
      '/api/v1/sdk/config-bundle',
      '/api/v1/sdk/config-bundle/version',
      '/api/v1/sdk/config-bundle/history',
      '/api/v1/sdk/config-bundle/rollback',
      '/api/v1/paywalls/{id}/publish',
      '/api/v1/feature-flags/{key}',
      '/api/v1/remote-config',
    ]) {
      assert.ok(doc.body.paths[p], p);
    }
  });
});
