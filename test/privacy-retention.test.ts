import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createRetentionJob, createRetentionStore } from '../src/modules/privacy/retention.js';
import { makeEvent } from './helpers/client.js';
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
});
