-- Revenue, refunds and MRR per cell, as for the other histograms: purchases per day, platform,
-- country, kind and subscription period end ('infinity' when the purchase has none), with their
-- count, USD amount and monthly USD amount. The KPI request summed 60 days of purchase rows twice
-- (revenue, MRR: 70 ms of its 200 ms of queries at 10M events); a few thousand cells replace them.
-- Kept by the fold's deltas (new purchases, devices moving platform or country) and by the
-- conversion of purchases whose currency got a rate later (store.ts convertPending).
CREATE UNLOGGED TABLE an_rev_hist (
  tenant_id uuid NOT NULL,
  app_id uuid NOT NULL,
  environment text NOT NULL,
  day date NOT NULL,
  platform text NOT NULL,
  country text NOT NULL,
  kind text NOT NULL,
  period_end date NOT NULL,
  n integer NOT NULL,
  usd double precision NOT NULL,
  mrr double precision NOT NULL,
  PRIMARY KEY (app_id, environment, day, platform, country, kind, period_end)
);
INSERT INTO an_rev_hist (tenant_id, app_id, environment, day, platform, country, kind, period_end, n, usd, mrr)
SELECT tenant_id, app_id, environment, day, coalesce(platform, 'unknown'), coalesce(country, 'unknown'), kind,
       coalesce(period_end, 'infinity'), count(*), coalesce(sum(amount_usd), 0), coalesce(sum(mrr_usd), 0)
  FROM an_purchases GROUP BY 1, 2, 3, 4, 5, 6, 7, 8;
-- Purchase rows are read by day for trial_to_paid alone: its trials have their own index, its paid
-- purchases get this smaller one in place of the index covering every kind for revenue.
CREATE INDEX an_purchases_paid_idx ON an_purchases (app_id, environment, day) INCLUDE (anon_id, ts, tenant_id) WHERE kind = 'paid';
DROP INDEX IF EXISTS an_purchases_day_cover_idx;
DROP INDEX IF EXISTS an_purchases_mrr_idx;
-- MRR on a day sums the paid cells whose period covers it: found by period end, so the read does
-- not grow with the app's history ('infinity', a purchase without a period, has no MRR).
CREATE INDEX an_rev_hist_mrr_idx ON an_rev_hist (app_id, environment, period_end) WHERE kind = 'paid';
