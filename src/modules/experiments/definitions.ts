import { validateRules } from '@mobile-sdk-backend/sdk/rules';
import { AppError, type FieldError } from '../../http/errors.js';
import type { MetricKind } from './stats.js';

/** decisions §10: the experiment key is the experimentId of bucketing. */
export const EXPERIMENT_KEY_PATTERN = '^[a-z0-9][a-z0-9_-]{0,63}$';
export const VARIANT_KEY_PATTERN = '^[A-Za-z0-9_.:-]{1,64}$';
export const MIN_VARIANTS = 2;
export const MAX_VARIANTS = 8;
export const MAX_EXPERIMENTS_PER_APP = 500;
export const MAX_METRICS = 20;
export const DEFAULTS = { coverage_pct: 100, attribution_days: 14, sequential_tuning: 5000 } as const;

/** The fixed metrics and their kind; `event:<event_name>` metrics are proportions. */
export const METRIC_KINDS: Record<string, MetricKind> = {
  trial_started: 'proportion',
  paid_conversion: 'proportion',
  revenue: 'mean',
  onboarding_completed: 'proportion',
  refund_rate: 'ratio',
};
export const EVENT_METRIC_PREFIX = 'event:';
const EVENT_NAME_MAX = 128;

export const metricKind = (metric: string): MetricKind =>
  METRIC_KINDS[metric] ?? (metric.startsWith(EVENT_METRIC_PREFIX) ? 'proportion' : 'mean');

export function isKnownMetric(metric: string): boolean {
  if (Object.hasOwn(METRIC_KINDS, metric)) return true;
  const name = metric.startsWith(EVENT_METRIC_PREFIX) ? metric.slice(EVENT_METRIC_PREFIX.length) : '';
  return name.length > 0 && name.length <= EVENT_NAME_MAX;
}

export interface Variant {
  key: string;
  weight: number;
  value: unknown;
}

export interface Definition {
  variants: Variant[];
  targeting: { rules: unknown[] } | null;
  primary_metric: string;
  secondary_metrics: string[];
  guardrail_metrics: string[];
}

/** Every problem of a definition at once, each naming its field. */
export function definitionProblems(d: Definition): FieldError[] {
  const out: FieldError[] = [];
  const total = d.variants.reduce((s, v) => s + v.weight, 0);
  if (total !== 100) out.push({ path: '/body/variants', message: `weights must sum to 100 (they sum to ${total})` });
  const seen = new Set<string>();
  d.variants.forEach((v, i) => {
    if (seen.has(v.key)) out.push({ path: `/body/variants/${i}/key`, message: `duplicate variant key "${v.key}"` });
    seen.add(v.key);
  });
  const metricError = (path: string, m: string) =>
    out.push({
      path,
      message: `unknown metric "${m}"; one of ${Object.keys(METRIC_KINDS).join(', ')} or event:<event_name>`,
    });
  if (!isKnownMetric(d.primary_metric)) metricError('/body/primary_metric', d.primary_metric);
  for (const field of ['secondary_metrics', 'guardrail_metrics'] as const)
    d[field].forEach((m, i) => {
      if (!isKnownMetric(m)) metricError(`/body/${field}/${i}`, m);
    });
  if (d.targeting)
    for (const p of validateRules(d.targeting.rules))
      out.push({ path: `/body/targeting/rules${p.path}`, message: p.message });
  return out;
}

export function checkDefinition(d: Definition): void {
  const problems = definitionProblems(d);
  if (problems.length === 0) return;
  throw new AppError('validation_failed', `${problems[0].path.slice(6)}: ${problems[0].message}`, problems);
}

/** The metrics of an experiment with their role, primary first, each once. */
export function metricsOf(d: Pick<Definition, 'primary_metric' | 'secondary_metrics' | 'guardrail_metrics'>) {
  const out: { metric: string; role: 'primary' | 'secondary' | 'guardrail' }[] = [];
  const add = (metric: string, role: 'primary' | 'secondary' | 'guardrail') => {
    if (!out.some((m) => m.metric === metric)) out.push({ metric, role });
  };
  add(d.primary_metric, 'primary');
  for (const m of d.secondary_metrics) add(m, 'secondary');
  for (const m of d.guardrail_metrics) add(m, 'guardrail');
  return out;
}
