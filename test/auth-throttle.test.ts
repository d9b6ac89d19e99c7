import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { client, type Client } from './helpers/client.js';
import { startTestServer, type TestServer } from './helpers/server.js';

// Failed sign-ins throttled per account and per client address, signups per address (docs/auth.md).
// Client addresses are told with X-Forwarded-For (the service trusts its proxy's header).

const PASSWORD = 'correct horse battery';
let n = 0;
const address = () => `198.51.100.${++n}`;
const from = (ip: string) => ({ 'x-forwarded-for': ip });

async function signup(c: Client, email: string, ip = address()) {
  const r = await c.post('/api/v1/auth/signup', { email, password: PASSWORD }, from(ip));
  assert.equal(r.status, 201, r.text);
}
const login = (c: Client, email: string, password: string, ip: string) =>
  c.post('/api/v1/auth/login', { email, password }, from(ip));

describe('sign-in throttle, production numbers (5 per account, lock from 30 s)', () => {
  let server: TestServer;
  let c: Client;
  before(async () => {
    // The address thresholds lowered so the test stays short; the account's are the defaults.
    server = await startTestServer({ SIGN_IN_ADDRESS_FAILURES: '12', SIGNUP_ADDRESS_LIMIT: '3' });
    c = client(server.url);
  });
  after(() => server.stop());

  it('refuses a guesser before 25 attempts, the right password too, while others sign in', async () => {
    await signup(c, 'victim@example.com');
    await signup(c, 'bystander@example.com');
    const guesser = address();
    const statuses: number[] = [];
    for (let i = 0; i < 25; i++) statuses.push((await login(c, 'victim@example.com', `guess ${i}`, guesser)).status);
    assert.deepEqual(statuses.slice(0, 5), [401, 401, 401, 401, 401], 'five failures are answered as such');
    assert.ok(
      statuses.slice(5).every((s) => s === 429),
      `then refused: ${statuses.join(',')}`,
    );

    // The right password during the lock: the same 429 (no oracle), from the guesser's address or another.
    for (const ip of [guesser, address()]) {
      const right = await login(c, 'victim@example.com', PASSWORD, ip);
      assert.equal(right.status, 429);
      assert.equal(right.body.code, 'rate_limited');
      assert.match(right.headers.get('content-type')!, /application\/problem\+json/);
      const wait = Number(right.headers.get('retry-after'));
      assert.ok(wait >= 1 && wait <= 30, `Retry-After ${wait} within the first lock (30 s)`);
    }
    // Another account from another address is not affected.
    const other = await login(c, 'bystander@example.com', PASSWORD, address());
    assert.equal(other.status, 200, other.text);
  });

  it('sixty guesses sent at once: five are checked (five hashes), the rest refused unhashed', async () => {
    await signup(c, 'burst@example.com');
    const ip = address();
    const started = performance.now();
    const answers = await Promise.all(
      Array.from({ length: 60 }, (_, i) => login(c, 'burst@example.com', `burst ${i}`, ip)),
    );
    const ms = performance.now() - started;
    const count = (status: number) => answers.filter((r) => r.status === status).length;
    assert.equal(count(401), 5, 'admitted (and hashed): the account threshold, not more');
    assert.equal(count(429), 55);
    console.log(`60 concurrent wrong passwords for one account: 5 x 401, 55 x 429 in ${ms.toFixed(0)} ms`);
  });

  it('answers an unknown email as a wrong password, and throttles it the same', async () => {
    await signup(c, 'known@example.com');
    const ip = address();
    const known: number[] = [];
    const unknown: number[] = [];
    for (let i = 0; i < 7; i++) {
      const k = await login(c, 'known@example.com', `wrong ${i}`, ip);
      const u = await login(c, 'nobody-here@example.com', `wrong ${i}`, ip);
      known.push(k.status);
      unknown.push(u.status);
      assert.equal(k.body.detail, u.body.detail);
    }
    assert.deepEqual(known, unknown);
    assert.deepEqual(known, [401, 401, 401, 401, 401, 429, 429]);
  });

  it('closes an address after its threshold of failures over many accounts; other addresses sign in', async () => {
    const emails = Array.from({ length: 4 }, (_, i) => `team${i}@example.com`);
    for (const e of emails) await signup(c, e);
    const office = address();
    // 12 failures spread over 4 accounts (3 each: no account reaches its own threshold).
    for (let i = 0; i < 12; i++) {
      const r = await login(c, emails[i % 4], `wrong ${i}`, office);
      assert.equal(r.status, 401, `failure ${i + 1} is answered`);
    }
    const closed = await login(c, emails[0], PASSWORD, office);
    assert.equal(closed.status, 429, 'the address is closed, the right password included');
    assert.ok(Number(closed.headers.get('retry-after')) >= 1);
    // The same accounts from another address: open (each has 3 failures, under 5).
    for (const e of emails) assert.equal((await login(c, e, PASSWORD, address())).status, 200);
  });

  it('counts an IPv6 client by its /64', async () => {
    await signup(c, 'six@example.com');
    // 12 failures from 12 addresses of one /64 (3 accounts' worth: no account reaches 5).
    const emails = ['six@example.com', 'six-b@example.com', 'six-c@example.com', 'six-d@example.com'];
    for (let i = 0; i < 12; i++) {
      const r = await login(c, emails[i % 4], 'wrong', `2001:db8:1:2:${i.toString(16)}::${i + 1}`);
      assert.equal(r.status, 401);
    }
    assert.equal((await login(c, 'six@example.com', PASSWORD, '2001:db8:1:2:ffff::9')).status, 429);
    assert.equal((await login(c, 'six@example.com', PASSWORD, '2001:db8:1:3::1')).status, 200, 'the next /64');
  });

  it('a success hands the address its attempt back', async () => {
    await signup(c, 'regular@example.com');
    const ip = address();
    // 30 successes from one address never close it (the address counts failures only).
    for (let i = 0; i < 30; i++) assert.equal((await login(c, 'regular@example.com', PASSWORD, ip)).status, 200);
  });

  it('limits signups per address, not per server', async () => {
    const ip = address();
    for (let i = 0; i < 3; i++) await signup(c, `new${i}@example.com`, ip);
    const fourth = await c.post('/api/v1/auth/signup', { email: 'new3@example.com', password: PASSWORD }, from(ip));
    assert.equal(fourth.status, 429);
    assert.equal(fourth.body.code, 'rate_limited');
    assert.ok(Number(fourth.headers.get('retry-after')) >= 1);
    await signup(c, 'new3@example.com', address());
  });
});

describe('sign-in throttle over time (lock 2 s doubling to 4 s, streaks forgotten after 6 s)', () => {
  let server: TestServer;
  let c: Client;
  before(async () => {
    server = await startTestServer({
      SIGN_IN_ACCOUNT_FAILURES: '3',
      SIGN_IN_LOCK_S: '2',
      SIGN_IN_LOCK_MAX_S: '4',
      SIGN_IN_WINDOW_S: '6',
    });
    c = client(server.url);
  });
  after(() => server.stop());

  /** Retries while refused; answers the first admitted attempt and how long it took. */
  async function whenOpen(email: string, password: string, ip: string) {
    const t0 = Date.now();
    for (;;) {
      const r = await login(c, email, password, ip);
      if (r.status !== 429) return { r, waitedMs: Date.now() - t0 };
      assert.ok(Date.now() - t0 < 15_000, 'the lock ends');
      await sleep(100);
    }
  }

  it('locks, grows the delay with each further failure, and lets the right password in once it ends', async () => {
    await signup(c, 'slow@example.com');
    const ip = address();
    for (let i = 0; i < 3; i++) assert.equal((await login(c, 'slow@example.com', 'wrong', ip)).status, 401);
    const first = await login(c, 'slow@example.com', 'wrong', ip);
    assert.equal(first.status, 429);
    assert.equal(first.headers.get('retry-after'), '2');

    const fourth = await whenOpen('slow@example.com', 'wrong', ip);
    assert.equal(fourth.r.status, 401, 'after the lock, a guess is checked again');
    const second = await login(c, 'slow@example.com', 'wrong', ip);
    assert.equal(second.status, 429);
    assert.equal(second.headers.get('retry-after'), '4', 'the next lock is twice as long');

    const ok = await whenOpen('slow@example.com', PASSWORD, ip);
    assert.equal(ok.r.status, 200, ok.r.text);
    assert.ok(ok.waitedMs >= 2500, `the second lock held (${ok.waitedMs} ms)`);
  });

  it('admits every one of many signups and sign-ins sent at once from one address under its limits', async () => {
    // Each waits for the others' row lock: none may read their later clock as a lock (it did once).
    const ip = address();
    const ups = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        c.post('/api/v1/auth/signup', { email: `at-once-${i}@example.com`, password: PASSWORD }, from(ip)),
      ),
    );
    assert.deepEqual(
      ups.map((r) => r.status),
      Array(20).fill(201),
    );
    const ins = await Promise.all(
      Array.from({ length: 20 }, (_, i) => login(c, `at-once-${i}@example.com`, PASSWORD, ip)),
    );
    assert.deepEqual(
      ins.map((r) => r.status),
      Array(20).fill(200),
    );
  });

  it('forgets a streak a window after its last failure', async () => {
    await signup(c, 'forgetful@example.com');
    const ip = address();
    for (let i = 0; i < 3; i++) assert.equal((await login(c, 'forgetful@example.com', 'wrong', ip)).status, 401);
    assert.equal((await login(c, 'forgetful@example.com', 'wrong', ip)).status, 429);
    await sleep(server.config.signInThrottle.windowS * 1000 + 200);
    // A fresh streak: three failures answered, then the first (base) lock again.
    for (let i = 0; i < 3; i++) assert.equal((await login(c, 'forgetful@example.com', 'wrong', ip)).status, 401);
    const again = await login(c, 'forgetful@example.com', 'wrong', ip);
    assert.equal(again.status, 429);
    assert.equal(again.headers.get('retry-after'), '2');
  });
});
