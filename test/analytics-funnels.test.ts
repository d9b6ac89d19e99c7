import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, it } from 'node:test';
import { makeEvent } from './helpers/client.js';
import { useTenantApp } from './helpers/suite.js';

// Materialized funnel answers (funnel-answers.ts): the worker's refresh is paced to once an hour
// here, so what a request serves between refreshes is observable.
describe('analytics: materialized funnel answers', () => {
  const s = useTenantApp({ ROLLUP_INTERVAL_S: '1', ANALYTICS_FUNNEL_REFRESH_S: '3600' });

  const ingest = async (anon: string, names: string[]) => {
    const now = Date.now();
    const batch = names.map((n, i) =>
      makeEvent({ event_name: n, ts_ms: now - 3_600_000 + i * 60_000, user: { anon_id: anon } }),
    );
    const r = await s.c.post('/api/v1/ingest/events', { batch }, { 'x-api-key': s.t.live.public_key });
    assert.equal(r.status, 202, r.text);
  };
  /** Waits for the background fold job (not the admin endpoint, which also refreshes answers). */
  const folded = async () => {
    for (let i = 0; i < 200; i++) {
      const { rows } = await s.server.db.query(
        `SELECT (SELECT min(watermark) FROM an_rollup_state) >= (SELECT coalesce(max(seq), 0) FROM events) AS ok`,
      );
      if (rows[0].ok) return;
      await sleep(50);
    }
    assert.fail('the fold job did not catch up');
  };
  const funnel = async (q = '') => {
    const r = await s.c.get(`/api/v1/analytics/funnel/onboarding${q}`, s.t.console);
    assert.equal(r.status, 200, r.text);
    return { users: r.body.steps.map((x: { users: number }) => x.users), at: r.body.computed_at as string };
  };

  it('serves the stored answer while exact or fresh, and recomputes after a refresh or a new definition', async () => {
    // The worker's first refresh is not paced; the admin fold's forced one starts the pacing, so
    // no worker refresh can replace an answer while this test runs.
    const rs = await s.c.post('/api/v1/auth/signup', { email: 'root@example.com', password: 'correct horse battery' });
    const root = { authorization: `Bearer ${rs.body.token}` };
    assert.equal((await s.c.post('/api/v1/admin/analytics/rollup', {}, root)).status, 200);

    await ingest(randomUUID(), ['onboarding_flow_started', 'onboarding_step_completed']);
    await folded();
    const first = await funnel();
    assert.deepEqual(first.users, [1, 1, 0]);
    // Same data version: the stored answer, not a new computation.
    assert.equal((await funnel()).at, first.at);

    // New data folded by the job: within 2 x ANALYTICS_FUNNEL_REFRESH_S the stored answer still serves.
    await ingest(randomUUID(), ['onboarding_flow_started']);
    await folded();
    assert.deepEqual(await funnel(), first);

    // The admin fold refreshes the answers it made stale.
    assert.equal((await s.c.post('/api/v1/admin/analytics/rollup', {}, root)).status, 200);
    const refreshed = await funnel();
    assert.deepEqual(refreshed.users, [2, 1, 0]);
    assert.ok(refreshed.at > first.at, `${refreshed.at} > ${first.at}`);

    // A changed definition never serves an answer computed for the old one.
    const put = await s.c.put(
      '/api/v1/analytics/funnels/onboarding',
      {
        steps: [
          { name: 'start', event: 'onboarding_flow_started' },
          { name: 'step', event: 'onboarding_step_completed' },
        ],
      },
      s.t.console,
    );
    assert.equal(put.status, 200, put.text);
    assert.deepEqual((await funnel()).users, [2, 1]);

    // Sandbox has its own answers (no sandbox data here).
    assert.deepEqual((await funnel('?environment=sandbox')).users, [0, 0]);
  });
});
