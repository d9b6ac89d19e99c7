import assert from 'node:assert/strict';
import { createHook } from 'node:async_hooks';
import net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, it } from 'node:test';
import pg from 'pg';
import pino from 'pino';
import { client, createTenant, makeEvent } from './helpers/client.js';
import { createTestDatabase, startTestServer } from './helpers/server.js';

/** The service's log lines, parsed (pino writes one JSON object per line). */
function captureLog() {
  const lines: { level: number; msg: string; err?: { message?: string } }[] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
  return { logger, lines };
}

/** Resource kinds keeping this process alive (sockets, servers, timers, threads...), counted. */
function resources(): Map<string, number> {
  const m = new Map<string, number>();
  for (const r of process.getActiveResourcesInfo()) m.set(r, (m.get(r) ?? 0) + 1);
  return m;
}

// Where each live timer was created, so a timer left open names its owner in the failure.
const timers = new Map<number, string>();
createHook({
  init: (id, type) => void (type === 'Timeout' && timers.set(id, new Error().stack?.split('\n')[3] ?? '')),
  destroy: (id) => void timers.delete(id),
}).enable();

/** Kinds with more resources now than in `before`; sockets being closed get a few seconds to go. */
async function leftOpen(before: Map<string, number>): Promise<string[]> {
  let extra: string[] = [];
  for (let i = 0; i < 200; i++) {
    extra = [...resources()].filter(([k, n]) => n > (before.get(k) ?? 0)).map(([k, n]) => `${k}: ${n}`);
    if (extra.length === 0) return extra;
    await sleep(50);
  }
  return [...extra, ...timers.values()];
}

/** Polls `check` every 50 ms until it returns true; fails with `message` after 30 s (a loaded machine). */
async function until(check: () => Promise<boolean>, message: string): Promise<void> {
  for (let i = 0; !(await check()); i++) {
    assert.ok(i < 600, message);
    await sleep(50);
  }
}

const poolEnded = /pool after calling end/i;

// The stop sequence (src/server.ts, docs/operations.md "Stopping"): what the service started is
// closed, and the pool only once nothing can use it any more.
describe('service stop', () => {
  it('a start failing part-way (its port taken) stops what it had started: no handle is left', async () => {
    const taken = net.createServer();
    await new Promise<void>((r) => taken.listen(0, '127.0.0.1', r));
    const port = (taken.address() as net.AddressInfo).port;
    try {
      const dbUrl = await createTestDatabase();
      const before = resources();
      const { logger, lines } = captureLog();
      // The pool, the job queue with its workers, the webhook worker and the timers are up when
      // listen fails: the last step of the start.
      await assert.rejects(startTestServer({ PORT: String(port) }, dbUrl, logger), /EADDRINUSE/);
      assert.deepEqual(await leftOpen(before), [], 'resources left open by the failed start');
      assert.deepEqual(
        lines.filter((l) => poolEnded.test(`${l.msg} ${l.err?.message}`)),
        [],
      );
    } finally {
      await new Promise((r) => taken.close(r));
    }
  });

  it('waits for a job inside its query before it ends the pool: no error logged, no handle left', async () => {
    const before = resources();
    const { logger, lines } = captureLog();
    // A fold every second (the job chain), on worker threads, with a funnel refresh after each.
    const s = await startTestServer({ ROLLUP_INTERVAL_S: '1', ANALYTICS_FUNNEL_REFRESH_S: '1' }, undefined, logger);
    const lock = new pg.Client({ connectionString: s.databaseUrl });
    await lock.connect();
    try {
      const c = client(s.url);
      const t = await createTenant(c);
      const batch = Array.from({ length: 20 }, () => makeEvent({ event_name: 'app_open' }));
      const r = await c.post('/api/v1/ingest/events', { batch }, { 'x-api-key': t.live.public_key });
      assert.equal(r.status, 202, r.text);

      // The next fold reads the partition watermarks first (store.ts state()): it waits on this lock.
      await lock.query('BEGIN');
      await lock.query('LOCK TABLE an_rollup_state IN ACCESS EXCLUSIVE MODE');
      await until(async () => {
        const { rows } = await lock.query(
          `SELECT count(*)::int AS n FROM pg_locks WHERE relation = 'an_rollup_state'::regclass AND NOT granted`,
        );
        return rows[0].n > 0;
      }, 'a fold job waits on the lock');

      let done = false;
      const stopped = s.stop().then(() => (done = true));
      // The stop gets as far as it can: the HTTP listener is closed...
      await until(
        () =>
          new Promise<boolean>((resolve) => {
            const sock = net.connect(Number(new URL(s.url).port), '127.0.0.1');
            sock.once('connect', () => (sock.destroy(), resolve(false)));
            sock.once('error', () => resolve(true));
          }),
        'the HTTP listener closes',
      );
      // ...and still waits for the job inside its query.
      const { rows } = await lock.query(
        `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`,
      );
      assert.ok(rows[0].n > 0, 'the service keeps its connections while the job runs');
      assert.equal(done, false, 'stop waits for the running job');
      await lock.query('COMMIT');
      await stopped;
    } finally {
      await lock.end();
    }
    const bad = lines.filter((l) => l.level >= 50 || poolEnded.test(`${l.msg} ${l.err?.message}`));
    assert.deepEqual(bad, [], 'errors logged during the stop');
    assert.deepEqual(await leftOpen(before), [], 'resources left open after the stop');
  });
});
