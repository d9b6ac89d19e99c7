import { bucketOf } from './murmur.js';
import { matchesRules, type Rule } from './rules.js';

export interface ExperimentVariant {
  key: string;
  /** Integer percent; the variants' weights sum to 100. */
  weight: number;
  value: unknown;
}

/** An entry of the bundle's `content.experiments` (decisions §10). */
export interface ExperimentDefinition {
  key: string;
  status: 'running' | 'stopped' | 'shipped' | 'draft';
  /** The first is the control. */
  variants: ExperimentVariant[];
  coverage_pct?: number;
  targeting?: { rules?: Rule[] };
  shipped_variant?: string;
}

export interface ExperimentResult {
  /** True only for a running experiment whose targeting and coverage hold this unit. */
  inExperiment: boolean;
  /** The key of the variant whose value is served (control when out; the shipped one), null for an unknown experiment. */
  variant: string | null;
  value: unknown;
}

/**
 * The running assignment, the same on device and server: `b = murmur3(unit + ":" + key) % 10000`;
 * variant i covers `[S_i, S_i + w_i * coverage_pct)` with `S_i = 100 * (w_0 + ... + w_(i-1))`.
 * Null: the bucket is in no range (outside coverage). Targeting is not checked here.
 */
export function assignVariant(
  unit: string,
  experiment: Pick<ExperimentDefinition, 'key' | 'variants' | 'coverage_pct'>,
): string | null {
  const b = bucketOf(unit, experiment.key);
  const coverage = experiment.coverage_pct ?? 100;
  let start = 0;
  for (const v of experiment.variants) {
    if (b >= start && b < start + v.weight * coverage) return v.key;
    start += v.weight * 100;
  }
  return null;
}

/** What `getExperiment` serves; `expose` when the read is an assignment that queues an exposure. */
export function evaluateExperiment(
  e: ExperimentDefinition,
  unit: string,
  lookup: (attribute: string) => unknown,
): ExperimentResult & { expose: boolean } {
  const control = e.variants[0];
  const out = (v: ExperimentVariant | undefined, inExperiment = false) => ({
    inExperiment,
    expose: inExperiment,
    variant: v?.key ?? null,
    value: v?.value,
  });
  if (e.status === 'shipped') return out(e.variants.find((v) => v.key === e.shipped_variant) ?? control);
  if (e.status !== 'running' || !matchesRules(e.targeting?.rules, lookup)) return out(control);
  const key = assignVariant(unit, e);
  return key === null
    ? out(control)
    : out(
        e.variants.find((v) => v.key === key),
        true,
      );
}
