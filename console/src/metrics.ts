/**
 * How the console shows each metric id the API returns (docs/metrics.md): label, group and unit.
 * The values, their rounding and their meaning come from the API; this is presentation only, in
 * one place. A metric the console does not know yet still shows, under "Other", as a plain number.
 */
export type Unit = 'count' | 'usd' | 'pct' | 'seconds' | 'ratio';

interface MetricView {
  label: string;
  group: string;
  unit: Unit;
}

const m = (label: string, group: string, unit: Unit): MetricView => ({ label, group, unit });

export const GROUPS = ['Users', 'Revenue', 'Conversion', 'Engagement', 'Retention', 'Other'] as const;

export const METRIC_VIEW: Record<string, MetricView> = {
  mau: m('Monthly active users', 'Users', 'count'),
  wau: m('Weekly active users', 'Users', 'count'),
  dau: m('Daily active users (avg)', 'Users', 'ratio'),
  new_users: m('New users', 'Users', 'count'),
  stickiness: m('Stickiness (DAU/MAU)', 'Users', 'pct'),
  mrr: m('MRR', 'Revenue', 'usd'),
  arr: m('ARR', 'Revenue', 'usd'),
  revenue_daily: m('Revenue per day', 'Revenue', 'usd'),
  net_revenue: m('Net revenue', 'Revenue', 'usd'),
  arpu: m('ARPU', 'Revenue', 'usd'),
  arppu: m('ARPPU', 'Revenue', 'usd'),
  refund_rate: m('Refund rate', 'Revenue', 'pct'),
  onboarding_start_rate: m('Onboarding start rate', 'Conversion', 'pct'),
  onboarding_completion_rate: m('Onboarding completion rate', 'Conversion', 'pct'),
  paywall_view_rate: m('Paywall view rate', 'Conversion', 'pct'),
  trial_start_rate: m('Trial start rate', 'Conversion', 'pct'),
  trial_to_paid_d7: m('Trial to paid (7 days)', 'Conversion', 'pct'),
  trial_to_paid_d30: m('Trial to paid (30 days)', 'Conversion', 'pct'),
  avg_session_duration: m('Avg session duration', 'Engagement', 'seconds'),
  avg_sessions_per_user: m('Sessions per user', 'Engagement', 'ratio'),
  crash_free_rate: m('Crash-free users', 'Engagement', 'pct'),
  retention_d1: m('Retention day 1', 'Retention', 'pct'),
  retention_d7: m('Retention day 7', 'Retention', 'pct'),
  retention_d30: m('Retention day 30', 'Retention', 'pct'),
};

export const viewOf = (metric: string): MetricView => METRIC_VIEW[metric] ?? m(metric, 'Other', 'ratio');

const num = new Intl.NumberFormat('en-US', { maximumFractionDigits: 2 });
const usd = new Intl.NumberFormat('en-US', { style: 'currency', currency: 'USD' });

/** A value as the card shows it; null (no denominator, decisions.md 8) reads as an em dash. */
export function formatValue(metric: string, v: number | null | undefined): string {
  if (v === null || v === undefined) return '—';
  switch (viewOf(metric).unit) {
    case 'usd':
      return usd.format(v);
    case 'pct':
      return `${num.format(v)}%`;
    case 'seconds':
      return v >= 60 ? `${Math.floor(v / 60)}m ${Math.round(v % 60)}s` : `${num.format(v)}s`;
    default:
      return num.format(v);
  }
}

export const formatChange = (pct: number | null) =>
  pct === null ? 'no comparison' : `${pct > 0 ? '+' : ''}${num.format(pct)}%`;
