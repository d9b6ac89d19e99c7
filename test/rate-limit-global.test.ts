// Global rate limits over two instances on one PostgreSQL: through HTTP (two servers on one database)
// and through two limiters driven by one clock (windows crossed at will). Each instance reserves
// chunks of a key's budget; together they never grant more than the limit, and a chunk one instance
// does not use comes back within UNSPENT_HELD_MAX_MS.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { chunkOf, createGlobalLimiter, type RateLimiter, UNSPENT_HELD_MAX_MS } from '../src/http/rate-limit.js';
import { createLimitStore } from '../src/http/rate-limit-store.js';
import { client, createTenant, type Client } from './helpers/client.js';
import { startTestServer, type TestServer } from './helpers/server.js';

const BOOTSTRAP_LIMIT = 60;
let servers: TestServer[];
let c: Client[];
let pools: pg.Pool[];

before(async () => {
  const first = await startTestServer();
  const dbUrl = first.config.databaseUrl!;
  servers = [first, await startTestServer({}, dbUrl)];
  c = servers.map((s) => client(s.url));
  pools = [0, 1].map(() => new pg.Pool({ connectionString: dbUrl, max: 2 }));
});

after(async () => {
  for (const p of pools ?? []) await p.end();
  for (const s of servers ?? []) await s.stop();
});

/** What the database holds as granted for a key, over every window (an independent count). */
async function grantedInDb(key: string): Promise<Map<number, number>> {
  const { rows } = await pools[0].query<{ window_start: string; granted: string }>(
    'SELECT window_start, granted FROM rate_limit_windows WHERE key = $1',
    [key],
  );
  return new Map(rows.map((r) => [Number(r.window_start), Number(r.granted)]));
}

describe('bootstrap over two servers on one database', () => {
  it('80 concurrent requests spread over both: at most 60 allowed, the rest 429 with Retry-After', async () => {
    const t = await createTenant(c[0]);
    const rs = await Promise.all(
      Array.from({ length: 80 }, (_, i) => c[i % 2].get('/api/v1/sdk/bootstrap', { 'x-api-key': t.live.public_key })),
    );
    const ok = rs.filter((r) => r.status === 200);
    const refused = rs.filter((r) => r.status === 429);
    assert.equal(ok.length + refused.length, 80, rs.map((r) => r.status).join());
    // Never more than the limit; fewer by at most what the other instance holds unspent (one chunk less a point).
    const slack = chunkOf(BOOTSTRAP_LIMIT) - 1;
    assert.ok(ok.length <= BOOTSTRAP_LIMIT && ok.length >= BOOTSTRAP_LIMIT - slack, `allowed ${ok.length}`);
    for (const r of refused) {
      assert.equal(r.body.code, 'rate_limited', r.text);
      const retry = Number(r.headers.get('retry-after'));
      assert.ok(retry >= 1 && retry <= 60, `retry-after ${retry}`);
      assert.equal(r.headers.get('ratelimit-limit'), String(BOOTSTRAP_LIMIT));
    }
    for (const r of ok) {
      const remaining = Number(r.headers.get('ratelimit-remaining'));
      assert.ok(remaining >= 0 && remaining < BOOTSTRAP_LIMIT, `remaining ${remaining}`);
    }
    // The database's own count of grants agrees: no window got more than the limit.
    const { rows } = await pools[0].query<{ granted: string }>(
      "SELECT granted FROM rate_limit_windows WHERE key LIKE 'bootstrap:%'",
    );
    for (const r of rows) assert.ok(Number(r.granted) <= BOOTSTRAP_LIMIT, `granted ${r.granted}`);
  });
});

describe('two limiters on one database, one clock', () => {
  const limiters: RateLimiter[] = [];
  after(async () => {
    for (const l of limiters) await l.close();
  });
  const make = (now: () => number) => {
    const two = [0, 1].map((i) => createGlobalLimiter(createLimitStore(pools[i]), now));
    limiters.push(...two);
    return two;
  };

  it('never grant more than the limit together in any window, whatever the interleaving', async () => {
    const WINDOW = 60_000;
    // Starts a window's quarter in, so a burst also meets the previous window's weight.
    let clock = Math.ceil(Date.now() / WINDOW) * WINDOW + WINDOW / 4;
    const [a, b] = make(() => clock);
    const key = `test:${randomUUID()}`;
    const LIMIT = 20;
    const allowedIn = new Map<number, number>();
    for (let step = 0; step < 12; step++) {
      const burst = await Promise.all(
        Array.from({ length: 15 }, (_, i) => (i % 3 === 0 ? a : b).consume(key, 1 + (i % 2), LIMIT)),
      );
      const ws = clock - (clock % WINDOW);
      for (const [i, d] of burst.entries()) if (d.allowed) allowedIn.set(ws, (allowedIn.get(ws) ?? 0) + 1 + (i % 2));
      clock += WINDOW / 4;
    }
    assert.ok(allowedIn.size >= 3, 'the bursts crossed windows');
    for (const [ws, n] of allowedIn) assert.ok(n <= LIMIT, `window ${ws}: ${n} allowed of ${LIMIT}`);
    for (const [ws, n] of await grantedInDb(key)) assert.ok(n <= LIMIT, `window ${ws}: ${n} granted in the database`);
    // Stopped now: their clock runs ahead, and their sweep would forget the next test's windows.
    await a.close();
    await b.close();
  });

  it("an instance's sweep keeps another's longer windows while they weigh, and forgets its own old ones", async () => {
    const HOUR = 3_600_000;
    const t0 = Date.now();
    const long = `test:${randomUUID()}`;
    const short = `test:${randomUUID()}`;
    // One instance holds 5 points of an hour-long window.
    assert.equal((await createLimitStore(pools[1]).take(long, t0, HOUR, 60, 5, 5)).granted, 5);
    // Another, whose limits all last a minute, sweeps when its clock is ten minutes on (its stop sweeps).
    let clock = t0;
    const [minutely] = make(() => clock);
    assert.equal((await minutely.consume(short, 1, 60)).allowed, true);
    clock = t0 + 10 * 60_000;
    await minutely.close();
    assert.deepEqual([...(await grantedInDb(long)).values()], [5], 'the hour-long window is kept');
    assert.equal((await grantedInDb(short)).size, 0, 'its own minute window, long over, is swept');
  });

  it('a chunk one instance leaves unused comes back to the other within the documented bound', async () => {
    const [a, b] = make(Date.now);
    const key = `test:${randomUUID()}`;
    // An hour-long window, so the minute boundaries of the wall clock do not free budget meanwhile.
    const HOUR = 3_600_000;
    // Waits out the last seconds of the hour rather than straddle its boundary.
    if (HOUR - (Date.now() % HOUR) < 15_000) await sleep(HOUR - (Date.now() % HOUR) + 10);
    const LIMIT = 60;
    const consume = (l: RateLimiter) => l.consume(key, 1, LIMIT, HOUR);
    // A reserves a chunk and spends one point of it.
    assert.equal((await consume(a)).allowed, true);
    const lastUseOfA = Date.now();
    const held = chunkOf(LIMIT) - 1;
    assert.ok(held > 0);
    // B spends everything else, then is refused: A's unspent points are not B's.
    let allowed = 0;
    while ((await consume(b)).allowed) allowed++;
    assert.equal(allowed, LIMIT - 1 - held);
    const refused = await consume(b);
    assert.equal(refused.allowed, false);
    // B asks again until allowed: A, idle, hands its chunk back within the bound.
    let back = 0;
    while (!(await consume(b)).allowed) {
      assert.ok(Date.now() - lastUseOfA < UNSPENT_HELD_MAX_MS + 1000, 'A still holds its unspent chunk');
      await sleep(20);
    }
    back = 1;
    while ((await consume(b)).allowed) back++;
    assert.equal(back, held, 'exactly the points A held came back');
    const granted = [...(await grantedInDb(key)).values()].reduce((s, n) => s + n, 0);
    assert.equal(granted, LIMIT);
  });
});
