import { withTx, type Db, type Tx } from '../../db/pool.js';
import type { Scope } from '../../types/domain.js';
import type { Variant } from './definitions.js';

/** An exposure of a started experiment, as the fold reads it. */
export interface ExposureRow {
  experiment_id: string;
  key: string;
  variants: Variant[];
  tenant_id: string;
  app_id: string;
  environment: string;
  anon_id: string;
  unit: string;
  ts: Date;
  variant: string;
}

/** A device's new state from one chunk's exposures, merged into what is stored. */
export interface DeviceExposure {
  experiment_id: string;
  tenant_id: string;
  app_id: string;
  environment: string;
  anon_id: string;
  t0: string;
  variant: string;
  multi: boolean;
  coverage_needed: number;
}

// Metric events of apps with a started experiment: the fixed names plus their event:<name> metrics.
export const LOG_METRIC_EVENTS = `
WITH wanted AS (
  SELECT DISTINCT app_id, name FROM (
    SELECT x.app_id, unnest(ARRAY['purchase_completed', 'purchase_refunded', 'onboarding_flow_completed']) AS name
      FROM experiments x WHERE x.status <> 'draft'
    UNION ALL
    SELECT x.app_id, substr(m, 7) FROM experiments x,
           unnest(ARRAY[x.primary_metric] || x.secondary_metrics || x.guardrail_metrics) AS m
     WHERE x.status <> 'draft' AND m LIKE 'event:%') w
), fresh AS (
  SELECT e.tenant_id, e.app_id, e.environment, e.anon_id, e.ts, e.event_id, e.event_name,
         (e.payload::jsonb -> 'properties') AS p
    FROM events e JOIN wanted w ON w.app_id = e.app_id AND w.name = e.event_name
   WHERE e.seq > $1 AND e.seq <= $2 AND e.consent
)
INSERT INTO exp_events (tenant_id, app_id, environment, anon_id, ts, event_id, event_name, is_trial, price, currency)
SELECT tenant_id, app_id, environment, anon_id, ts, event_id, event_name,
       coalesce(p -> 'is_trial' = 'true'::jsonb, false),
       CASE WHEN jsonb_typeof(p -> 'price') = 'number' AND (p ->> 'price')::float8 BETWEEN 0 AND 1e12
            THEN (p ->> 'price')::float8 ELSE 0 END,
       CASE WHEN jsonb_typeof(p -> 'currency') = 'string' THEN upper(left(p ->> 'currency', 8)) ELSE 'USD' END
  FROM fresh
ON CONFLICT DO NOTHING
RETURNING app_id, environment, anon_id`;

// The payload is parsed once per exposure (a materialized CTE: an inlined subquery would cast it per use).
export const EXPOSURES = `
WITH e AS MATERIALIZED (
  SELECT tenant_id, app_id, environment, anon_id, coalesce(user_id, anon_id::text) AS unit, ts,
         payload::jsonb -> 'properties' AS p
    FROM events
   WHERE seq > $1 AND seq <= $2 AND consent AND event_name = 'experiment_exposure'
     AND app_id IN (SELECT app_id FROM experiments WHERE status <> 'draft')
)
SELECT x.id AS experiment_id, x.key, x.variants, e.tenant_id, e.app_id, e.environment, e.anon_id, e.unit, e.ts,
       e.p ->> 'variant' AS variant
  FROM e JOIN experiments x ON x.app_id = e.app_id AND x.status <> 'draft' AND x.key = e.p ->> 'experiment_id'
 WHERE jsonb_typeof(e.p -> 'variant') = 'string'`;

// First exposure moves earlier, a second variant marks the device, coverage needed only grows.
export const MERGE_DEVICES = `
INSERT INTO exp_devices (experiment_id, tenant_id, app_id, environment, anon_id, t0, variant, multi, coverage_needed)
SELECT experiment_id, tenant_id, app_id, environment, anon_id, t0, variant, multi, coverage_needed
  FROM json_to_recordset($1::json) AS d(experiment_id uuid, tenant_id uuid, app_id uuid, environment text,
       anon_id uuid, t0 timestamptz, variant text, multi boolean, coverage_needed integer)
ON CONFLICT (experiment_id, environment, anon_id) DO UPDATE SET
  t0 = least(exp_devices.t0, EXCLUDED.t0),
  multi = exp_devices.multi OR EXCLUDED.multi OR exp_devices.variant <> EXCLUDED.variant,
  coverage_needed = greatest(exp_devices.coverage_needed, EXCLUDED.coverage_needed)`;

/**
 * Recomputes the metric inputs of the touched devices from their own logged metric events inside
 * [t0, t0 + attribution window): a late exposure or a late conversion lands in its window.
 * Revenue is converted at the USD rate of the purchase's UTC day (decisions §4).
 */
export const RECOMPUTE = `
WITH agg AS (
  SELECT d.experiment_id, d.environment, d.anon_id,
         count(l.event_id) FILTER (WHERE l.event_name = 'purchase_completed' AND l.is_trial)::int AS trials,
         count(l.event_id) FILTER (WHERE l.event_name = 'purchase_completed' AND NOT l.is_trial)::int AS paid,
         count(l.event_id) FILTER (WHERE l.event_name = 'purchase_refunded')::int AS refunds,
         count(l.event_id) FILTER (WHERE l.event_name = 'onboarding_flow_completed')::int AS onboarding,
         coalesce(sum(l.price * usd_rate(l.currency, (l.ts AT TIME ZONE 'UTC')::date))
                    FILTER (WHERE l.event_name = 'purchase_completed' AND NOT l.is_trial), 0) AS revenue_usd,
         coalesce(array_agg(DISTINCT l.event_name) FILTER (WHERE l.event_id IS NOT NULL), '{}') AS event_names
    FROM exp_touched t
    JOIN exp_devices d ON d.app_id = t.app_id AND d.environment = t.environment AND d.anon_id = t.anon_id
    JOIN experiments x ON x.id = d.experiment_id
    LEFT JOIN exp_events l ON l.app_id = d.app_id AND l.environment = d.environment AND l.anon_id = d.anon_id
     AND l.ts >= d.t0 AND l.ts < d.t0 + x.attribution_days * interval '86400 seconds'
   GROUP BY d.experiment_id, d.environment, d.anon_id
)
UPDATE exp_devices d SET trials = a.trials, paid = a.paid, refunds = a.refunds, onboarding = a.onboarding,
       revenue_usd = a.revenue_usd, event_names = a.event_names
  FROM agg a
 WHERE d.experiment_id = a.experiment_id AND d.environment = a.environment AND d.anon_id = a.anon_id`;

// The devices one chunk touches, once per transaction (the deltas and the recompute join it).
export const TOUCHED_TABLE = `
CREATE TEMP TABLE exp_touched (app_id uuid, environment text, anon_id uuid) ON COMMIT DROP`;
export const TOUCHED = `
INSERT INTO exp_touched SELECT DISTINCT app_id, environment, anon_id
  FROM json_to_recordset($1::json) AS t(app_id uuid, environment text, anon_id uuid)`;

/**
 * Adds $1 (-1 or +1) times the touched devices' contribution to the health counts and to the
 * per-variant sums (multiple-variant devices leave the sums; per-device values: exp_metric_y/_d,
 * migration 031). Run with -1 before the chunk changes exp_devices and +1 after: the stored sums
 * then always equal a GROUP BY over exp_devices, and reading them costs a handful of rows.
 */
export const APPLY_DELTA = `
WITH s AS (SELECT $1::int AS sign), d AS MATERIALIZED (
  SELECT d.* FROM exp_touched t
    JOIN exp_devices d ON d.app_id = t.app_id AND d.environment = t.environment AND d.anon_id = t.anon_id
), h AS (
  INSERT INTO exp_health AS o (app_id, experiment_id, environment, coverage_needed, devices, multi)
  SELECT app_id, experiment_id, environment, coverage_needed, s.sign * count(*), s.sign * count(*) FILTER (WHERE multi)
    FROM d, s GROUP BY 1, 2, 3, 4, s.sign
  ON CONFLICT (app_id, experiment_id, environment, coverage_needed) DO UPDATE
    SET devices = o.devices + EXCLUDED.devices, multi = o.multi + EXCLUDED.multi
)
INSERT INTO exp_sums AS o (app_id, experiment_id, environment, variant, metric, n, sum, sum_squares,
                           denominator_sum, denominator_sum_squares, sum_products)
SELECT d.app_id, d.experiment_id, d.environment, d.variant, m.metric, s.sign * count(*), s.sign * sum(v.y), s.sign * sum(v.y * v.y),
       s.sign * sum(v.dd), s.sign * sum(v.dd * v.dd), s.sign * sum(v.y * v.dd)
  FROM d CROSS JOIN s
  JOIN experiments x ON x.id = d.experiment_id
 CROSS JOIN LATERAL (SELECT DISTINCT unnest(ARRAY[x.primary_metric] || x.secondary_metrics || x.guardrail_metrics) AS metric) m
 CROSS JOIN LATERAL (SELECT exp_metric_y(m.metric, d.trials, d.paid, d.refunds, d.onboarding, d.revenue_usd, d.event_names) AS y,
                            exp_metric_d(m.metric, d.paid) AS dd) v
 WHERE NOT d.multi
 GROUP BY 1, 2, 3, 4, 5, s.sign
ON CONFLICT (app_id, experiment_id, environment, variant, metric) DO UPDATE
  SET n = o.n + EXCLUDED.n, sum = o.sum + EXCLUDED.sum, sum_squares = o.sum_squares + EXCLUDED.sum_squares,
      denominator_sum = o.denominator_sum + EXCLUDED.denominator_sum,
      denominator_sum_squares = o.denominator_sum_squares + EXCLUDED.denominator_sum_squares,
      sum_products = o.sum_products + EXCLUDED.sum_products`;

const ERASED = 'tenant_id = $1 AND app_id = $2 AND anon_id = ANY ($3::uuid[])';

/**
 * Takes devices out of the experiments' state (a privacy erasure, docs/privacy.md): their
 * contribution leaves the sums and health counts (APPLY_DELTA with -1, as before a chunk changes
 * them), then their exposure state and logged metric events go. Runs in the caller's transaction
 * under the fold's state row lock, so a chunk folding meanwhile has committed first. Answers the
 * rows removed.
 */
export async function eraseExperimentDevices(tx: Tx, scope: Scope, anonIds: string[]): Promise<number> {
  const params = [scope.tenantId, scope.appId, anonIds];
  await tx.query(`SELECT 1 FROM exp_fold_state WHERE id = 0 FOR UPDATE`);
  await tx.query(TOUCHED_TABLE);
  await tx.query(
    `INSERT INTO exp_touched SELECT DISTINCT app_id, environment, anon_id FROM exp_devices WHERE ${ERASED}`,
    params,
  );
  await tx.query(APPLY_DELTA, [-1]);
  const { rows } = await tx.query<{ n: number }>(
    `WITH a AS (DELETE FROM exp_devices WHERE ${ERASED} RETURNING 1), b AS (DELETE FROM exp_events WHERE ${ERASED} RETURNING 1)
     SELECT ((SELECT count(*) FROM a) + (SELECT count(*) FROM b))::int AS n`,
    params,
  );
  await tx.query(`DROP TABLE exp_touched`);
  return rows[0].n;
}

export function createExperimentFoldStore(db: Db) {
  return {
    async watermark(): Promise<number> {
      const r = await db.query(`SELECT watermark FROM exp_fold_state WHERE id = 0`);
      return Number(r.rows[0].watermark);
    },

    /**
     * Folds events with seq in (from, to] in one transaction with the watermark move: exactly once.
     * `merge` turns the chunk's exposures into per-device state (the assignment check runs in JS).
     */
    async foldRange(
      from: number,
      to: number,
      merge: (exposures: ExposureRow[]) => DeviceExposure[],
    ): Promise<{ exposures: number; metricEvents: number }> {
      return withTx(db, async (tx: Tx) => {
        const moved = await tx.query(
          `UPDATE exp_fold_state SET watermark = $2, folded_at = now() WHERE id = 0 AND watermark = $1`,
          [from, to],
        );
        // Another instance folded this range first.
        if (moved.rowCount === 0) return { exposures: 0, metricEvents: 0 };
        // No started experiment anywhere (the usual case): nothing to read, the watermark just moves.
        const live = await tx.query(`SELECT EXISTS (SELECT 1 FROM experiments WHERE status <> 'draft') AS live`);
        if (!live.rows[0].live) return { exposures: 0, metricEvents: 0 };
        const logged = await tx.query(LOG_METRIC_EVENTS, [from, to]);
        const exposures = (await tx.query<ExposureRow>(EXPOSURES, [from, to])).rows;
        const devices = merge(exposures);
        const touched = [
          ...logged.rows,
          ...devices.map((d) => ({ app_id: d.app_id, environment: d.environment, anon_id: d.anon_id })),
        ];
        if (touched.length > 0) {
          await tx.query(TOUCHED_TABLE);
          await tx.query(TOUCHED, [JSON.stringify(touched)]);
          await tx.query(APPLY_DELTA, [-1]);
          if (devices.length > 0) await tx.query(MERGE_DEVICES, [JSON.stringify(devices)]);
          await tx.query(RECOMPUTE);
          await tx.query(APPLY_DELTA, [1]);
        }
        const n = exposures.length + logged.rows.length;
        await tx.query(`UPDATE exp_fold_state SET events_folded = events_folded + $1 WHERE id = 0`, [n]);
        return { exposures: exposures.length, metricEvents: logged.rows.length };
      });
    },
  };
}

export type ExperimentFoldStore = ReturnType<typeof createExperimentFoldStore>;
