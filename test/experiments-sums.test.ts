import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { before, describe, it } from 'node:test';
import { makeEvent } from './helpers/client.js';
import { useTenantApp } from './helpers/suite.js';

/*
 * The fold keeps per-(experiment, environment, variant, metric) sums and the health counts up to date
 * by deltas (exp_sums, exp_health). After each fold of a sequence with late events, a device turning
 * multiple-variant and a late exposure, they must equal a GROUP BY over the per-device state
 * (exp_devices) written here from decisions §10, and the results route must answer them.
 */

const suite = useTenantApp({ ROLLUP_INTERVAL_S: '3600' });
let root: Record<string, string>;
const H = 3_600_000;
const DAY = 24 * H;
const T = Date.now() - 10 * DAY;
const variants = [
  { key: 'control', weight: 50, value: 'a' },
  { key: 'treatment', weight: 50, value: 'b' },
];
const KEYS = ['sums_a', 'sums_b'] as const;
const ids: Record<string, string> = {};
const dev = Object.fromEntries(['A', 'B', 'C', 'D', 'E'].map((k) => [k, randomUUID()]));

const ev = (d: string, name: string, ts: number, properties: Record<string, unknown> = {}) =>
  makeEvent({ event_name: name, ts_ms: ts, user: { anon_id: dev[d] }, properties });
const expose = (d: string, variant: string, ts = T, key: string = KEYS[0]) =>
  ev(d, 'experiment_exposure', ts, { experiment_id: key, variant });
const paid = (d: string, ts: number, price: number) =>
  ev(d, 'purchase_completed', ts, { price, currency: 'USD', product_id: 'pro' });

async function ingest(batch: unknown[]) {
  const r = await suite.c.post('/api/v1/ingest/events', { batch }, { 'x-api-key': suite.t.live.public_key });
  assert.equal(r.status, 202, r.text);
  assert.equal(r.body.rejected, 0, r.text);
}
async function fold() {
  const r = await suite.c.post('/api/v1/admin/experiments/fold', {}, root);
  assert.equal(r.status, 200, r.text);
}

/** Per variant, every metric's sums recomputed from exp_devices (the independent computation). */
async function fromDevices(id: string) {
  const { rows } = await suite.server.db.query(
    `SELECT variant, count(*)::float8 AS n,
            sum((paid > 0)::int)::float8 AS paid, sum(revenue_usd) AS rev, sum(revenue_usd ^ 2) AS rev_ss,
            sum((trials > 0)::int)::float8 AS trial, sum((onboarding > 0)::int)::float8 AS onb,
            sum(('paywall_close' = ANY (event_names))::int)::float8 AS close,
            sum(refunds)::float8 AS m, sum(refunds ^ 2)::float8 AS m_ss, sum(paid)::float8 AS d,
            sum(paid ^ 2)::float8 AS d_ss, sum(refunds * paid)::float8 AS sp
       FROM exp_devices WHERE experiment_id = $1 AND environment = 'production' AND NOT multi
      GROUP BY variant`,
    [id],
  );
  const out: Record<string, Record<string, number[]>> = {};
  for (const r of rows)
    out[r.variant] = {
      paid_conversion: [r.n, r.paid, r.paid],
      revenue: [r.n, r.rev, r.rev_ss],
      trial_started: [r.n, r.trial, r.trial],
      onboarding_completed: [r.n, r.onb, r.onb],
      'event:paywall_close': [r.n, r.close, r.close],
      refund_rate: [r.n, r.m, r.m_ss, r.d, r.d_ss, r.sp],
    };
  const h = await suite.server.db.query(
    `SELECT coverage_needed, count(*)::int AS devices, count(*) FILTER (WHERE multi)::int AS multi
       FROM exp_devices WHERE experiment_id = $1 AND environment = 'production'
      GROUP BY coverage_needed ORDER BY coverage_needed`,
    [id],
  );
  return { sums: out, health: h.rows };
}

/** What the fold maintains, as stored. */
async function maintained(id: string) {
  const { rows } = await suite.server.db.query(
    `SELECT variant, metric, n::float8 AS n, sum::float8 AS s, sum_squares::float8 AS q,
            denominator_sum::float8 AS ds, denominator_sum_squares::float8 AS dq, sum_products::float8 AS sp
       FROM exp_sums WHERE experiment_id = $1 AND environment = 'production' AND n <> 0`,
    [id],
  );
  const out: Record<string, Record<string, number[]>> = {};
  for (const r of rows) {
    out[r.variant] ??= {};
    out[r.variant][r.metric] = r.ds === null ? [r.n, r.s, r.q] : [r.n, r.s, r.q, r.ds, r.dq, r.sp];
  }
  const h = await suite.server.db.query(
    `SELECT coverage_needed, devices::int AS devices, multi::int AS multi
       FROM exp_health WHERE experiment_id = $1 AND environment = 'production' AND devices <> 0
      ORDER BY coverage_needed`,
    [id],
  );
  return { sums: out, health: h.rows };
}

function sameSums(a: Record<string, Record<string, number[]>>, b: Record<string, Record<string, number[]>>) {
  assert.deepEqual(Object.keys(a).sort(), Object.keys(b).sort(), 'variants');
  for (const v of Object.keys(b))
    for (const m of Object.keys(b[v])) {
      const x = a[v][m];
      const y = b[v][m];
      assert.equal(x?.length, y.length, `${v} ${m}`);
      for (let i = 0; i < y.length; i++)
        assert.ok(Math.abs(x[i] - y[i]) <= 1e-9 * Math.max(1, Math.abs(y[i])), `${v} ${m} [${i}]: ${x[i]} vs ${y[i]}`);
    }
}

/** Maintained = recomputed, and the results route answers the recomputed numbers. */
async function check(key: string, expect: { devices: number[]; multi: number }) {
  const id = ids[key];
  const want = await fromDevices(id);
  const got = await maintained(id);
  sameSums(got.sums, want.sums);
  assert.deepEqual(got.health, want.health, 'health counts per coverage needed');
  const r = await suite.c.get(`/api/v1/experiments/${id}/results`, suite.t.console);
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(
    r.body.data.variants.map((v: any) => v.devices),
    expect.devices,
  );
  assert.equal(r.body.data.health.multiple_variant_devices, expect.multi);
  for (const m of r.body.data.metrics)
    for (const v of m.variants) {
      const w = want.sums[v.key]?.[m.metric];
      if (!w) {
        assert.equal(v.n, 0, `${m.metric} ${v.key}`);
        continue;
      }
      const answer = [v.n, v.sum, v.sum_squares];
      if (m.kind === 'ratio') answer.push(v.denominator_sum, v.denominator_sum_squares, v.sum_products);
      sameSums({ x: { y: answer } }, { x: { y: w } });
    }
}

describe('maintained sums equal a recomputation from the per-device state', () => {
  before(async () => {
    const rs = await suite.c.post('/api/v1/auth/signup', {
      email: 'root@example.com',
      password: 'correct horse battery',
    });
    root = { authorization: `Bearer ${rs.body.token}` };
    for (const key of KEYS) {
      const x = await suite.c.post(
        '/api/v1/experiments',
        {
          key,
          name: key,
          variants,
          attribution_days: 7,
          primary_metric: 'paid_conversion',
          // revenue twice: analysed once, summed once.
          secondary_metrics: ['revenue', 'trial_started', 'onboarding_completed', 'event:paywall_close', 'revenue'],
          guardrail_metrics: ['refund_rate'],
        },
        suite.t.console,
      );
      assert.equal(x.status, 201, x.text);
      ids[key] = x.body.data.id;
      const s = await suite.c.post(`/api/v1/experiments/${ids[key]}/start`, {}, suite.t.console);
      assert.equal(s.status, 200, s.text);
    }
  });

  it('first fold', async () => {
    await ingest([
      expose('A', 'control'),
      paid('A', T + H, 10.1),
      paid('A', T + 2 * H, 0.2),
      ev('A', 'purchase_refunded', T + 3 * H, { price: 10.1 }),
      expose('B', 'treatment'),
      paid('B', T + H, 7.3),
      ev('B', 'paywall_close', T + H),
      expose('C', 'control'),
      ev('C', 'purchase_completed', T + H, { price: 0, is_trial: true }),
      ev('C', 'onboarding_flow_completed', T + H),
      expose('D', 'treatment', T + 3 * DAY),
      paid('D', T + DAY, 30.7), // before D's first exposure: not counted yet
      expose('E', 'control', T, KEYS[1]), // E is in the second experiment only
      expose('A', 'treatment', T, KEYS[1]), // A is in both
    ]);
    await fold();
    await check(KEYS[0], { devices: [2, 2], multi: 0 });
    await check(KEYS[1], { devices: [1, 1], multi: 0 });
  });

  it('late events, a device turning multiple-variant, a late exposure', async () => {
    await ingest([
      paid('A', T + DAY, 4.4), // late, in the window (both experiments)
      paid('A', T + 9 * DAY, 50), // late, outside the window
      expose('B', 'control', T + 2 * H), // B turns multiple-variant: leaves the sums
      expose('D', 'treatment', T + 12 * H), // late exposure: t0 moves before D's purchase
    ]);
    await fold();
    await check(KEYS[0], { devices: [2, 1], multi: 1 });
    await check(KEYS[1], { devices: [1, 1], multi: 0 });
  });

  it('more late events on a multiple-variant device and the others', async () => {
    await ingest([
      paid('B', T + 3 * H, 9.9), // a multiple-variant device stays out of the sums
      ev('D', 'purchase_refunded', T + DAY + H, { price: 30.7 }),
      ev('E', 'paywall_close', T + H),
      expose('C', 'control', T + H), // a repeat exposure
    ]);
    await fold();
    await check(KEYS[0], { devices: [2, 1], multi: 1 });
    await check(KEYS[1], { devices: [1, 1], multi: 0 });
    const d = await fromDevices(ids[KEYS[0]]);
    // Hand-checked: treatment is D alone (paid 30.7 and its refund), control A (10.1 + 0.2 + 4.4) and C.
    assert.deepEqual(d.sums.treatment.refund_rate, [1, 1, 1, 1, 1, 1]);
    assert.ok(Math.abs(d.sums.control.revenue[1] - 14.7) < 1e-9);
  });
});
