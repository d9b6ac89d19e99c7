import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import { superAdmin } from './helpers/ad-network.js';
import { makeEvent } from './helpers/client.js';
import { useTenantApp } from './helpers/suite.js';

// The fold's partition threads (fold-workers.ts) read a round's events as binary COPY streams,
// each thread a share of the seq range, and hand the other partitions' rows to their threads.
// Here a round is large enough that its COPY data arrives in many network chunks (rows cut at
// chunk ends) and every partition gets rows from the other's share. The background job waits an
// hour between runs, so the admin fold folds the whole backlog in one round.
describe('analytics: a large round folded by the partition threads', () => {
  const s = useTenantApp({ ROLLUP_INTERVAL_S: '3600', ANALYTICS_FOLD_PARALLEL_MIN: '0' });
  const DEVICES = 800;
  const EVENTS_PER_DEVICE = 10;

  it('folds every event once, as a hand count gives', async () => {
    const start = Date.now() - 3 * 3_600_000;
    const devices = Array.from({ length: DEVICES }, (_, i) => ({
      anon: randomUUID(),
      session: randomUUID(),
      platform: i % 2 ? 'ios' : 'android',
      country: i % 3 ? 'US' : 'DE',
    }));
    // In time order, as SDK traffic arrives: device d's k-th event k minutes after the start (plus d ms).
    const events = Array.from({ length: EVENTS_PER_DEVICE }, (_, k) =>
      devices.map((d, i) =>
        makeEvent({
          event_name: k === 0 ? 'session_start' : k === 5 ? 'paywall_view' : 'screen_view',
          ts_ms: start + k * 60_000 + i,
          user: { anon_id: d.anon },
          device: {
            platform: d.platform,
            os: '17.4',
            app_version: '1.2.3',
            sdk_version: '2.0.0',
            locale: 'en_US',
            country: d.country,
          },
          context: { session_id: d.session },
          properties: { button: 'continue', note: 'x'.repeat(40) },
        }),
      ),
    ).flat();
    for (let i = 0; i < events.length; i += 500) {
      const r = await s.c.post(
        '/api/v1/ingest/events',
        { batch: events.slice(i, i + 500) },
        { 'x-api-key': s.t.live.public_key },
      );
      assert.equal(r.status, 202, r.text);
      assert.equal(r.body.accepted, 500, r.text);
    }
    const root = await superAdmin(s.c);
    const fold = await s.c.post('/api/v1/admin/analytics/rollup', {}, root);
    assert.equal(fold.status, 200, fold.text);
    assert.equal(fold.body.data.folded, DEVICES * EVENTS_PER_DEVICE);

    const k = await s.c.get('/api/v1/analytics/kpis?period=7d', s.t.console);
    assert.equal(k.status, 200, k.text);
    const m = Object.fromEntries(k.body.kpis.map((x: { metric: string; current: number }) => [x.metric, x.current]));
    assert.equal(m.wau, DEVICES);
    assert.equal(m.new_users, DEVICES);
    assert.equal(m.avg_sessions_per_user, 1);
    // Each session runs from its first to its tenth event: 9 minutes.
    assert.equal(m.avg_session_duration, 9 * 60);
    assert.equal(m.paywall_view_rate, 100);

    const rows = await s.server.db.query(
      `SELECT (SELECT count(*)::int FROM an_devices WHERE app_id = $1) AS devices,
      (SELECT count(*)::int FROM an_sessions WHERE app_id = $1) AS sessions,
      (SELECT count(*)::int FROM an_steps WHERE app_id = $1 AND event_name = 'session_start') AS starts,
      (SELECT sum(events_folded)::int FROM an_rollup_state) AS folded`,
      [s.t.appId],
    );
    assert.deepEqual(rows.rows[0], {
      devices: DEVICES,
      sessions: DEVICES,
      starts: DEVICES,
      folded: DEVICES * EVENTS_PER_DEVICE,
    });
    // Both partitions folded a share (each device's events in one partition's transaction).
    const parts = await s.server.db.query(`SELECT count(*)::int AS n FROM an_rollup_state WHERE events_folded > 0`);
    assert.equal(parts.rows[0].n, 2);
  });
});

// The fold's incremental path (stored device state merged with each batch, late events re-placing
// days, first events moving devices) must give what a fold of the same events from scratch gives.
// Three batches, the second of older events (late for most devices), folded by the threads in rounds
// of 700 events; then the rollups are emptied and everything is refolded at once.
describe('analytics: the incremental fold equals a fold from scratch', () => {
  const s = useTenantApp({ ROLLUP_INTERVAL_S: '3600', ANALYTICS_FOLD_PARALLEL_MIN: '0', ANALYTICS_FOLD_CHUNK: '700' });

  it('gives the same answers after late events, moved devices and purchases', async () => {
    let seed = 7;
    const rnd = (n: number) => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % n;
    const devices = Array.from({ length: 150 }, () => randomUUID());
    const names = [
      'session_start',
      'app_open',
      'screen_view',
      'paywall_view',
      'onboarding_flow_started',
      'onboarding_flow_completed',
      'app_crash',
      'purchase_completed',
      'purchase_refunded',
    ];
    const day = 86_400_000;
    const now = Date.now() - 60_000;
    // Events of a batch: their days `from`..`to` days ago; sessions shared by a device's events of one day.
    const batch = (n: number, from: number, to: number) =>
      Array.from({ length: n }, () => {
        const d = rnd(devices.length);
        const ago = from + rnd(to - from + 1);
        const name = names[rnd(names.length)];
        return makeEvent({
          event_name: name,
          ts_ms: now - ago * day - rnd(3_600_000),
          user: { anon_id: devices[d] },
          // A device's platform and country depend on the batch: a late first event moves it.
          device: {
            platform: (d + from) % 2 ? 'ios' : 'android',
            os: '17',
            app_version: '1',
            sdk_version: '2',
            locale: 'en',
            country: ['US', 'DE', 'JP'][(d + from) % 3],
          },
          context: { session_id: `00000000-0000-4000-8000-${(d * 100 + ago).toString(16).padStart(12, '0')}` },
          properties: name.startsWith('purchase')
            ? {
                price: 1 + rnd(20),
                currency: rnd(2) ? 'USD' : 'EUR',
                period: ['P1M', 'P1Y', 'P1W'][rnd(3)],
                is_trial: rnd(4) === 0,
              }
            : {},
        });
      });
    const root = await superAdmin(s.c);
    const fold = async () => {
      const r = await s.c.post('/api/v1/admin/analytics/rollup', {}, root);
      assert.equal(r.status, 200, r.text);
    };
    const ingest = async (events: unknown[]) => {
      for (let i = 0; i < events.length; i += 500) {
        const r = await s.c.post(
          '/api/v1/ingest/events',
          { batch: events.slice(i, i + 500) },
          { 'x-api-key': s.t.live.public_key },
        );
        assert.equal(r.status, 202, r.text);
      }
    };
    const answers = async () => {
      const out: unknown[] = [];
      for (const p of [
        '/api/v1/analytics/kpis?period=30d',
        '/api/v1/analytics/kpis?period=7d&platform=ios',
        '/api/v1/analytics/retention?segment=country',
        '/api/v1/analytics/kpis/timeseries?metrics=dau,wau,mau,new_users,avg_session_duration,avg_sessions_per_user,revenue_daily,mrr,refund_rate,crash_free_rate,paywall_view_rate,onboarding_completion_rate,trial_start_rate,retention_d1&period=30d&segment=platform',
      ]) {
        const r = await s.c.get(p, s.t.console);
        assert.equal(r.status, 200, r.text);
        const { meta, ...body } = r.body;
        out.push(body);
      }
      return out;
    };
    await ingest(batch(1500, 0, 6));
    await fold();
    await ingest(batch(1500, 5, 25));
    await fold();
    await ingest(batch(1000, 0, 28));
    await fold();
    const incremental = await answers();

    await s.server.db.query(`TRUNCATE an_devices, an_active_hist, an_sessions, an_session_hist, an_purchases, an_steps, an_cohort_hist,
      an_onb_hist, an_flag_hist, an_rev_hist`);
    await s.server.db.query(`UPDATE an_rollup_state SET watermark = 0`);
    await fold();
    assert.deepEqual(await answers(), incremental);
  });
});
