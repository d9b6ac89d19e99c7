import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { SignJWT, decodeProtectedHeader, generateKeyPair, importJWK } from 'jose';
import { createTenant } from './helpers/client.js';
import { useTenantApp } from './helpers/suite.js';

const suite = useTenantApp();

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

describe('wire conventions', () => {
  it('echoes x-request-id and generates one when absent', async () => {
    const r1 = await suite.c.get('/api/v1/ingest/health', { 'x-request-id': 'abc-123' });
    assert.equal(r1.headers.get('x-request-id'), 'abc-123');
    const r2 = await suite.c.get('/api/v1/ingest/health');
    assert.match(r2.headers.get('x-request-id')!, /^[0-9a-f-]{36}$/);
  });

  it('health reports ok with version and database check', async () => {
    const r = await suite.c.get('/api/v1/ingest/health');
    assert.equal(r.status, 200);
    assert.equal(r.body.status, 'ok');
    assert.equal(r.body.checks.database, 'ok');
    assert.equal(typeof r.body.uptime_s, 'number');
  });

  it('answers problem+json for unknown routes and bad JSON', async () => {
    const r = await suite.c.get('/api/v1/nope');
    assert.equal(r.status, 404);
    assert.match(r.headers.get('content-type')!, /application\/problem\+json/);
    assert.equal(r.body.code, 'not_found');
    const bad = await suite.c.raw('POST', '/api/v1/auth/login', '{"email":', {});
    assert.equal(bad.status, 400);
    assert.equal(bad.body.code, 'validation_failed');
  });

  it('serves the OpenAPI document and UI', async () => {
    const doc = await suite.c.get('/docs/json');
    assert.equal(doc.status, 200);
    assert.ok(doc.body.paths['/api/v1/ingest/events']);
    assert.ok(doc.body.paths['/api/v1/sdk/api-keys/{id}/rotate']);
    assert.ok(
      Object.keys(doc.body.components.schemas).some((k) => /EventEnvelope/.test(k)),
      'the event envelope is documented',
    );
    const ui = await suite.c.get('/docs/');
    assert.equal(ui.status, 200);
  });
});

describe('signup, login and tokens', () => {
  it('signup-enabled is on by default', async () => {
    const r = await suite.c.get('/api/v1/auth/signup-enabled');
    assert.deepEqual(r.body, { enabled: true });
  });

  it('rejects short passwords and duplicate emails', async () => {
    const short = await suite.c.post('/api/v1/auth/signup', { email: 'short@example.com', password: 'short' });
    assert.equal(short.status, 400);
    assert.equal(short.body.code, 'validation_failed');
    assert.ok(short.body.errors.some((e: any) => e.path === '/body/password'));
    const first = await suite.c.post('/api/v1/auth/signup', { email: 'dup@example.com', password: 'long enough pw' });
    assert.equal(first.status, 201);
    const again = await suite.c.post('/api/v1/auth/signup', { email: 'DUP@example.com', password: 'long enough pw' });
    assert.equal(again.status, 409);
  });

  it('logs in with the right password and gives the same 401 for wrong password and unknown email', async () => {
    await suite.c.post('/api/v1/auth/signup', { email: 'login@example.com', password: 'long enough pw', name: 'L' });
    const ok = await suite.c.post('/api/v1/auth/login', { email: 'login@example.com', password: 'long enough pw' });
    assert.equal(ok.status, 200);
    assert.equal(ok.body.user.email, 'login@example.com');
    assert.equal(decodeProtectedHeader(ok.body.token).alg, 'ES256');
    const wrong = await suite.c.post('/api/v1/auth/login', { email: 'login@example.com', password: 'wrong password' });
    const unknown = await suite.c.post('/api/v1/auth/login', {
      email: 'nobody@example.com',
      password: 'wrong password',
    });
    assert.equal(wrong.status, 401);
    assert.equal(unknown.status, 401);
    assert.equal(wrong.body.detail, unknown.body.detail);
  });

  it('publishes the signing keys as JWKS', async () => {
    const r = await suite.c.get('/.well-known/jwks.json');
    assert.equal(r.status, 200);
    assert.equal(r.body.keys[0].kty, 'EC');
    assert.equal(r.body.keys[0].d, undefined, 'private part must never be published');
  });

  it('/me lists organizations, apps and roles', async () => {
    const r = await suite.c.get('/api/v1/me', bearer(suite.t.token));
    assert.equal(r.status, 200);
    assert.equal(r.body.data.organizations[0].id, suite.t.orgId);
    assert.equal(r.body.data.organizations[0].role, 'owner');
    assert.equal(r.body.data.organizations[0].apps[0].id, suite.t.appId);
  });

  it('rejects missing, malformed, tampered, alg:none, foreign-key, wrong-audience and expired tokens', async () => {
    assert.equal((await suite.c.get('/api/v1/me')).body.code, 'missing_credentials');
    assert.equal((await suite.c.get('/api/v1/me')).status, 401);
    const bad = async (token: string) => {
      const r = await suite.c.get('/api/v1/me', bearer(token));
      assert.equal(r.status, 401, `token should be refused: ${token.slice(0, 40)}`);
      assert.equal(r.body.code, 'invalid_credentials');
    };
    await bad('not-a-jwt');
    const [h, p, s] = suite.t.token.split('.');
    const payload = JSON.parse(Buffer.from(p, 'base64url').toString());
    const forged = Buffer.from(JSON.stringify({ ...payload, sub: '00000000-0000-0000-0000-000000000000' })).toString(
      'base64url',
    );
    await bad(`${h}.${forged}.${s}`);
    const none = Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT' })).toString('base64url');
    await bad(`${none}.${p}.`);
    const { privateKey } = await generateKeyPair('ES256');
    const claims = { email: payload.email };
    await bad(
      await new SignJWT(claims)
        .setProtectedHeader({ alg: 'ES256' })
        .setSubject(payload.sub)
        .setIssuer(payload.iss)
        .setAudience(payload.aud)
        .setExpirationTime('1h')
        .sign(privateKey),
    );
    // Tokens signed with the service's real key but wrong expiry, audience or issuer are refused too.
    const { rows } = await suite.server.db.query('SELECT kid, private_jwk FROM signing_keys');
    const key = await importJWK(rows[0].private_jwk, 'ES256');
    const sign = (over: { exp?: number; aud?: string; iss?: string }) =>
      new SignJWT(claims)
        .setProtectedHeader({ alg: 'ES256', kid: rows[0].kid })
        .setSubject(payload.sub)
        .setIssuer(over.iss ?? payload.iss)
        .setAudience(over.aud ?? payload.aud)
        .setIssuedAt(Math.floor(Date.now() / 1000) - 7200)
        .setExpirationTime(over.exp ?? Math.floor(Date.now() / 1000) + 600)
        .sign(key);
    const good = await suite.c.get('/api/v1/me', bearer(await sign({})));
    assert.equal(good.status, 200, 'control: a well-formed token with our key is accepted');
    await bad(await sign({ exp: Math.floor(Date.now() / 1000) - 60 }));
    await bad(await sign({ aud: 'someone-else' }));
    await bad(await sign({ iss: 'https://evil.example.com' }));
  });
});

describe('tenancy and roles', () => {
  let viewerToken: string;
  let memberToken: string;

  before(async () => {
    const v = await suite.c.post('/api/v1/auth/signup', { email: 'viewer@example.com', password: 'long enough pw' });
    const m = await suite.c.post('/api/v1/auth/signup', { email: 'member@example.com', password: 'long enough pw' });
    viewerToken = v.body.token;
    memberToken = m.body.token;
    assert.equal(
      (
        await suite.c.post(
          `/api/v1/organizations/${suite.t.orgId}/members`,
          { email: 'viewer@example.com', role: 'viewer' },
          bearer(suite.t.token),
        )
      ).status,
      201,
    );
    assert.equal(
      (
        await suite.c.post(
          `/api/v1/organizations/${suite.t.orgId}/members`,
          { email: 'member@example.com', role: 'member' },
          bearer(suite.t.token),
        )
      ).status,
      201,
    );
  });

  const as = (token: string, orgId = suite.t.orgId, appId = suite.t.appId) => ({
    ...bearer(token),
    'x-tenant-id': orgId,
    'x-app-id': appId,
  });

  it('requires x-tenant-id and x-app-id on customer endpoints', async () => {
    const r = await suite.c.get('/api/v1/sdk/api-keys', bearer(suite.t.token));
    assert.equal(r.status, 401);
    assert.equal(r.body.code, 'missing_credentials');
  });

  it('refuses roles below admin on admin endpoints with 403', async () => {
    for (const tok of [viewerToken, memberToken]) {
      const r = await suite.c.get('/api/v1/sdk/api-keys', as(tok));
      assert.equal(r.status, 403);
      assert.equal(r.body.code, 'forbidden');
      assert.equal((await suite.c.patch('/api/v1/settings', { sampling_rate: 0.5 }, as(tok))).status, 403);
    }
  });

  it('only owners and admins create apps; members cannot add members', async () => {
    assert.equal(
      (await suite.c.post(`/api/v1/organizations/${suite.t.orgId}/apps`, { name: 'x' }, bearer(memberToken))).status,
      403,
    );
    assert.equal(
      (
        await suite.c.post(
          `/api/v1/organizations/${suite.t.orgId}/members`,
          { email: 'viewer@example.com', role: 'admin' },
          bearer(memberToken),
        )
      ).status,
      403,
    );
  });

  it('answers 403 for an org the caller is not in, and for an app outside the org', async () => {
    const other = await createTenant(suite.c);
    const r1 = await suite.c.get('/api/v1/settings', as(suite.t.token, other.orgId, other.appId));
    assert.equal(r1.status, 403);
    const r2 = await suite.c.get('/api/v1/settings', as(suite.t.token, suite.t.orgId, other.appId));
    assert.equal(r2.status, 403);
    const r3 = await suite.c.get('/api/v1/settings', as(suite.t.token, 'not-a-uuid', suite.t.appId));
    assert.equal(r3.status, 403);
  });

  it('answers 404 for another tenant key id', async () => {
    const other = await createTenant(suite.c);
    const r = await suite.c.post(`/api/v1/sdk/api-keys/${other.live.id}/rotate`, {}, suite.t.console);
    assert.equal(r.status, 404);
    const d = await suite.c.del(`/api/v1/sdk/api-keys/${other.live.id}`, suite.t.console);
    assert.equal(d.status, 404);
  });
});

describe('super admin', () => {
  it('closes signup and locks a tenant; normal users are refused', async () => {
    const root = await suite.c.post('/api/v1/auth/signup', { email: 'root@example.com', password: 'long enough pw' });
    const rootAuth = bearer(root.body.token);
    assert.equal(
      (await suite.c.put('/api/v1/admin/signup-enabled', { enabled: false }, bearer(suite.t.token))).status,
      403,
    );
    assert.equal((await suite.c.put('/api/v1/admin/signup-enabled', { enabled: false }, rootAuth)).status, 200);
    assert.deepEqual((await suite.c.get('/api/v1/auth/signup-enabled')).body, { enabled: false });
    const refused = await suite.c.post('/api/v1/auth/signup', {
      email: 'late@example.com',
      password: 'long enough pw',
    });
    assert.equal(refused.status, 403);
    assert.equal(refused.body.code, 'signup_disabled');
    assert.equal((await suite.c.put('/api/v1/admin/signup-enabled', { enabled: true }, rootAuth)).status, 200);

    const lock = await suite.c.put(
      `/api/v1/admin/organizations/${suite.t.orgId}/runtime-lock`,
      { reason: 'billing_lapsed' },
      rootAuth,
    );
    assert.equal(lock.status, 200);
    const boot = await suite.c.get('/api/v1/sdk/bootstrap', { 'x-api-key': suite.t.live.public_key });
    assert.equal(boot.body.runtime_lock.reason, 'billing_lapsed');
    assert.ok(boot.body.runtime_lock.locked_at);
    assert.ok(boot.body.runtime_lock.message);
    assert.equal(
      (await suite.c.del(`/api/v1/admin/organizations/${suite.t.orgId}/runtime-lock`, rootAuth)).status,
      204,
    );
    const boot2 = await suite.c.get('/api/v1/sdk/bootstrap', { 'x-api-key': suite.t.live.public_key });
    assert.equal(boot2.body.runtime_lock, undefined);
  });
});
