import type { Family, Raw } from './read-model.js';

/** The 24 metrics, in the spec's order (spec.md "Metric identifiers accepted"). */
export const METRICS = [
  'mau',
  'wau',
  'dau',
  'mrr',
  'arr',
  'revenue_daily',
  'net_revenue',
  'arpu',
  'arppu',
  'onboarding_start_rate',
  'onboarding_completion_rate',
  'paywall_view_rate',
  'trial_start_rate',
  'trial_to_paid_d7',
  'trial_to_paid_d30',
  'retention_d1',
  'retention_d7',
  'retention_d30',
  'avg_session_duration',
  'avg_sessions_per_user',
  'stickiness',
  'new_users',
  'refund_rate',
  'crash_free_rate',
] as const;

export type Metric = (typeof METRICS)[number];

export const isMetric = (m: string): m is Metric => (METRICS as readonly string[]).includes(m);

/** Rollup families each metric needs. */
export const NEEDS: Record<Metric, Family[]> = {
  mau: ['roll'],
  wau: ['roll'],
  dau: ['act'],
  mrr: ['mrr'],
  arr: ['mrr'],
  revenue_daily: ['rev'],
  net_revenue: ['rev'],
  arpu: ['rev', 'act'],
  arppu: ['rev', 'flags'],
  onboarding_start_rate: ['new'],
  onboarding_completion_rate: ['flags'],
  paywall_view_rate: ['flags', 'act'],
  trial_start_rate: ['flags'],
  trial_to_paid_d7: ['t2p'],
  trial_to_paid_d30: ['t2p'],
  retention_d1: ['new'],
  retention_d7: ['new'],
  retention_d30: ['new'],
  avg_session_duration: ['sess'],
  avg_sessions_per_user: ['sess', 'act'],
  stickiness: ['act', 'roll'],
  new_users: ['new'],
  refund_rate: ['rev'],
  crash_free_rate: ['flags', 'act'],
};

/** Half-up to 2 decimals; the epsilon keeps 1.005 from rounding down through binary noise. */
export function round2(x: number): number {
  const r = Math.round((Math.abs(x) + 1e-9) * 100) / 100;
  return x < 0 ? -r : r;
}

/** a / b, null when b is 0 (decisions.md 8). */
const div = (a: number, b: number): number | null => (b === 0 ? null : a / b);
const pct = (a: number, b: number): number | null => (b === 0 ? null : (a / b) * 100);

/** The value of one metric over a window of `days` days, rounded to 2 decimals. */
export function metricValue(m: Metric, r: Raw, days: number): number | null {
  const v = metricExact(m, r, days);
  return v === null ? null : round2(v);
}

/** The unrounded value of one metric over a window of `days` days, from that window's raw aggregates. */
export function metricExact(m: Metric, r: Raw, days: number): number | null {
  const dau = r.device_days / days;
  let v: number | null;
  switch (m) {
    case 'mau':
      v = r.mau;
      break;
    case 'wau':
      v = r.wau;
      break;
    case 'dau':
      v = dau;
      break;
    case 'mrr':
      v = r.mrr;
      break;
    case 'arr':
      v = r.mrr * 12;
      break;
    case 'revenue_daily':
      v = r.paid_usd / days;
      break;
    case 'net_revenue':
      v = r.paid_usd - r.refund_usd;
      break;
    case 'arpu':
      v = div(r.paid_usd, r.active);
      break;
    case 'arppu':
      v = div(r.paid_usd, r.paid);
      break;
    case 'onboarding_start_rate':
      v = pct(r.onb_new, r.new_users);
      break;
    case 'onboarding_completion_rate':
      v = pct(r.onb_c, r.onb_s);
      break;
    case 'paywall_view_rate':
      v = pct(r.pw, r.active);
      break;
    case 'trial_start_rate':
      v = pct(r.trial, r.pw);
      break;
    case 'trial_to_paid_d7':
      v = pct(r.t_p7, r.t_c7);
      break;
    case 'trial_to_paid_d30':
      v = pct(r.t_p30, r.t_c30);
      break;
    case 'retention_d1':
      v = pct(r.r1, r.c1);
      break;
    case 'retention_d7':
      v = pct(r.r7, r.c7);
      break;
    case 'retention_d30':
      v = pct(r.r30, r.c30);
      break;
    case 'avg_session_duration':
      v = div(r.dur, r.started);
      break;
    case 'avg_sessions_per_user':
      v = div(r.sessions, r.active);
      break;
    case 'stickiness':
      v = r.mau === 0 ? null : (dau / r.mau) * 100;
      break;
    case 'new_users':
      v = r.new_users;
      break;
    case 'refund_rate':
      v = pct(r.refund_n, r.paid_n);
      break;
    case 'crash_free_rate':
      v = r.active === 0 ? null : 100 - (r.crash / r.active) * 100;
      break;
  }
  return v;
}

export function familiesFor(metrics: readonly Metric[]): Set<Family> {
  return new Set(metrics.flatMap((m) => NEEDS[m]));
}

/** change_pct and trend of a KPI (decisions.md 4), from the unrounded values. */
export function change(
  current: number | null,
  previous: number | null,
): { change_pct: number | null; trend: 'up' | 'down' | 'flat' } {
  if (current === null || previous === null || previous === 0) return { change_pct: null, trend: 'flat' };
  const c = round2(((current - previous) / previous) * 100);
  return { change_pct: c, trend: Math.abs(c) < 1 ? 'flat' : c > 0 ? 'up' : 'down' };
}
