-- Dashboard read paths at full size (issue 7).

-- Revenue, refunds and trials read the window's purchases by day: a covering index lets those
-- scans skip the heap. It replaces the plain day index.
CREATE INDEX an_purchases_day_cover_idx ON an_purchases (app_id, environment, day)
  INCLUDE (kind, amount_usd, platform, country, anon_id, ts, tenant_id);
DROP INDEX IF EXISTS an_purchases_day_idx;
-- trial_to_paid reads the window's trials only: a small index-only range.
CREATE INDEX an_purchases_trial_idx ON an_purchases (app_id, environment, day)
  INCLUDE (anon_id, ts, platform, country, tenant_id) WHERE kind = 'trial';
-- MRR on a day sums the subscriptions whose period covers it: found by period end, so the read
-- does not grow with the app's whole purchase history.
CREATE INDEX an_purchases_mrr_idx ON an_purchases (app_id, environment, period_end)
  INCLUDE (day, mrr_usd, platform, country, tenant_id) WHERE kind = 'paid' AND mrr_usd IS NOT NULL;

-- Data version per app and environment: the fold bumps it in the transaction that folds any of
-- their events, so a stored funnel result computed at version v is exact while the version is v.
CREATE UNLOGGED TABLE an_app_versions (
  tenant_id uuid NOT NULL,
  app_id uuid NOT NULL,
  environment text NOT NULL,
  version bigint NOT NULL,
  PRIMARY KEY (app_id, environment)
);

-- Materialized funnel answers: one per app, environment and funnel name, with the definition
-- (hash of its steps) and data version they were computed from. Unlogged like the rollups they
-- derive from: a crash empties both, and versions restart from nothing together.
CREATE UNLOGGED TABLE an_funnel_results (
  tenant_id uuid NOT NULL,
  app_id uuid NOT NULL,
  environment text NOT NULL,
  funnel text NOT NULL,
  def_hash text NOT NULL,
  version bigint NOT NULL,
  date date NOT NULL,
  users integer[] NOT NULL,
  computed_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (app_id, environment, funnel)
);
