import { withTx, type Db, type Tx } from '../../db/pool.js';
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
const LOG_METRIC_EVENTS = `
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

const EXPOSURES = `
SELECT x.id AS experiment_id, x.key, x.variants, e.tenant_id, e.app_id, e.environment, e.anon_id,
       coalesce(e.user_id, e.anon_id::text) AS unit, e.ts, e.payload::jsonb #>> '{properties,variant}' AS variant
  FROM events e
  JOIN experiments x ON x.app_id = e.app_id AND x.status <> 'draft'
   AND x.key = e.payload::jsonb #>> '{properties,experiment_id}'
 WHERE e.seq > $1 AND e.seq <= $2 AND e.consent AND e.event_name = 'experiment_exposure'
   AND jsonb_typeof(e.payload::jsonb #> '{properties,variant}') = 'string'`;

// First exposure moves earlier, a second variant marks the device, coverage needed only grows.
const MERGE_DEVICES = `
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
const RECOMPUTE = `
WITH t AS (
  SELECT DISTINCT app_id, environment, anon_id
    FROM json_to_recordset($1::json) AS t(app_id uuid, environment text, anon_id uuid)
), agg AS (
  SELECT d.experiment_id, d.environment, d.anon_id,
         count(l.event_id) FILTER (WHERE l.event_name = 'purchase_completed' AND l.is_trial)::int AS trials,
         count(l.event_id) FILTER (WHERE l.event_name = 'purchase_completed' AND NOT l.is_trial)::int AS paid,
         count(l.event_id) FILTER (WHERE l.event_name = 'purchase_refunded')::int AS refunds,
         count(l.event_id) FILTER (WHERE l.event_name = 'onboarding_flow_completed')::int AS onboarding,
         coalesce(sum(l.price * usd_rate(l.currency, (l.ts AT TIME ZONE 'UTC')::date))
                    FILTER (WHERE l.event_name = 'purchase_completed' AND NOT l.is_trial), 0) AS revenue_usd,
         coalesce(array_agg(DISTINCT l.event_name) FILTER (WHERE l.event_id IS NOT NULL), '{}') AS event_names
    FROM t
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
        const logged = await tx.query(LOG_METRIC_EVENTS, [from, to]);
        const exposures = (await tx.query<ExposureRow>(EXPOSURES, [from, to])).rows;
        const devices = merge(exposures);
        if (devices.length > 0) await tx.query(MERGE_DEVICES, [JSON.stringify(devices)]);
        const touched = [
          ...logged.rows,
          ...devices.map((d) => ({ app_id: d.app_id, environment: d.environment, anon_id: d.anon_id })),
        ];
        if (touched.length > 0) await tx.query(RECOMPUTE, [JSON.stringify(touched)]);
        const n = exposures.length + logged.rows.length;
        await tx.query(`UPDATE exp_fold_state SET events_folded = events_folded + $1 WHERE id = 0`, [n]);
        return { exposures: exposures.length, metricEvents: logged.rows.length };
      });
    },
  };
}

export type ExperimentFoldStore = ReturnType<typeof createExperimentFoldStore>;
