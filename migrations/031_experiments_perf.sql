-- Experiments results independent of the number of devices (issue 35, performance): the fold keeps
-- per-(experiment, environment, variant, metric) sufficient statistics and the health counts,
-- maintained in the same transaction as exp_devices (a recomputed device's old contribution
-- subtracted, its new one added), so the results route reads a handful of rows.

-- A device's value y of a metric (decisions §10), from its exp_devices columns: the one definition,
-- used by the fold's deltas and the backfill below (inlined by the planner: plain SQL, immutable).
CREATE FUNCTION exp_metric_y(metric text, trials integer, paid integer, refunds integer, onboarding integer,
                             revenue_usd double precision, event_names text[])
RETURNS numeric LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE metric
    WHEN 'trial_started' THEN (trials > 0)::int::numeric
    WHEN 'paid_conversion' THEN (paid > 0)::int::numeric
    WHEN 'revenue' THEN revenue_usd::numeric
    WHEN 'onboarding_completed' THEN (onboarding > 0)::int::numeric
    WHEN 'refund_rate' THEN refunds::numeric
    ELSE (substr(metric, 7) = ANY (event_names))::int::numeric END
$$;

-- The denominator D of a ratio metric (refund_rate: paid purchases); null for the others.
CREATE FUNCTION exp_metric_d(metric text, paid integer)
RETURNS numeric LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN metric = 'refund_rate' THEN paid::numeric END
$$;

-- Sums over the single-variant devices of a variant (numeric: subtracting a contribution gives back
-- exactly what adding it took, no floating-point drift over millions of updates).
CREATE TABLE exp_sums (
  app_id uuid NOT NULL,
  experiment_id uuid NOT NULL REFERENCES experiments (id) ON DELETE CASCADE,
  environment text NOT NULL,
  variant text NOT NULL,
  metric text NOT NULL,
  n bigint NOT NULL,
  sum numeric NOT NULL,
  sum_squares numeric NOT NULL,
  denominator_sum numeric,
  denominator_sum_squares numeric,
  sum_products numeric,
  PRIMARY KEY (app_id, experiment_id, environment, variant, metric)
);

-- Devices (multiple-variant ones included) per coverage needed (0..101): mismatches at the current
-- coverage are the devices above it, so a growing coverage needs no refold.
CREATE TABLE exp_health (
  app_id uuid NOT NULL,
  experiment_id uuid NOT NULL REFERENCES experiments (id) ON DELETE CASCADE,
  environment text NOT NULL,
  coverage_needed integer NOT NULL,
  devices bigint NOT NULL,
  multi bigint NOT NULL,
  PRIMARY KEY (app_id, experiment_id, environment, coverage_needed)
);

-- Backfill from the per-device state already folded.
INSERT INTO exp_health (app_id, experiment_id, environment, coverage_needed, devices, multi)
SELECT app_id, experiment_id, environment, coverage_needed, count(*), count(*) FILTER (WHERE multi)
  FROM exp_devices GROUP BY 1, 2, 3, 4;

INSERT INTO exp_sums (app_id, experiment_id, environment, variant, metric, n, sum, sum_squares,
                      denominator_sum, denominator_sum_squares, sum_products)
SELECT d.app_id, d.experiment_id, d.environment, d.variant, m.metric, count(*), sum(v.y), sum(v.y * v.y),
       sum(v.dd), sum(v.dd * v.dd), sum(v.y * v.dd)
  FROM exp_devices d
  JOIN experiments x ON x.id = d.experiment_id
 CROSS JOIN LATERAL (SELECT DISTINCT unnest(ARRAY[x.primary_metric] || x.secondary_metrics || x.guardrail_metrics) AS metric) m
 CROSS JOIN LATERAL (SELECT exp_metric_y(m.metric, d.trials, d.paid, d.refunds, d.onboarding, d.revenue_usd, d.event_names) AS y,
                            exp_metric_d(m.metric, d.paid) AS dd) v
 WHERE NOT d.multi
 GROUP BY 1, 2, 3, 4, 5;
