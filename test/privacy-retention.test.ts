import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createRetentionJob, createRetentionStore } from '../src/modules/privacy/retention.js';
import { createTenant, makeEvent } from './helpers/client.js';
import { useTenantApp } from './helpers/suite.js';

// Issue 36 §3: the app setting retention_days and the daily job that applies it.
const suite = useTenantApp();

describe('privacy: retention', () => {
  it('is a bounded app setting, and the job drops only what is older', async () => {
    const { c, t, server } = suite;
    assert.equal((await c.get('/api/v1/settings', t.console)).body.data.retention_days, null);
    for (const bad of [29, 3651, 30.5])
      assert.equal((await c.patch('/api/v1/settings', { retention_days: bad }, t.console)).status, 400, `${bad}`);
    const set = await c.patch('/api/v1/settings', { retention_days: 30 }, t.console);
    assert.equal(set.status, 200, set.text);
    assert.equal(set.body.data.retention_days, 30);

    const batch = Array.from({ length: 6 }, () => makeEvent());
    const r = await c.post('/api/v1/ingest/events', { batch }, { 'x-api-key': t.live.public_key });
    assert.equal(r.status, 202, r.text);
    // Four of them arrived 31 days ago (by received_at, whatever their own time).
    const old = batch.slice(0, 4).map((e) => e.event_id);
    await server.db.query(
      "UPDATE events SET received_at = now() - interval '31 days' WHERE event_id = ANY ($1::uuid[])",
      [old],
    );
    await server.db.query(
      `INSERT INTO exports (tenant_id, app_id, environment, status, start_date, end_date, completed_at, expires_at)
       VALUES ($1, $2, 'production', 'completed', now() - interval '40 days', now() - interval '39 days',
               now() - interval '31 days', now() + interval '1 day'),
              ($1, $2, 'production', 'completed', now() - interval '2 days', now() - interval '1 day',
               now() - interval '1 day', now() + interval '1 day')`,
      [t.orgId, t.appId],
    );

    const seen: { events: number; exports: number }[] = [];
    const job = createRetentionJob({
      store: createRetentionStore(server.db),
      purgeExportFiles: async () => undefined,
      onApp: (_scope, d) => seen.push(d),
    });
    await job();
    assert.deepEqual(seen, [{ events: 4, exports: 1 }]);
    const left = await server.db.query('SELECT event_id::text FROM events WHERE app_id = $1', [t.appId]);
    assert.deepEqual(
      left.rows.map((x) => x.event_id).sort(),
      batch
        .slice(4)
        .map((e) => e.event_id)
        .sort(),
    );
    const live = await server.db.query(
      'SELECT count(*)::int AS n FROM exports WHERE app_id = $1 AND expires_at > now()',
      [t.appId],
    );
    assert.equal(live.rows[0].n, 1, 'the recent export stays');
    // Again: nothing more to drop.
    await job();
    assert.equal(seen.length, 1);

    const off = await c.patch('/api/v1/settings', { retention_days: null }, t.console);
    assert.equal(off.body.data.retention_days, null);
  });
  it("empties a whole old partition when every row in it is past its app's cutoff, and only then", async () => {
    const { c, t, server } = suite;
    const other = await createTenant(c); // keeps its events for ever
    assert.equal((await c.patch('/api/v1/settings', { retention_days: 30 }, t.console)).status, 200);
    const at = Date.now() - 85 * 86_400_000;
    const send = async (key: string, n: number) => {
      const batch = Array.from({ length: n }, (_, i) => makeEvent({ ts_ms: at + i }));
      const r = await c.post('/api/v1/ingest/events', { batch }, { 'x-api-key': key });
      assert.equal(r.status, 202, r.text);
      await server.db.query(
        "UPDATE events SET received_at = now() - interval '85 days' WHERE event_id = ANY ($1::uuid[])",
        [batch.map((e) => e.event_id)],
      );
      return batch;
    };
    /** The old partition's name and file (a TRUNCATE gives it a new file). */
    const partition = async () => {
      const r = await server.db.query(
        `SELECT tableoid::regclass::text AS p, pg_relation_filenode(tableoid) AS node FROM events WHERE ts = to_timestamp($1 / 1000.0) LIMIT 1`,
        [at],
      );
      return r.rows[0] as { p: string; node: string } | undefined;
    };
    const seen: { events: number; exports: number }[] = [];
    const job = createRetentionJob({
      store: createRetentionStore(server.db),
      purgeExportFiles: async () => undefined,
      onApp: (_scope, d) => seen.push(d),
    });

    // Another app's row that must stay: the partition is not emptied, only the app's rows go.
    await send(t.live.public_key, 3);
    const keep = await send(other.live.public_key, 1);
    const before = (await partition())!;
    await job();
    assert.deepEqual(seen, [{ events: 3, exports: 0 }]);
    const after = (await partition())!;
    assert.deepEqual(after, before, 'the same partition file: rows deleted one by one');
    const kept = await server.db.query('SELECT event_id::text AS id FROM events WHERE app_id = $1', [other.appId]);
    assert.deepEqual(
      kept.rows.map((r) => r.id),
      keep.map((e) => e.event_id),
    );

    // Once the other app keeps 30 days too, every row of the partition is past its cutoff: emptied whole.
    assert.equal((await c.patch('/api/v1/settings', { retention_days: 30 }, other.console)).status, 200);
    await send(t.live.public_key, 2);
    const node = (await partition())!.node;
    seen.length = 0;
    await job();
    assert.deepEqual(seen.map((d) => d.events).sort(), [1, 2], "each app's rows counted");
    const left = await server.db.query(
      `SELECT count(*)::int AS n, pg_relation_filenode($1::regclass) AS node FROM events WHERE ts < now() - interval '80 days'`,
      [before.p],
    );
    assert.equal(left.rows[0].n, 0);
    assert.notEqual(left.rows[0].node, node, 'a new, empty file: the partition was truncated, not deleted row by row');
    // The partition is still there: a late event of that month lands.
    await send(t.live.public_key, 1);
    assert.equal((await partition())?.p, before.p);
  });
});
