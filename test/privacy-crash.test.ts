// Issue 36: a deletion survives `kill -9` of the worker running it, mid-way, and finishes on restart
// without clearing any store twice or leaving one half done (real processes on one database).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { client, createTenant, makeEvent, type Client, type Tenant } from './helpers/client.js';
import { clusterEnv, makeInstance, startInstance, stopInstance, type Instance } from './helpers/processes.js';
import { createTestDatabase } from './helpers/server.js';
import { waitFor } from './webhooks-receiver.js';

let db: pg.Pool;
let env: Record<string, string>;
let api: Instance;
let worker: Instance;
let c: Client;
let t: Tenant;

before(async () => {
  const dbUrl = await createTestDatabase();
  db = new pg.Pool({ connectionString: dbUrl, max: 4 });
  env = clusterEnv(dbUrl, { KEY_CACHE_TTL_MS: '300', ROLLUP_INTERVAL_S: '3600' });
  [api, worker] = [await makeInstance('api'), await makeInstance('worker')];
  await startInstance(worker, env);
  await startInstance(api, env);
  c = client(api.url);
  t = await createTenant(c);
});

after(async () => {
  await Promise.all([api, worker].map((i) => i && stopInstance(i).catch(() => undefined)));
  await db?.end();
});

/** The project's poll (webhooks-receiver.ts `waitFor`), with this file's patience. */
const until = <T>(what: string, f: () => Promise<T>, ms = 120_000) => waitFor(f, what, ms);

describe('privacy: a deletion killed mid-way', () => {
  it('finishes after kill -9 and a restart, each store cleared once', { timeout: 300_000 }, async () => {
    const anon = randomUUID();
    const mine = Array.from({ length: 40 }, (_, i) =>
      makeEvent({ user: { anon_id: anon, user_id: 'crash-user' }, ts_ms: Date.now() - 60_000 + i }),
    );
    const others = Array.from({ length: 20 }, () => makeEvent());
    const r = await c.post(
      '/api/v1/ingest/events',
      { batch: [...mine, ...others] },
      { 'x-api-key': t.live.public_key },
    );
    assert.equal(r.status, 202, r.text);
    const idf = await c.post(
      '/api/v1/ingest/identify',
      { anon_id: anon, user_id: 'crash-user', ts_ms: Date.now() - 1000, traits: { a: 1 } },
      { 'x-api-key': t.live.public_key },
    );
    assert.equal(idf.status, 202, idf.text);

    // The identity store is held by the test: the job clears events (and option locks), then waits on it.
    const holder = await db.connect();
    await holder.query('BEGIN');
    await holder.query('LOCK TABLE user_traits IN ACCESS EXCLUSIVE MODE');
    let id: string;
    try {
      const req = await c.post('/api/v1/privacy/deletions', { subjects: [{ user_id: 'crash-user' }] }, t.console);
      assert.equal(req.status, 202, req.text);
      id = req.body.data.id;
      await until('the events store cleared', async () => {
        const { rows } = await db.query('SELECT steps FROM privacy_deletions WHERE id = $1', [id]);
        return rows[0].steps.events !== undefined;
      });
      // The job now waits on the lock, inside the identity store's transaction.
      worker.proc!.kill('SIGKILL');
      await new Promise((res) => worker.proc!.once('exit', res));
    } finally {
      await holder.query('ROLLBACK');
      holder.release();
    }
    const mid = (await db.query('SELECT status, steps FROM privacy_deletions WHERE id = $1', [id])).rows[0];
    assert.equal(mid.status, 'running');
    assert.equal(mid.steps.events.deleted, mine.length);
    assert.equal(mid.steps.identity, undefined, 'the store the kill interrupted is not recorded as done');
    const traits = await db.query("SELECT count(*)::int AS n FROM user_traits WHERE user_id = 'crash-user'");
    assert.equal(traits.rows[0].n, 1, 'and was rolled back whole');

    worker = await makeInstance('worker');
    await startInstance(worker, env);
    const done = await until('the deletion to finish after the restart', async () => {
      const g = await c.get(`/api/v1/privacy/deletions/${id}`, t.console);
      assert.notEqual(g.body.data.status, 'failed', g.text);
      return g.body.data.status === 'done' && g.body.data;
    });
    assert.equal(done.receipt.verified, true);
    assert.equal(done.receipt.stores.events.deleted, mine.length, 'the events store was cleared once, counted once');
    assert.ok(done.receipt.stores.identity.deleted >= 3, 'identity, link and traits');
    const left = await db.query("SELECT count(*)::int AS n FROM events WHERE anon_id = $1 OR user_id = 'crash-user'", [
      anon,
    ]);
    assert.equal(left.rows[0].n, 0);
    const kept = await db.query('SELECT count(*)::int AS n FROM events WHERE app_id = $1', [t.appId]);
    assert.equal(kept.rows[0].n, others.length);
  });
});
