import type { Queryable } from '../../db/pool.js';
import type { MetricSums } from './stats.js';

export interface VariantSums {
  variant: string;
  devices: number;
  metrics: MetricSums[];
}

export interface ResultSums {
  variants: VariantSums[];
  multiple_variant_devices: number;
  assignment_mismatches: number;
}

export function createExperimentReadModel(db: Queryable) {
  return {
    /** When the experiment fold last moved (results are as of then); null before its first fold. */
    async foldedAt(): Promise<Date | null> {
      const r = await db.query(`SELECT folded_at FROM exp_fold_state WHERE id = 0`);
      return r.rows[0]?.folded_at ?? null;
    },

    /**
     * Sums per variant of each metric over the folded devices (multiple-variant devices left out),
     * plus the health counts: the fold maintains them (exp_sums, exp_health), so this reads a handful
     * of rows whatever the number of devices, never events nor exp_devices.
     */
    async sums(experimentId: string, environment: string, coveragePct: number, metrics: string[]): Promise<ResultSums> {
      const [per, health] = await Promise.all([
        db.query(
          `SELECT variant, metric, n::float8 AS n, sum::float8 AS sum, sum_squares::float8 AS sum_squares,
                  denominator_sum::float8 AS ds, denominator_sum_squares::float8 AS dq, sum_products::float8 AS sp
             FROM exp_sums WHERE experiment_id = $1 AND environment = $2 AND metric = ANY ($3::text[]) AND n > 0`,
          [experimentId, environment, metrics],
        ),
        db.query(
          `SELECT coalesce(sum(multi), 0)::int AS multi,
                  coalesce(sum(devices) FILTER (WHERE coverage_needed > $3), 0)::int AS mismatches
             FROM exp_health WHERE experiment_id = $1 AND environment = $2`,
          [experimentId, environment, coveragePct],
        ),
      ]);
      const byVariant = new Map<string, Map<string, (typeof per.rows)[number]>>();
      for (const r of per.rows) {
        const m = byVariant.get(r.variant) ?? new Map();
        m.set(r.metric, r);
        byVariant.set(r.variant, m);
      }
      return {
        variants: [...byVariant].map(([variant, rows]) => {
          // Every metric row of a variant counts the same devices (all its single-variant ones).
          const devices = rows.values().next().value.n;
          return {
            variant,
            devices,
            metrics: metrics.map((m) => {
              const r = rows.get(m);
              return {
                n: devices,
                sum: r?.sum ?? 0,
                sum_squares: r?.sum_squares ?? 0,
                ...(r && r.ds !== null
                  ? { denominator_sum: r.ds, denominator_sum_squares: r.dq, sum_products: r.sp }
                  : {}),
              };
            }),
          };
        }),
        multiple_variant_devices: health.rows[0].multi,
        assignment_mismatches: health.rows[0].mismatches,
      };
    },
  };
}

export type ExperimentReadModel = ReturnType<typeof createExperimentReadModel>;
