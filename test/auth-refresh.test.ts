import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { client, type Client, type Res } from './helpers/client.js';
import { startTestServer, type TestServer } from './helpers/server.js';

// The console's renewal: a refresh token in an HttpOnly cookie, rotated on each use, a reuse
// revoking its whole sign-in, logout, and the sign-in's absolute end (docs/auth.md).

const PASSWORD = 'correct horse battery';
let n = 0;

/** The refresh cookie a response sets: its value and attributes. */
function cookieOf(r: Res) {
  const set = r.headers.getSetCookie().find((h) => h.startsWith('refresh_token='));
  assert.ok(set, `a refresh cookie is set (status ${r.status})`);
  const [pair, ...attrs] = set.split(';').map((s) => s.trim());
  const maxAge = Number(attrs.find((a) => a.startsWith('Max-Age='))?.slice(8));
  return { value: pair.slice('refresh_token='.length), attrs, maxAge };
}
const jar = (value: string) => ({ cookie: `theme=dark; refresh_token=${value}` });
const me = (c: Client, token: string) => c.get('/api/v1/me', { authorization: `Bearer ${token}` });

async function signIn(c: Client) {
  const email = `renew${++n}-${Date.now()}@example.com`;
  const up = await c.post('/api/v1/auth/signup', { email, password: PASSWORD });
  assert.equal(up.status, 201, up.text);
  assert.ok(cookieOf(up).value, 'signup sets the cookie too');
  const r = await c.post('/api/v1/auth/login', { email, password: PASSWORD });
  assert.equal(r.status, 200, r.text);
  return { email, userId: r.body.user.id as string, res: r, cookie: cookieOf(r).value };
}

describe('refresh tokens', () => {
  let server: TestServer;
  let c: Client;
  before(async () => {
    server = await startTestServer();
    c = client(server.url);
  });
  after(() => server.stop());

  it('sign-in sets an HttpOnly, SameSite=Strict cookie for the auth routes only, lasting the sign-in', async () => {
    const { res } = await signIn(c);
    const k = cookieOf(res);
    assert.match(k.value, /^[A-Za-z0-9_-]{43}$/);
    assert.ok(k.attrs.includes('HttpOnly'));
    assert.ok(k.attrs.includes('SameSite=Strict'));
    assert.ok(k.attrs.includes('Path=/api/v1/auth'));
    assert.ok(!k.attrs.includes('Secure'), 'plain http (no PUBLIC_URL): not Secure, or the browser drops it');
    assert.ok(Math.abs(k.maxAge - 30 * 86400) <= 5, `Max-Age ${k.maxAge}: the 30-day default`);
    assert.equal(JSON.stringify(res.body).includes(k.value), false, 'never in the body');
  });

  it('renews: a new ID token for the same user and a new cookie, each token once', async () => {
    const s = await signIn(c);
    const r = await c.post('/api/v1/auth/refresh', undefined, jar(s.cookie));
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.user.id, s.userId);
    assert.equal(r.body.expires_in, server.config.tokenTtlSeconds);
    const next = cookieOf(r);
    assert.notEqual(next.value, s.cookie);
    assert.ok(next.maxAge <= cookieOf(s.res).maxAge, 'rotation never extends the sign-in');
    const who = await me(c, r.body.token);
    assert.equal(who.status, 200);
    assert.equal(who.body.data.id, s.userId, 'the renewed token names the same user');
    // Stored as SHA-256 digests only.
    const digest = createHash('sha256').update(next.value).digest();
    const { rows } = await server.db.query('SELECT token_hash FROM refresh_tokens WHERE token_hash = $1', [digest]);
    assert.equal(rows.length, 1);
    const raw = await server.db.query('SELECT 1 FROM refresh_tokens WHERE token_hash = $1', [Buffer.from(next.value)]);
    assert.equal(raw.rows.length, 0);
  });

  it('a rotated token used again revokes the whole sign-in, the newest token included', async () => {
    const s = await signIn(c);
    const r1 = await c.post('/api/v1/auth/refresh', undefined, jar(s.cookie));
    const c2 = cookieOf(r1).value;
    const r2 = await c.post('/api/v1/auth/refresh', undefined, jar(c2));
    assert.equal(r2.status, 200);
    const c3 = cookieOf(r2).value;

    const replay = await c.post('/api/v1/auth/refresh', undefined, jar(s.cookie));
    assert.equal(replay.status, 401);
    assert.equal(replay.body.code, 'invalid_credentials');
    assert.equal(cookieOf(replay).maxAge, 0, 'the failed cookie is cleared');
    const newest = await c.post('/api/v1/auth/refresh', undefined, jar(c3));
    assert.equal(newest.status, 401, 'the newest token of the family stopped working too');
    const { rows } = await server.db.query(
      'SELECT revoked_reason FROM refresh_families WHERE user_id = $1 ORDER BY created_at',
      [s.userId],
    );
    assert.deepEqual(
      rows.map((x) => x.revoked_reason),
      [null, 'reuse'],
      "the signup's sign-in is untouched; the login's is revoked",
    );
  });

  it('logout revokes the sign-in and clears the cookie; another sign-in of the user goes on', async () => {
    const s = await signIn(c);
    const other = await c.post('/api/v1/auth/login', { email: s.email, password: PASSWORD });
    const otherCookie = cookieOf(other).value;
    const out = await c.post('/api/v1/auth/logout', undefined, jar(s.cookie));
    assert.equal(out.status, 204);
    assert.equal(cookieOf(out).maxAge, 0);
    assert.equal(cookieOf(out).value, '');
    assert.equal((await c.post('/api/v1/auth/refresh', undefined, jar(s.cookie))).status, 401);
    assert.equal((await c.post('/api/v1/auth/refresh', undefined, jar(otherCookie))).status, 200);
    // Without a cookie: 401 (the route is secured by it), and the cookie is cleared all the same.
    const bare = await c.post('/api/v1/auth/logout');
    assert.equal(bare.status, 401);
    assert.equal(bare.body.code, 'missing_credentials');
    assert.equal(cookieOf(bare).maxAge, 0);
  });

  it('answers 401 without a cookie or with a malformed one', async () => {
    const none = await c.post('/api/v1/auth/refresh');
    assert.equal(none.status, 401);
    assert.equal(none.body.code, 'missing_credentials');
    const junk = await c.post('/api/v1/auth/refresh', undefined, { cookie: 'refresh_token=x; a=b' });
    assert.equal(junk.status, 401);
    const unknown = await c.post('/api/v1/auth/refresh', undefined, jar('A'.repeat(43)));
    assert.equal(unknown.status, 401);
    assert.equal(unknown.body.code, 'invalid_credentials');
  });
});

describe('refresh tokens: the absolute end of a sign-in, and https', () => {
  let server: TestServer;
  let c: Client;
  before(async () => {
    server = await startTestServer({ REFRESH_TTL_S: '3', PUBLIC_URL: 'https://console.example.com' });
    c = client(server.url);
  });
  after(() => server.stop());

  it('marks the cookie Secure behind https, and ends the sign-in after REFRESH_TTL_S however often it renews', async () => {
    const s = await signIn(c);
    const k = cookieOf(s.res);
    assert.ok(k.attrs.includes('Secure'));
    assert.ok(k.maxAge >= 1 && k.maxAge <= 3, `Max-Age ${k.maxAge}`);
    const started = Date.now();
    let cookie = s.cookie;
    let last: Res | undefined;
    // Renews as often as it may: works until the family's end, then 401 for good.
    for (;;) {
      last = await c.post('/api/v1/auth/refresh', undefined, jar(cookie));
      if (last.status !== 200) break;
      cookie = cookieOf(last).value;
      assert.ok(Date.now() - started < 3000 + 1000, 'no renewal after the end');
      await sleep(250);
    }
    assert.equal(last.status, 401);
    assert.ok(Date.now() - started >= 2000, `the sign-in lasted about REFRESH_TTL_S (${Date.now() - started} ms)`);
  });
});
