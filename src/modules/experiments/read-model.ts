import type { Queryable } from '../../db/pool.js';
import { EVENT_METRIC_PREFIX } from './definitions.js';
import type { MetricSums } from './stats.js';

/** Per-device value (y) and, for ratio metrics, denominator (d) of a metric over exp_devices columns. */
function metricSql(metric: string, arg: (v: unknown) => string): { y: string; d?: string } {
  switch (metric) {
    case 'trial_started':
      return { y: '(trials > 0)::int' };
    case 'paid_conversion':
      return { y: '(paid > 0)::int' };
    case 'revenue':
      return { y: 'revenue_usd' };
    case 'onboarding_completed':
      return { y: '(onboarding > 0)::int' };
    case 'refund_rate':
      return { y: 'refunds', d: 'paid' };
    default:
      return { y: `(${arg(metric.slice(EVENT_METRIC_PREFIX.length))} = ANY (event_names))::int` };
  }
}

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
     * plus the health counts. Reads exp_devices only, never events.
     */
    async sums(experimentId: string, environment: string, coveragePct: number, metrics: string[]): Promise<ResultSums> {
      const args: unknown[] = [experimentId, environment, coveragePct];
      const arg = (v: unknown) => {
        args.push(v);
        return `$${args.length}::text`;
      };
      const cols = metrics.flatMap((m, i) => {
        const { y, d } = metricSql(m, arg);
        const out = [`sum(${y})::float8 AS s${i}`, `sum((${y})::float8 ^ 2) AS q${i}`];
        if (d)
          out.push(
            `sum(${d})::float8 AS ds${i}`,
            `sum((${d})::float8 ^ 2) AS dq${i}`,
            `sum((${y}) * (${d}))::float8 AS sp${i}`,
          );
        return out;
      });
      const select = ['variant', 'count(*)::int AS devices', ...cols].join(', ');
      const [per, health] = await Promise.all([
        db.query(
          `SELECT ${select} FROM exp_devices WHERE experiment_id = $1 AND environment = $2 AND NOT multi AND $3::int > 0
           GROUP BY variant`,
          args,
        ),
        db.query(
          `SELECT count(*) FILTER (WHERE multi)::int AS multi, count(*) FILTER (WHERE coverage_needed > $3)::int AS mismatches
             FROM exp_devices WHERE experiment_id = $1 AND environment = $2`,
          [experimentId, environment, coveragePct],
        ),
      ]);
      return {
        variants: per.rows.map((r) => ({
          variant: r.variant,
          devices: r.devices,
          metrics: metrics.map((m, i) => ({
            n: r.devices,
            sum: r[`s${i}`] ?? 0,
            sum_squares: r[`q${i}`] ?? 0,
            ...(r[`ds${i}`] !== undefined
              ? {
                  denominator_sum: r[`ds${i}`] ?? 0,
                  denominator_sum_squares: r[`dq${i}`] ?? 0,
                  sum_products: r[`sp${i}`] ?? 0,
                }
              : {}),
          })),
        })),
        multiple_variant_devices: health.rows[0].multi,
        assignment_mismatches: health.rows[0].mismatches,
      };
    },
  };
}

export type ExperimentReadModel = ReturnType<typeof createExperimentReadModel>;
