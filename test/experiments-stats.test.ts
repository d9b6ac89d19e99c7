import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { bucketOf as sdkBucketOf, murmur3 } from '@mobile-sdk-backend/sdk';
import { assign, bucketOf, coverageNeeded, NEVER_MATCHES } from '../src/modules/experiments/assignment.js';
import { mulberry32 } from '../scripts/demo/prng.js';
import {
  chiSquareCdf,
  chiSquareSf,
  compare,
  normalCdf,
  sequentialHalfWidth,
  srm,
  summarize,
  Z_95,
} from '../src/modules/experiments/stats.js';

const close = (a: number | null, b: number, tol: number, what: string) =>
  assert.ok(a !== null && Math.abs(a - b) <= tol, `${what}: ${a} vs ${b} (tolerance ${tol})`);

describe('assignment: murmur3 x86 32, seed 0, over utf8(unit + ":" + key) % 10000', () => {
  it('murmur3 agrees with the published reference vectors', () => {
    assert.equal(murmur3(''), 0);
    assert.equal(murmur3('hello'), 0x248bfa47);
    assert.equal(murmur3('Hello, world!'), 0xc0363e43);
    assert.equal(murmur3('The quick brown fox jumps over the lazy dog'), 0x2e4ff723);
  });

  // [unit, bucket for key paywall_q4, 50/50 at 100%, 50/50 at 20%, 34/33/33 at 50%]. The same vectors
  // are in the SDK's README. Ranges: 50/50 at 20% = control [0, 1000), treatment [5000, 6000);
  // 34/33/33 at 50% = a [0, 1700), b [3400, 5050), c [6700, 8350).
  const VECTORS: [string, number, string, string | null, string | null][] = [
    ['user-1', 6573, 'treatment', null, null],
    ['user-2', 6459, 'treatment', null, null],
    ['user-16', 5516, 'treatment', 'treatment', null],
    ['user-1000', 801, 'control', 'control', 'a'],
    ['user-1001', 8178, 'treatment', null, 'c'],
    ['dev-a', 925, 'control', 'control', 'a'],
    ['Zoë', 9451, 'treatment', null, null],
    ['用户', 7259, 'treatment', null, 'c'],
    ['u-🚀', 3481, 'control', null, 'b'],
  ];
  const two = [
    { key: 'control', weight: 50 },
    { key: 'treatment', weight: 50 },
  ];
  const three = [
    { key: 'a', weight: 34 },
    { key: 'b', weight: 33 },
    { key: 'c', weight: 33 },
  ];

  it('buckets and variants match the vectors, the SDK and the ranges worked out by hand', () => {
    for (const [unit, bucket, full, twenty, third] of VECTORS) {
      assert.equal(bucketOf(unit, 'paywall_q4'), bucket, unit);
      assert.equal(sdkBucketOf(unit, 'paywall_q4'), bucket, `${unit} (SDK)`);
      assert.equal(assign({ key: 'paywall_q4', variants: two, coverage_pct: 100 }, unit), full, unit);
      assert.equal(assign({ key: 'paywall_q4', variants: two, coverage_pct: 20 }, unit), twenty, `${unit} at 20%`);
      assert.equal(assign({ key: 'paywall_q4', variants: three, coverage_pct: 50 }, unit), third, `${unit} 3-way`);
    }
  });

  it('the server function equals the SDK on 5,000 units, non-ASCII included', () => {
    for (let i = 0; i < 5000; i++) {
      const unit = `${i % 3 === 0 ? 'ü' : ''}${i.toString(36)}${i % 7 === 0 ? '😀' : ''}`;
      assert.equal(bucketOf(unit, 'exp-x'), sdkBucketOf(unit, 'exp-x'), unit);
    }
  });

  it('coverage needed: the smallest coverage at which an exposure matches its assignment', () => {
    const exp = { key: 'paywall_q4', variants: two };
    // user-16 has bucket 5516: treatment covers [5000, 5000 + 50 c), so c = 11 (5550) is the first.
    assert.equal(coverageNeeded(exp, 'user-16', 'treatment'), 11);
    assert.equal(assign({ ...exp, coverage_pct: 11 }, 'user-16'), 'treatment');
    assert.equal(assign({ ...exp, coverage_pct: 10 }, 'user-16'), null);
    assert.equal(coverageNeeded(exp, 'user-16', 'control'), NEVER_MATCHES);
    assert.equal(coverageNeeded(exp, 'user-16', 'nope'), NEVER_MATCHES);
    // user-1000 has bucket 801: control [0, 50 c) needs c = 17 (850).
    assert.equal(coverageNeeded(exp, 'user-1000', 'control'), 17);
  });
});

/** Phi by Simpson's rule over the density: an independent computation. */
function simpsonPhi(z: number): number {
  const lo = -12;
  const steps = 20_000;
  const h = (z - lo) / steps;
  const f = (x: number) => Math.exp((-x * x) / 2) / Math.sqrt(2 * Math.PI);
  let s = f(lo) + f(z);
  for (let i = 1; i < steps; i++) s += f(lo + i * h) * (i % 2 ? 4 : 2);
  return (s * h) / 3;
}

describe('stats: distributions', () => {
  it('normal CDF against tabulated values and a numerical integration', () => {
    close(normalCdf(0), 0.5, 1e-15, 'Phi(0)');
    close(normalCdf(Z_95), 0.975, 1e-7, 'Phi(1.959964)');
    close(normalCdf(-1), 0.15865525393145707, 1e-13, 'Phi(-1)');
    close(normalCdf(-3), 0.0013498980316301, 1e-15, 'Phi(-3)');
    close(normalCdf(-5) / 2.866515718791939e-7, 1, 1e-9, 'Phi(-5) relative');
    for (let z = -6; z <= 6; z += 0.37) close(normalCdf(z), simpsonPhi(z), 1e-10, `Phi(${z})`);
  });

  it('chi-square: closed form for 2 degrees of freedom, critical values for 1 and 3', () => {
    for (let x = 0.01; x < 60; x *= 1.7) close(chiSquareSf(x, 2) / Math.exp(-x / 2), 1, 1e-12, `sf(${x}, 2)`);
    // 1 degree of freedom: sf(x) = 2 (1 - Phi(sqrt x)), Phi by integration.
    for (const x of [0.2, 1, 3.84, 9, 20])
      close(chiSquareSf(x, 1), 2 * (1 - simpsonPhi(Math.sqrt(x))), 1e-9, `sf(${x}, 1)`);
    close(chiSquareSf(3.841458820694124, 1), 0.05, 1e-12, 'df1 95%');
    close(chiSquareSf(10.827566170662733, 1), 0.001, 1e-12, 'df1 99.9%');
    close(chiSquareCdf(7.814727903251178, 3), 0.95, 1e-12, 'df3 95%');
    close(chiSquareSf(16.26623619623813, 3), 0.001, 1e-12, 'df3 99.9%');
    close(chiSquareSf(24.32188634827563, 7), 0.001, 1e-11, 'df7 99.9%');
  });
});

/** Independent per-device statistics from raw values (two-pass). */
function raw(ys: number[]) {
  const n = ys.length;
  const mean = ys.reduce((s, y) => s + y, 0) / n;
  const variance = ys.reduce((s, y) => s + (y - mean) ** 2, 0) / (n - 1);
  return { n, mean, variance };
}
const sums = (ys: number[]) => ({
  n: ys.length,
  sum: ys.reduce((s, y) => s + y, 0),
  sum_squares: ys.reduce((s, y) => s + y * y, 0),
});

describe('stats: per-variant summaries and comparisons', () => {
  const control = [0, 1, 0, 0, 1, 0, 0, 0, 1, 0, 0, 1];
  const treatment = [1, 1, 0, 1, 0, 1, 0, 1, 1, 0];

  it('mean, variance, absolute and relative effects and their intervals match a two-pass computation', () => {
    const c = raw(control);
    const t = raw(treatment);
    const sc = summarize('proportion', sums(control));
    const st = summarize('proportion', sums(treatment));
    close(sc.mean, c.mean, 1e-15, 'control mean');
    close(sc.variance, c.variance, 1e-14, 'control variance');
    const cmp = compare({ ...sc, n: c.n }, { ...st, n: t.n }, 5000);
    const est = t.mean - c.mean; // 0.6 - 1/3
    close(cmp.absolute.estimate, 0.6 - 1 / 3, 1e-15, 'estimate');
    const se = Math.sqrt(t.variance / t.n + c.variance / c.n);
    close(cmp.absolute.ci_95![0], est - 1.959964 * se, 1e-12, 'ci low');
    close(cmp.absolute.ci_95![1], est + 1.959964 * se, 1e-12, 'ci high');
    close(cmp.absolute.p_value, 2 * (1 - simpsonPhi(Math.abs(est) / se)), 1e-9, 'p-value');
    close(cmp.relative.estimate, est / c.mean, 1e-14, 'relative');
    const rse = Math.sqrt(t.variance / (c.mean ** 2 * t.n) + (c.variance * t.mean ** 2) / (c.mean ** 4 * c.n));
    close(cmp.relative.ci_95![0], est / c.mean - 1.959964 * rse, 1e-12, 'relative ci low');
    // GrowthBook's asymptotic confidence sequence, written as rho^2 = r2 and the variance sigma^2 = se^2 N.
    const N = t.n + c.n;
    const r2 = (-2 * Math.log(0.05) + Math.log(-2 * Math.log(0.05) + 1)) / 5000;
    const half =
      Math.sqrt(se * se * N) * Math.sqrt(((2 * (N * r2 + 1)) / (N * N * r2)) * Math.log(Math.sqrt(N * r2 + 1) / 0.05));
    close(cmp.sequential.ci_95![1], est + half, 1e-12, 'sequential ci high');
    assert.ok(half > 1.959964 * se, 'the always-valid interval is wider');
    close(sequentialHalfWidth(se, N, 5000), half, 1e-12, 'half width');
  });

  it('ratio metric: delta-method variance equals the variance of the linearised per-device values', () => {
    const M = [0, 1, 0, 2, 0, 1, 0, 0, 1, 0];
    const D = [1, 1, 0, 3, 2, 1, 0, 1, 2, 1];
    const s = {
      n: M.length,
      sum: M.reduce((a, b) => a + b, 0),
      sum_squares: M.reduce((a, b) => a + b * b, 0),
      denominator_sum: D.reduce((a, b) => a + b, 0),
      denominator_sum_squares: D.reduce((a, b) => a + b * b, 0),
      sum_products: M.reduce((a, m, i) => a + m * D[i], 0),
    };
    const r = s.sum / s.denominator_sum;
    const mD = s.denominator_sum / s.n;
    const z = raw(M.map((m, i) => (m - r * D[i]) / mD));
    const out = summarize('ratio', s);
    close(out.mean, 5 / 12, 1e-15, 'ratio mean');
    close(out.variance, z.variance, 1e-12, 'ratio variance');
  });

  it('undefined values are null: n < 2, zero control mean, zero variance in both', () => {
    const one = compare({ n: 1, mean: 1, variance: null }, { n: 5, mean: 0.2, variance: 0.2 }, 5000);
    assert.equal(one.absolute.ci_95, null);
    assert.equal(one.absolute.p_value, null);
    assert.equal(one.sequential.ci_95, null);
    const zero = compare({ n: 5, mean: 0, variance: 0 }, { n: 5, mean: 0.4, variance: 0.3 }, 5000);
    assert.equal(zero.relative.estimate, null);
    assert.equal(zero.relative.ci_95, null);
    assert.ok(zero.absolute.ci_95);
    const flat = compare({ n: 5, mean: 1, variance: 0 }, { n: 5, mean: 1, variance: 0 }, 5000);
    assert.equal(flat.absolute.estimate, 0);
    assert.equal(flat.absolute.ci_95, null);
    assert.equal(flat.absolute.p_value, null);
    assert.deepEqual(summarize('mean', { n: 0, sum: 0, sum_squares: 0 }), { mean: null, variance: null });
    assert.equal(summarize('ratio', { n: 3, sum: 0, sum_squares: 0, denominator_sum: 0 }).mean, null);
  });

  it('SRM: chi-square over all variants, zero-device variants included, flagged below p = 0.001', () => {
    const s = srm([600, 400], [50, 50]);
    assert.equal(s.chi2, 40); // (600 - 500)^2 / 500 x 2
    close(s.p_value, 2 * (1 - simpsonPhi(Math.sqrt(40))), 1e-12, 'p');
    assert.equal(s.flagged, true);
    const ok = srm([510, 490], [50, 50]);
    assert.equal(ok.flagged, false);
    const empty = srm([10, 0], [50, 50]);
    assert.equal(empty.chi2, 10);
    assert.equal(empty.flagged, false); // p = 0.00157
    assert.equal(srm([0, 30, 0], [34, 33, 33]).flagged, true);
    assert.deepEqual(srm([0, 0], [50, 50]), { chi2: null, p_value: null, flagged: false });
  });
});

describe('A/A simulation: peeking every day for 30 days', () => {
  it('the fixed-sample interval excludes 0 at some look far more often than 5%; the sequential one stays at or under 5%', () => {
    const EXPERIMENTS = 1000;
    const DAYS = 30;
    const PER_DAY = 100; // devices per arm per day
    const P = 0.1; // the same conversion rate in both arms
    const next = mulberry32(20261128);
    let fixedHits = 0;
    let seqHits = 0;
    for (let e = 0; e < EXPERIMENTS; e++) {
      const arms = [
        { n: 0, s: 0 },
        { n: 0, s: 0 },
      ];
      let fixed = false;
      let seq = false;
      for (let d = 0; d < DAYS; d++) {
        for (const a of arms) {
          for (let i = 0; i < PER_DAY; i++) if (next() < P) a.s++;
          a.n += PER_DAY;
        }
        const [c, t] = arms.map((a) => ({
          n: a.n,
          ...summarize('proportion', { n: a.n, sum: a.s, sum_squares: a.s }),
        }));
        const cmp = compare(c, t, 5000);
        const excludes0 = (ci: [number, number] | null) => ci !== null && (ci[0] > 0 || ci[1] < 0);
        fixed ||= excludes0(cmp.absolute.ci_95);
        seq ||= excludes0(cmp.sequential.ci_95);
      }
      if (fixed) fixedHits++;
      if (seq) seqHits++;
    }
    const fixedRate = fixedHits / EXPERIMENTS;
    const seqRate = seqHits / EXPERIMENTS;
    console.log(`A/A over ${EXPERIMENTS} experiments x ${DAYS} looks: fixed ${fixedRate}, sequential ${seqRate}`);
    assert.ok(fixedRate > 0.15, `peeking at the fixed-sample interval: ${fixedRate}`);
    assert.ok(seqRate <= 0.05, `always-valid interval: ${seqRate}`);
  });
});
