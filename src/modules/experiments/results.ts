import { metricKind, type metricsOf } from './definitions.js';
import type { ResultSums } from './read-model.js';
import { compare, srm, summarize, type MetricSums } from './stats.js';
import type { ExperimentRow } from './store.js';

const zero = (ratio: boolean): MetricSums => ({
  n: 0,
  sum: 0,
  sum_squares: 0,
  ...(ratio ? { denominator_sum: 0, denominator_sum_squares: 0, sum_products: 0 } : {}),
});

/** The results answer (decisions §10) from the folded per-variant sums: formulas in stats.ts only. */
export function resultsOf(
  x: ExperimentRow,
  metrics: ReturnType<typeof metricsOf>,
  sums: ResultSums,
  asOf: Date | null,
) {
  // Devices whose variant is not one of the experiment's are counted as mismatches, never analysed.
  const byKey = new Map(sums.variants.map((v) => [v.variant, v]));
  const variants = x.variants.map((v) => ({ key: v.key, weight: v.weight, devices: byKey.get(v.key)?.devices ?? 0 }));
  return {
    experiment_id: x.id,
    key: x.key,
    status: x.status,
    as_of: asOf ? asOf.toISOString() : null,
    variants,
    health: {
      srm: srm(
        variants.map((v) => v.devices),
        variants.map((v) => v.weight),
      ),
      multiple_variant_devices: sums.multiple_variant_devices,
      assignment_mismatches: sums.assignment_mismatches,
    },
    metrics: metrics.map(({ metric, role }, i) => {
      const kind = metricKind(metric);
      const arms = x.variants.map((v) => {
        const s = byKey.get(v.key)?.metrics[i] ?? zero(kind === 'ratio');
        return { key: v.key, ...s, ...summarize(kind, s) };
      });
      const [control, ...treatments] = arms;
      return {
        metric,
        kind,
        role,
        variants: arms,
        comparisons: treatments.map((t) => ({
          variant: t.key,
          baseline: control.key,
          ...compare(control, t, x.sequential_tuning),
        })),
      };
    }),
  };
}
