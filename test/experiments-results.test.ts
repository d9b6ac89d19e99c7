import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { before, describe, it } from 'node:test';
import { bucketOf } from '@mobile-sdk-backend/sdk';
import { makeEvent } from './helpers/client.js';
import { useTenantApp } from './helpers/suite.js';

/*
 * A hand-checked data set. Experiment "golden": control / treatment 50/50, coverage 100, attribution
 * 7 days. T = 12 days ago. Every device's first exposure is at T unless said.
 *  control   C1 paid 10 USD T+1h, refund T+2h             -> paid 1, revenue 10, M 1 D 1
 *            C2 trial T+1d, paywall_close T+1d             -> trial 1, event 1
 *            C3 paid 20 EUR T+8d (after the window) and 5 USD T-1h (before t0) -> nothing
 *            C4 nothing
 *            C5 reports control but is assigned treatment (a mismatch, still analysed); onboarding done T+1h
 *  treatment T1 paid 10 USD T+1h and 5 USD T+2h            -> paid 1, revenue 15, M 0 D 2
 *            T2 paid 8 EUR T+3h (1.25 -> 10 USD), refund T+4h -> paid 1, revenue 10, M 1 D 1
 *            T3 trial + onboarding done T+2h               -> trial 1, onboarding 1
 *            L1 exposure T+2d and paid 20 USD T+1d (before t0: nothing); LATER a late exposure at T+12h
 *               moves t0 earlier                            -> paid 1, revenue 20, M 0 D 1
 *            L2 nothing at first; LATER late purchases 4 USD at T+1d and 30 USD at T+10d (outside)
 *                                                           -> paid 1, revenue 4, M 0 D 1
 *  excluded  X1 exposed to both variants (a multiple-variant device, and a mismatch)
 *            N1 exposure without analytics consent; S1 exposure in sandbox only
 * Control n 5: paid 1, revenue 10 (ss 100), trial 1, onboarding 1, paywall_close 1, refunds M 1 D 1 (ss 1, 1; sp 1).
 * Treatment n 5: paid 4, revenue 49 (ss 225 + 100 + 400 + 16 = 741), trial 1, onboarding 1, paywall_close 0,
 *   refunds M 1 (ss 1), D 2 + 1 + 1 + 1 = 5 (ss 4 + 1 + 1 + 1 = 7), sp 1.
 */

const suite = useTenantApp();
let root: Record<string, string>;
const H = 3_600_000;
const DAY = 24 * H;
const T = Date.now() - 12 * DAY;
const KEY = 'golden';
let expId: string;

/** A device assigned (by the SDK's independent bucketing) to the wanted variant of KEY. */
function deviceIn(variant: 'control' | 'treatment', key = KEY): string {
  for (;;) {
    const id = randomUUID();
    if ((bucketOf(id, key) < 5000 ? 'control' : 'treatment') === variant) return id;
  }
}
const dev = {
  C1: deviceIn('control'),
  C2: deviceIn('control'),
  C3: deviceIn('control'),
  C4: deviceIn('control'),
  C5: deviceIn('treatment'),
  T1: deviceIn('treatment'),
  T2: deviceIn('treatment'),
  T3: deviceIn('treatment'),
  L1: deviceIn('treatment'),
  L2: deviceIn('treatment'),
  X1: deviceIn('control'),
  N1: deviceIn('control'),
  S1: deviceIn('control'),
};
type Dev = keyof typeof dev;

const ev = (d: Dev, name: string, ts: number, properties: Record<string, unknown> = {}, consent = true) =>
  makeEvent({
    event_name: name,
    ts_ms: ts,
    user: { anon_id: dev[d] },
    properties,
    privacy: { consent: { analytics: consent } },
  });
const expose = (d: Dev, variant: string, ts = T, key = KEY, consent = true) =>
  ev(d, 'experiment_exposure', ts, { experiment_id: key, variant }, consent);
const paid = (d: Dev, ts: number, price: number, currency = 'USD') =>
  ev(d, 'purchase_completed', ts, { price, currency, product_id: 'pro' });

async function ingest(batch: unknown[], key = suite.t.live.public_key) {
  const r = await suite.c.post('/api/v1/ingest/events', { batch }, { 'x-api-key': key });
  assert.equal(r.status, 202, r.text);
  assert.equal(r.body.rejected, 0, r.text);
}
async function fold() {
  const r = await suite.c.post('/api/v1/admin/experiments/fold', {}, root);
  assert.equal(r.status, 200, r.text);
  return r.body.data;
}
async function results(id = expId, env = 'production') {
  const r = await suite.c.get(`/api/v1/experiments/${id}/results?environment=${env}`, suite.t.console);
  assert.equal(r.status, 200, r.text);
  return r.body.data;
}
async function createAndStart(body: Record<string, unknown>) {
  const x = await suite.c.post('/api/v1/experiments', body, suite.t.console);
  assert.equal(x.status, 201, x.text);
  const s = await suite.c.post(`/api/v1/experiments/${x.body.data.id}/start`, {}, suite.t.console);
  assert.equal(s.status, 200, s.text);
  return x.body.data.id as string;
}
const variants = [
  { key: 'control', weight: 50, value: 'a' },
  { key: 'treatment', weight: 50, value: 'b' },
];

// Run by each describe's hook (the suite's server is up by then), once.
let ready: Promise<void> | null = null;
const setup = () => (ready ??= prepare());
async function prepare() {
  const rs = await suite.c.post('/api/v1/auth/signup', {
    email: 'root@example.com',
    password: 'correct horse battery',
  });
  root = { authorization: `Bearer ${rs.body.token}` };
  const day = new Date(T - 5 * DAY).toISOString().slice(0, 10);
  const rate = await suite.c.put(
    '/api/v1/admin/exchange-rates',
    { rates: [{ currency: 'EUR', day, usd_per_unit: 1.25 }] },
    root,
  );
  assert.equal(rate.status, 200, rate.text);
  expId = await createAndStart({
    key: KEY,
    name: 'Golden',
    variants,
    attribution_days: 7,
    primary_metric: 'paid_conversion',
    secondary_metrics: ['revenue', 'trial_started', 'onboarding_completed', 'event:paywall_close'],
    guardrail_metrics: ['refund_rate'],
  });
}

/** Per-variant sums straight from the events table (decisions §10 in one SQL query): the independent check. */
async function sumsFromEvents(env: string) {
  const { rows } = await suite.server.db.query(
    `WITH x AS (
       SELECT anon_id, min(ts) AS t0, min(payload::jsonb #>> '{properties,variant}') AS variant,
              count(DISTINCT payload::jsonb #>> '{properties,variant}') AS nv
         FROM events WHERE app_id = $1 AND environment = $2 AND consent AND event_name = 'experiment_exposure'
          AND payload::jsonb #>> '{properties,experiment_id}' = $3 GROUP BY anon_id
     ), w AS (
       SELECT x.anon_id, x.variant, e.event_name,
              coalesce((e.payload::jsonb #> '{properties,is_trial}') = 'true'::jsonb, false) AS trial,
              (e.payload::jsonb #>> '{properties,price}')::float8 * usd_rate(coalesce(e.payload::jsonb #>> '{properties,currency}', 'USD'), (e.ts AT TIME ZONE 'UTC')::date) AS usd
         FROM x LEFT JOIN events e ON e.app_id = $1 AND e.environment = $2 AND e.consent AND e.anon_id = x.anon_id
          AND e.ts >= x.t0 AND e.ts < x.t0 + interval '7 days'
        WHERE x.nv = 1
     ), d AS (
       SELECT anon_id, variant,
              count(*) FILTER (WHERE event_name = 'purchase_completed' AND NOT trial) AS paid_n,
              coalesce(sum(usd) FILTER (WHERE event_name = 'purchase_completed' AND NOT trial), 0) AS revenue,
              bool_or(event_name = 'purchase_completed' AND trial) AS trial,
              bool_or(event_name = 'onboarding_flow_completed') AS onboarding,
              bool_or(event_name = 'paywall_close') AS closed,
              count(*) FILTER (WHERE event_name = 'purchase_refunded') AS refunds
         FROM w GROUP BY anon_id, variant
     )
     SELECT variant, count(*)::int AS n, sum((paid_n > 0)::int)::int AS paid, sum(revenue) AS revenue,
            sum(revenue ^ 2) AS revenue_ss, sum(coalesce(trial, false)::int)::int AS trial,
            sum(coalesce(onboarding, false)::int)::int AS onboarding, sum(coalesce(closed, false)::int)::int AS closed,
            sum(refunds)::int AS m, sum(refunds ^ 2)::int AS m_ss, sum(paid_n)::int AS d, sum(paid_n ^ 2)::int AS d_ss,
            sum(refunds * paid_n)::int AS sp
       FROM d GROUP BY variant ORDER BY variant`,
    [suite.t.appId, env, KEY],
  );
  return Object.fromEntries(rows.map((r) => [r.variant, r]));
}

const near = (a: number | null, b: number, what: string) =>
  assert.ok(a !== null && Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(b)), `${what}: ${a} vs ${b}`);

/** The expected comparison, restated from decisions §10 (not from stats.ts). */
function expected(c: { n: number; mean: number; v: number }, t: { n: number; mean: number; v: number }) {
  const est = t.mean - c.mean;
  const se = Math.sqrt(t.v / t.n + c.v / c.n);
  const lnA = Math.log(0.05);
  const r2 = (-2 * lnA + Math.log(-2 * lnA + 1)) / 5000;
  const N = t.n + c.n;
  const seqHalf =
    se * Math.sqrt(N) * Math.sqrt(((2 * (N * r2 + 1)) / (N * N * r2)) * Math.log(Math.sqrt(N * r2 + 1) / 0.05));
  const rel = est / c.mean;
  const relSe = Math.sqrt(t.v / (c.mean ** 2 * t.n) + (c.v * t.mean ** 2) / (c.mean ** 4 * c.n));
  return { est, se, seqHalf, rel, relSe };
}

/** Phi by the Abramowitz-Stegun 26.2.17 approximation (|error| < 7.5e-8): independent of stats.ts. */
function phi(z: number): number {
  const t = 1 / (1 + 0.2316419 * Math.abs(z));
  const poly = t * (0.31938153 + t * (-0.356563782 + t * (1.781477937 + t * (-1.821255978 + t * 1.330274429))));
  const tail = (Math.exp((-z * z) / 2) / Math.sqrt(2 * Math.PI)) * poly;
  return z >= 0 ? 1 - tail : tail;
}

describe('experiment results: a hand-checked data set', () => {
  before(() => setup());
  it('first fold: late devices not yet complete', async () => {
    await ingest([
      expose('C1', 'control'),
      paid('C1', T + H, 10),
      ev('C1', 'purchase_refunded', T + 2 * H, { price: 10, currency: 'USD' }),
      expose('C2', 'control'),
      ev('C2', 'purchase_completed', T + DAY, { price: 0, is_trial: true }),
      ev('C2', 'paywall_close', T + DAY),
      expose('C3', 'control'),
      paid('C3', T + 8 * DAY, 20, 'EUR'),
      paid('C3', T - H, 5),
      expose('C4', 'control'),
      expose('C5', 'control'),
      ev('C5', 'onboarding_flow_completed', T + H),
      expose('T1', 'treatment'),
      paid('T1', T + H, 10),
      paid('T1', T + 2 * H, 5),
      expose('T2', 'treatment'),
      paid('T2', T + 3 * H, 8, 'EUR'),
      ev('T2', 'purchase_refunded', T + 4 * H, { price: 8, currency: 'EUR' }),
      expose('T3', 'treatment'),
      ev('T3', 'purchase_completed', T + 2 * H, { price: 0, is_trial: true }),
      ev('T3', 'onboarding_flow_completed', T + 2 * H),
      expose('L1', 'treatment', T + 2 * DAY),
      paid('L1', T + DAY, 20),
      expose('L2', 'treatment'),
      expose('X1', 'control'),
      expose('X1', 'treatment', T + H),
      expose('N1', 'control', T, KEY, false),
      expose('T1', 'treatment', T + 5 * H), // a repeat exposure changes nothing
    ]);
    await ingest([expose('S1', 'control')], suite.t.sandbox.public_key);
    await fold();
    const r = await results();
    const rev = r.metrics.find((m: any) => m.metric === 'revenue');
    const t = rev.variants.find((v: any) => v.key === 'treatment');
    assert.equal(t.n, 5);
    assert.equal(t.sum, 25, 'L1 has no purchase in its window yet (15 + 10)');
  });

  it('late events land in their window: a late exposure moves t0 earlier, a late purchase counts', async () => {
    await ingest([expose('L1', 'treatment', T + 12 * H), paid('L2', T + DAY, 4), paid('L2', T + 10 * DAY, 30)]);
    await fold();
    const r = await results();
    const rev = r.metrics.find((m: any) => m.metric === 'revenue');
    assert.equal(rev.variants.find((v: any) => v.key === 'treatment').sum, 49);
  });

  it('every number of the answer matches the hand-worked values and a query over raw events', async () => {
    const r = await results();
    assert.equal(r.experiment_id, expId);
    assert.equal(r.key, KEY);
    assert.equal(r.status, 'running');
    assert.ok(r.as_of);
    assert.deepEqual(r.variants, [
      { key: 'control', weight: 50, devices: 5 },
      { key: 'treatment', weight: 50, devices: 5 },
    ]);
    assert.equal(r.health.multiple_variant_devices, 1);
    assert.equal(r.health.assignment_mismatches, 2, 'C5 and X1');
    assert.equal(r.health.srm.chi2, 0);
    near(r.health.srm.p_value, 1, 'srm p');
    assert.equal(r.health.srm.flagged, false);

    // Hand-worked sums: [n, sum, sum_squares] for control and treatment.
    const hand: Record<string, { kind: string; role: string; c: number[]; t: number[] }> = {
      paid_conversion: { kind: 'proportion', role: 'primary', c: [5, 1, 1], t: [5, 4, 4] },
      revenue: { kind: 'mean', role: 'secondary', c: [5, 10, 100], t: [5, 49, 741] },
      trial_started: { kind: 'proportion', role: 'secondary', c: [5, 1, 1], t: [5, 1, 1] },
      onboarding_completed: { kind: 'proportion', role: 'secondary', c: [5, 1, 1], t: [5, 1, 1] },
      'event:paywall_close': { kind: 'proportion', role: 'secondary', c: [5, 1, 1], t: [5, 0, 0] },
      refund_rate: { kind: 'ratio', role: 'guardrail', c: [5, 1, 1], t: [5, 1, 1] },
    };
    const raw = await sumsFromEvents('production');
    const fromRaw: Record<string, (v: any) => number[]> = {
      paid_conversion: (v) => [v.n, v.paid, v.paid],
      revenue: (v) => [v.n, v.revenue, v.revenue_ss],
      trial_started: (v) => [v.n, v.trial, v.trial],
      onboarding_completed: (v) => [v.n, v.onboarding, v.onboarding],
      'event:paywall_close': (v) => [v.n, v.closed, v.closed],
      refund_rate: (v) => [v.n, v.m, v.m_ss],
    };
    assert.deepEqual(
      r.metrics.map((m: any) => m.metric),
      Object.keys(hand),
    );
    for (const m of r.metrics) {
      const h = hand[m.metric];
      assert.equal(m.kind, h.kind, m.metric);
      assert.equal(m.role, h.role, m.metric);
      const stats: Record<string, { n: number; mean: number; v: number }> = {};
      for (const [i, key] of ['control', 'treatment'].entries()) {
        const v = m.variants[i];
        const [n, sum, ss] = key === 'control' ? h.c : h.t;
        assert.equal(v.key, key);
        assert.deepEqual([v.n, v.sum, v.sum_squares], [n, sum, ss], `${m.metric} ${key}`);
        const fr = fromRaw[m.metric](raw[key]);
        for (let k = 0; k < 3; k++) near(fr[k], [n, sum, ss][k], `${m.metric} ${key} raw events [${k}]`);
        if (h.kind === 'ratio') {
          const [ds, dss, sp] = key === 'control' ? [1, 1, 1] : [5, 7, 1];
          assert.deepEqual([v.denominator_sum, v.denominator_sum_squares, v.sum_products], [ds, dss, sp], key);
          assert.deepEqual([raw[key].d, raw[key].d_ss, raw[key].sp], [ds, dss, sp], `${key} raw`);
          const mM = sum / n;
          const mD = ds / n;
          const vM = (ss - (sum * sum) / n) / (n - 1);
          const vD = (dss - (ds * ds) / n) / (n - 1);
          const cMD = (sp - (sum * ds) / n) / (n - 1);
          const variance = (vM - 2 * (mM / mD) * cMD + (vD * mM * mM) / (mD * mD)) / (mD * mD);
          near(v.mean, sum / ds, `${key} ratio mean`);
          near(v.variance, variance, `${key} ratio variance`);
          stats[key] = { n, mean: sum / ds, v: variance };
        } else {
          assert.equal(v.denominator_sum, undefined);
          near(v.mean, sum / n, `${m.metric} ${key} mean`);
          near(v.variance, (ss - (sum * sum) / n) / (n - 1), `${m.metric} ${key} variance`);
          stats[key] = { n, mean: sum / n, v: (ss - (sum * sum) / n) / (n - 1) };
        }
      }
      assert.equal(m.comparisons.length, 1);
      const cmp = m.comparisons[0];
      assert.equal(cmp.variant, 'treatment');
      assert.equal(cmp.baseline, 'control');
      const e = expected(stats.control, stats.treatment);
      near(cmp.absolute.estimate, e.est, `${m.metric} estimate`);
      if (e.se === 0) {
        assert.equal(cmp.absolute.ci_95, null);
        continue;
      }
      near(cmp.absolute.ci_95[0], e.est - 1.959964 * e.se, `${m.metric} ci low`);
      near(cmp.absolute.ci_95[1], e.est + 1.959964 * e.se, `${m.metric} ci high`);
      assert.ok(Math.abs(cmp.absolute.p_value - 2 * (1 - phi(Math.abs(e.est) / e.se))) < 1e-6, `${m.metric} p`);
      near(cmp.sequential.ci_95[0], e.est - e.seqHalf, `${m.metric} sequential low`);
      near(cmp.sequential.ci_95[1], e.est + e.seqHalf, `${m.metric} sequential high`);
      near(cmp.relative.estimate, e.rel, `${m.metric} relative`);
      near(cmp.relative.ci_95[0], e.rel - 1.959964 * e.relSe, `${m.metric} relative low`);
    }
    // Worked by hand for the primary metric: 4/5 - 1/5 = 0.6; variances 0.2 and 0.2, se = sqrt(0.08).
    const primary = r.metrics[0].comparisons[0];
    near(primary.absolute.estimate, 0.6, 'paid estimate');
    near(primary.absolute.ci_95[1], 0.6 + 1.959964 * Math.sqrt(0.08), 'paid ci high');
    near(primary.relative.estimate, 3, 'paid relative (0.6 / 0.2)');
  });

  it('sandbox results are separate: only the sandbox device', async () => {
    const r = await results(expId, 'sandbox');
    assert.deepEqual(
      r.variants.map((v: any) => v.devices),
      [1, 0],
    );
    assert.equal(r.health.multiple_variant_devices, 0);
    assert.equal(r.metrics[0].variants[1].mean, null, 'no treatment devices: mean undefined');
    assert.equal(r.metrics[0].comparisons[0].absolute.estimate, null);
    // 1 vs 0 at 50/50: chi2 = 2 x (0.5^2 / 0.5) = 1.
    assert.equal(r.health.srm.chi2, 1);
  });
});

describe('sample ratio mismatch blocks ship', () => {
  before(() => setup());
  it('a 60/40 split of a 50/50 experiment is flagged; ship answers 409 srm_detected unless acknowledged', async () => {
    const id = await createAndStart({ key: 'srm_check', name: 'SRM', variants, primary_metric: 'trial_started' });
    const batch = Array.from({ length: 1000 }, (_, i) =>
      makeEvent({
        event_name: 'experiment_exposure',
        ts_ms: T + i * 1000,
        properties: { experiment_id: 'srm_check', variant: i < 600 ? 'control' : 'treatment' },
      }),
    );
    await ingest(batch.slice(0, 500));
    await ingest(batch.slice(500));
    await fold();
    const r = await results(id);
    assert.deepEqual(
      r.variants.map((v: any) => v.devices),
      [600, 400],
    );
    assert.equal(r.health.srm.chi2, 40); // (600 - 500)^2 / 500 + (400 - 500)^2 / 500
    assert.ok(r.health.srm.p_value < 1e-9);
    assert.equal(r.health.srm.flagged, true);
    const refused = await suite.c.post(`/api/v1/experiments/${id}/ship`, { variant: 'treatment' }, suite.t.console);
    assert.equal(refused.status, 409, refused.text);
    assert.equal(refused.body.code, 'srm_detected');
    assert.equal((await suite.c.get(`/api/v1/experiments/${id}`, suite.t.console)).body.data.status, 'running');
    const shipped = await suite.c.post(
      `/api/v1/experiments/${id}/ship`,
      { variant: 'treatment', acknowledge_srm: true },
      suite.t.console,
    );
    assert.equal(shipped.status, 200, shipped.text);
    assert.equal(shipped.body.data.shipped_variant, 'treatment');
  });
});
