import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, describe, it } from 'node:test';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { client } from './helpers/client.js';
import { createTestDatabase, startTestServer, type TestServer } from './helpers/server.js';

const servers: TestServer[] = [];
after(async () => {
  for (const s of servers) await s.stop();
});

describe('start-up', () => {
  it('runs migrations safely when several instances start at once on a fresh database', async () => {
    const url = await createTestDatabase();
    // Every instance that started is stopped after the file, even when another failed to start.
    const starts = await Promise.allSettled([0, 1, 2].map(() => startTestServer({}, url)));
    for (const r of starts) if (r.status === 'fulfilled') servers.push(r.value);
    const started = starts.map((r) => {
      if (r.status === 'rejected') throw r.reason;
      return r.value;
    });
    const { rows } = await started[0].db.query(
      'SELECT count(*)::int AS n, count(DISTINCT name)::int AS d FROM schema_migrations',
    );
    assert.equal(rows[0].n, rows[0].d, 'each migration applied once');
    const keys = await started[0].db.query('SELECT count(*)::int AS n FROM signing_keys');
    assert.equal(keys.rows[0].n, 1, 'one signing key shared by all instances');
    // A token issued by one instance is accepted by another.
    const a = client(started[0].url);
    const b = client(started[2].url);
    const s = await a.post('/api/v1/auth/signup', { email: 'multi@example.com', password: 'long enough pw' });
    assert.equal((await b.get('/api/v1/me', { authorization: `Bearer ${s.body.token}` })).status, 200);
  });

  it('ROLE=worker serves no HTTP, ROLE=api runs no workers but serves', async () => {
    const worker = await startTestServer({ ROLE: 'worker' });
    servers.push(worker);
    assert.equal(worker.app, undefined);
    const api = await startTestServer({ ROLE: 'api' });
    servers.push(api);
    assert.equal((await client(api.url).get('/api/v1/ingest/health')).status, 200);
    assert.equal(api.config.runsWorkers, false);
  });
});

describe('external OpenID Connect issuer', () => {
  it('accepts tokens of a configured issuer via its JWKS and provisions the user by email', async () => {
    const { privateKey, publicKey } = await generateKeyPair('RS256');
    const jwk = { ...(await exportJWK(publicKey)), kid: 'ext-1', alg: 'RS256', use: 'sig' };
    const jwksServer = createServer((_req, res) => {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ keys: [jwk] }));
    });
    await new Promise<void>((r) => jwksServer.listen(0, '127.0.0.1', r));
    try {
      const issuer = 'https://idp.example.com/';
      const server = await startTestServer({
        OIDC_ISSUER: issuer,
        OIDC_JWKS_URL: `http://127.0.0.1:${(jwksServer.address() as AddressInfo).port}/jwks`,
        OIDC_AUDIENCE: 'console-client',
      });
      servers.push(server);
      const c = client(server.url);
      const sign = (over: { aud?: string; email?: string } = {}) =>
        new SignJWT({ email: over.email ?? 'ext@example.com' })
          .setProtectedHeader({ alg: 'RS256', kid: 'ext-1' })
          .setSubject('ext-subject-1')
          .setIssuer(issuer)
          .setAudience(over.aud ?? 'console-client')
          .setIssuedAt()
          .setExpirationTime('10m')
          .sign(privateKey);
      const me = await c.get('/api/v1/me', { authorization: `Bearer ${await sign()}` });
      assert.equal(me.status, 200);
      assert.equal(me.body.data.email, 'ext@example.com');
      const again = await c.get('/api/v1/me', { authorization: `Bearer ${await sign()}` });
      assert.equal(again.body.data.id, me.body.data.id, 'the same user on later calls');
      const wrongAud = await c.get('/api/v1/me', { authorization: `Bearer ${await sign({ aud: 'other' })}` });
      assert.equal(wrongAud.status, 401);
      // The built-in provider keeps working beside the external one.
      const local = await c.post('/api/v1/auth/signup', { email: 'local@example.com', password: 'long enough pw' });
      assert.equal((await c.get('/api/v1/me', { authorization: `Bearer ${local.body.token}` })).status, 200);
    } finally {
      jwksServer.close();
    }
  });
});
