/**
 * Every formula of decisions §10, pure (no I/O): the results route reads folded sums and calls
 * these. Distribution functions come from the regularized incomplete gamma function (series and
 * Lentz continued fraction), which gives both the normal CDF (P(1/2, z^2/2)) and the chi-square
 * CDF (P(k/2, x/2)) to about 1e-14.
 */

/** The two-sided 95% normal quantile the decisions fix. */
export const Z_95 = 1.959964;
/** Alpha of the always-valid (sequential) interval. */
export const SEQUENTIAL_ALPHA = 0.05;
/** SRM is flagged below this p-value. */
export const SRM_P_THRESHOLD = 0.001;

const EPS = 1e-15;
const TINY = 1e-300;
const LANCZOS = [
  0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313, -176.61502916214059,
  12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7,
];

/** ln Gamma(x) for x > 0 (Lanczos, g = 7). */
export function lnGamma(x: number): number {
  if (x < 0.5) return Math.log(Math.PI / Math.sin(Math.PI * x)) - lnGamma(1 - x);
  const y = x - 1;
  let a = LANCZOS[0];
  const t = y + 7.5;
  for (let i = 1; i < 9; i++) a += LANCZOS[i] / (y + i);
  return 0.5 * Math.log(2 * Math.PI) + (y + 0.5) * Math.log(t) - t + Math.log(a);
}

const prefix = (a: number, x: number) => Math.exp(-x + a * Math.log(x) - lnGamma(a));

function seriesP(a: number, x: number): number {
  let ap = a;
  let del = 1 / a;
  let sum = del;
  for (let i = 0; i < 10_000; i++) {
    ap += 1;
    del *= x / ap;
    sum += del;
    if (Math.abs(del) < Math.abs(sum) * EPS) break;
  }
  return sum * prefix(a, x);
}

function fractionQ(a: number, x: number): number {
  let b = x + 1 - a;
  let c = 1 / TINY;
  let d = 1 / b;
  let h = d;
  for (let i = 1; i < 10_000; i++) {
    const an = -i * (i - a);
    b += 2;
    d = an * d + b;
    if (Math.abs(d) < TINY) d = TINY;
    c = b + an / c;
    if (Math.abs(c) < TINY) c = TINY;
    d = 1 / d;
    const del = d * c;
    h *= del;
    if (Math.abs(del - 1) < EPS) break;
  }
  return prefix(a, x) * h;
}

/** Regularized lower incomplete gamma P(a, x). */
export function gammaP(a: number, x: number): number {
  if (x <= 0) return 0;
  return x < a + 1 ? seriesP(a, x) : 1 - fractionQ(a, x);
}

/** Regularized upper incomplete gamma Q(a, x) = 1 - P(a, x), accurate in the far tail. */
export function gammaQ(a: number, x: number): number {
  if (x <= 0) return 1;
  return x < a + 1 ? 1 - seriesP(a, x) : fractionQ(a, x);
}

/** Standard normal CDF Phi(z). */
export function normalCdf(z: number): number {
  if (!Number.isFinite(z)) return z > 0 ? 1 : 0;
  const half = gammaQ(0.5, (z * z) / 2) / 2;
  return z >= 0 ? 1 - half : half;
}

/** Chi-square CDF with k degrees of freedom. */
export const chiSquareCdf = (x: number, k: number) => gammaP(k / 2, x / 2);
/** Chi-square survival 1 - CDF, the p-value of a statistic x. */
export const chiSquareSf = (x: number, k: number) => gammaQ(k / 2, x / 2);

export type MetricKind = 'proportion' | 'mean' | 'ratio';

/** Per-variant sums of one metric (ratio metrics also carry the denominator's sums). */
export interface MetricSums {
  n: number;
  sum: number;
  sum_squares: number;
  denominator_sum?: number;
  denominator_sum_squares?: number;
  sum_products?: number;
}

export interface Summary {
  mean: number | null;
  variance: number | null;
}

/** Sample variance (n - 1), clamped at 0 against rounding; null when n < 2. */
export function sampleVariance(n: number, sum: number, sumSquares: number): number | null {
  if (n < 2) return null;
  return Math.max(0, (sumSquares - (sum * sum) / n) / (n - 1));
}

const sampleCovariance = (n: number, sx: number, sy: number, sxy: number) => (sxy - (sx * sy) / n) / (n - 1);

/** mean and variance per device of a metric (the delta method for ratio metrics). */
export function summarize(kind: MetricKind, s: MetricSums): Summary {
  if (kind !== 'ratio') {
    return { mean: s.n > 0 ? s.sum / s.n : null, variance: sampleVariance(s.n, s.sum, s.sum_squares) };
  }
  const sd = s.denominator_sum ?? 0;
  const mean = sd > 0 ? s.sum / sd : null;
  if (s.n < 2 || sd <= 0) return { mean, variance: null };
  const mM = s.sum / s.n;
  const mD = sd / s.n;
  const vM = sampleVariance(s.n, s.sum, s.sum_squares) ?? 0;
  const vD = sampleVariance(s.n, sd, s.denominator_sum_squares ?? 0) ?? 0;
  const cMD = sampleCovariance(s.n, s.sum, sd, s.sum_products ?? 0);
  const r = mM / mD;
  return { mean, variance: Math.max(0, (vM - 2 * r * cMD + vD * r * r) / (mD * mD)) };
}

export type Interval = [number, number] | null;

export interface Comparison {
  absolute: { estimate: number | null; ci_95: Interval; p_value: number | null };
  relative: { estimate: number | null; ci_95: Interval };
  sequential: { ci_95: Interval };
}

const around = (x: number, half: number): [number, number] => [x - half, x + half];

/**
 * GrowthBook's asymptotic confidence sequence half-width for an estimate with standard error `se`
 * over N = n_T + n_C units, tuned for `tuning` (N*) units.
 */
export function sequentialHalfWidth(se: number, nTotal: number, tuning: number, alpha = SEQUENTIAL_ALPHA): number {
  const r2 = (-2 * Math.log(alpha) + Math.log(-2 * Math.log(alpha) + 1)) / tuning;
  const nr2 = nTotal * r2;
  return (
    se *
    Math.sqrt(nTotal) *
    Math.sqrt(((2 * (nr2 + 1)) / (nTotal * nTotal * r2)) * Math.log(Math.sqrt(nr2 + 1) / alpha))
  );
}

export interface Arm extends Summary {
  n: number;
}

/** Treatment vs control: absolute (fixed-sample and sequential) and relative effects. */
export function compare(control: Arm, treatment: Arm, tuning: number): Comparison {
  const { mean: mC, variance: vC, n: nC } = control;
  const { mean: mT, variance: vT, n: nT } = treatment;
  const estimate = mC !== null && mT !== null ? mT - mC : null;
  const se = estimate !== null && vC !== null && vT !== null ? Math.sqrt(vT / nT + vC / nC) : null;
  const usable = se !== null && se > 0 && estimate !== null;
  const relEstimate = estimate !== null && mC !== null && mC !== 0 ? estimate / mC : null;
  let relCi: Interval = null;
  if (usable && relEstimate !== null && mT !== null && mC !== null) {
    const v = vT! / (mC * mC * nT) + (vC! * mT * mT) / (mC ** 4 * nC);
    relCi = around(relEstimate, Z_95 * Math.sqrt(v));
  }
  return {
    absolute: {
      estimate,
      ci_95: usable ? around(estimate, Z_95 * se) : null,
      p_value: usable ? 2 * normalCdf(-Math.abs(estimate) / se) : null,
    },
    relative: { estimate: relEstimate, ci_95: relCi },
    sequential: { ci_95: usable ? around(estimate, sequentialHalfWidth(se, nT + nC, tuning)) : null },
  };
}

export interface Srm {
  chi2: number | null;
  p_value: number | null;
  flagged: boolean;
}

/** Sample-ratio mismatch: chi-square of devices analysed against the weights, k - 1 degrees of freedom. */
export function srm(observed: number[], weights: number[]): Srm {
  const total = observed.reduce((s, o) => s + o, 0);
  if (total === 0 || observed.length < 2) return { chi2: null, p_value: null, flagged: false };
  let chi2 = 0;
  observed.forEach((o, i) => {
    const e = (total * weights[i]) / 100;
    chi2 += ((o - e) * (o - e)) / e;
  });
  const p = chiSquareSf(chi2, observed.length - 1);
  return { chi2, p_value: p, flagged: p < SRM_P_THRESHOLD };
}
