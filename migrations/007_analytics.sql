-- Analytics rollups. Dashboard queries read only these tables, never raw events.
-- Every row carries tenant_id + app_id + environment; days are calendar days in the timezone
-- recorded in an_app_state (the one the rows were built with).

-- Global fold position: every event with seq <= watermark has been folded exactly once.
CREATE TABLE an_rollup_state (
  id integer PRIMARY KEY CHECK (id = 1),
  watermark bigint NOT NULL DEFAULT 0,
  folded_at timestamptz,
  events_folded bigint NOT NULL DEFAULT 0
);
INSERT INTO an_rollup_state (id) VALUES (1);

-- The timezone each app's rollups were built with; a different settings timezone triggers a rebuild.
CREATE TABLE an_app_state (
  app_id uuid PRIMARY KEY,
  tenant_id uuid NOT NULL,
  timezone text NOT NULL,
  rebuilt_at timestamptz
);

-- One row per device: its first event decides first day, platform and country.
CREATE TABLE an_devices (
  tenant_id uuid NOT NULL,
  app_id uuid NOT NULL,
  environment text NOT NULL,
  anon_id uuid NOT NULL,
  first_ts timestamptz NOT NULL,
  first_day date NOT NULL,
  platform text,
  country text,
  -- Derived from the device's days (recomputed when they change): retention bits for first day +
  -- 1, 3, 7, 14, 30, 60, 90 (bit 0..6) and the first day with onboarding_flow_started.
  ret_mask integer NOT NULL DEFAULT 0,
  onb_day date,
  -- Latest active day: a batch adding an earlier day is "late" and recomputes the device.
  last_day date,
  PRIMARY KEY (app_id, environment, anon_id)
);
CREATE INDEX an_devices_first_day_idx ON an_devices (app_id, environment, first_day);

-- One row per device and active day. flags: bit set of notable events that day
-- (1 onboarding_flow_started, 2 onboarding_flow_completed, 4 paywall_view, 8 trial, 16 paid purchase, 32 app_crash).
-- platform/country are the device's (first event), copied here so reads need no join.
CREATE TABLE an_device_days (
  tenant_id uuid NOT NULL,
  app_id uuid NOT NULL,
  environment text NOT NULL,
  day date NOT NULL,
  anon_id uuid NOT NULL,
  platform text,
  country text,
  events integer NOT NULL,
  flags integer NOT NULL,
  -- The device's previous active day (NULL on its first). Distinct users over any window [s, e]
  -- = rows in the window whose prev_day < s: a count, not a DISTINCT.
  prev_day date,
  PRIMARY KEY (app_id, environment, day, anon_id)
);
CREATE INDEX an_device_days_device_idx ON an_device_days (app_id, environment, anon_id, day);
CREATE INDEX an_device_days_flags_idx ON an_device_days (app_id, environment, day) WHERE flags <> 0;

-- Active-user histogram: device-days per day, platform, country and gap (days since the device's
-- previous active day; 100000 on its first day). Users active in [s, e] = sum of n over days in
-- [s, e] with gap > day - s. Kept in step with an_device_days by the fold (n may reach 0).
CREATE TABLE an_active_hist (
  tenant_id uuid NOT NULL,
  app_id uuid NOT NULL,
  environment text NOT NULL,
  day date NOT NULL,
  platform text NOT NULL,
  country text NOT NULL,
  gap integer NOT NULL,
  n integer NOT NULL,
  PRIMARY KEY (app_id, environment, day, platform, country, gap)
);

CREATE TABLE an_sessions (
  tenant_id uuid NOT NULL,
  app_id uuid NOT NULL,
  environment text NOT NULL,
  session_id uuid NOT NULL,
  anon_id uuid NOT NULL,
  platform text,
  country text,
  start_ts timestamptz NOT NULL,
  end_ts timestamptz NOT NULL,
  start_day date NOT NULL,
  end_day date NOT NULL,
  PRIMARY KEY (app_id, environment, session_id)
);
CREATE INDEX an_sessions_day_idx ON an_sessions (app_id, environment, start_day);
CREATE INDEX an_sessions_device_idx ON an_sessions (app_id, environment, anon_id);

-- Sessions counted per (start day, end day, platform, country), with their summed duration in
-- seconds; kept in step with an_sessions by the fold.
CREATE TABLE an_session_hist (
  tenant_id uuid NOT NULL,
  app_id uuid NOT NULL,
  environment text NOT NULL,
  start_day date NOT NULL,
  end_day date NOT NULL,
  platform text NOT NULL,
  country text NOT NULL,
  n integer NOT NULL,
  dur double precision NOT NULL,
  PRIMARY KEY (app_id, environment, start_day, end_day, platform, country)
);

-- purchase_completed (kind paid | trial) and purchase_refunded (kind refund), one row per event.
-- amount_usd is NULL while the currency has no rate; later folds retry the conversion.
CREATE TABLE an_purchases (
  tenant_id uuid NOT NULL,
  app_id uuid NOT NULL,
  environment text NOT NULL,
  event_id uuid NOT NULL,
  anon_id uuid NOT NULL,
  platform text,
  country text,
  kind text NOT NULL CHECK (kind IN ('paid', 'trial', 'refund')),
  ts timestamptz NOT NULL,
  day date NOT NULL,
  price double precision NOT NULL,
  currency text NOT NULL,
  amount_usd double precision,
  period text,
  -- First day NOT covered by the subscription (day + period; month arithmetic clamps).
  period_end date,
  -- Monthly-normalised USD price for MRR; NULL when not recurring.
  mrr_usd double precision,
  PRIMARY KEY (app_id, environment, event_id)
);
CREATE INDEX an_purchases_day_idx ON an_purchases (app_id, environment, day);
CREATE INDEX an_purchases_unconverted_idx ON an_purchases (app_id) WHERE amount_usd IS NULL;

-- Funnel raw material: per device, event name and day, the first 20 timestamps of that event.
-- A trial purchase is also recorded under the pseudo name '$trial'.
CREATE TABLE an_steps (
  tenant_id uuid NOT NULL,
  app_id uuid NOT NULL,
  environment text NOT NULL,
  event_name text NOT NULL,
  day date NOT NULL,
  anon_id uuid NOT NULL,
  tss timestamptz[] NOT NULL,
  PRIMARY KEY (app_id, environment, event_name, day, anon_id)
);
CREATE INDEX an_steps_device_idx ON an_steps (app_id, environment, anon_id, event_name, day);

-- Calendar arithmetic of an ISO 8601 subscription period: the first day after it, or NULL.
CREATE FUNCTION an_period_end(d date, period text) RETURNS date
LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE
    WHEN period ~ '^P[1-9][0-9]{0,2}D$' THEN d + substring(period FROM 2 FOR length(period) - 2)::int
    WHEN period ~ '^P[1-9][0-9]{0,2}W$' THEN d + 7 * substring(period FROM 2 FOR length(period) - 2)::int
    WHEN period ~ '^P[1-9][0-9]{0,2}M$' THEN (d + make_interval(months => substring(period FROM 2 FOR length(period) - 2)::int))::date
    WHEN period ~ '^P[1-9][0-9]{0,2}Y$' THEN (d + make_interval(years => substring(period FROM 2 FOR length(period) - 2)::int))::date
  END
$$;

-- Monthly-normalised price: PnW x 52/12 / n, PnM / n, PnY / (12 n), PnD x 365/12 / n.
CREATE FUNCTION an_monthly(price double precision, period text) RETURNS double precision
LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE
    WHEN price IS NULL THEN NULL
    WHEN period ~ '^P[1-9][0-9]{0,2}D$' THEN price * 365.0 / 12.0 / substring(period FROM 2 FOR length(period) - 2)::int
    WHEN period ~ '^P[1-9][0-9]{0,2}W$' THEN price * 52.0 / 12.0 / substring(period FROM 2 FOR length(period) - 2)::int
    WHEN period ~ '^P[1-9][0-9]{0,2}M$' THEN price / substring(period FROM 2 FOR length(period) - 2)::int
    WHEN period ~ '^P[1-9][0-9]{0,2}Y$' THEN price / 12.0 / substring(period FROM 2 FOR length(period) - 2)::int
  END
$$;

-- trial_to_paid looks up a device's paid purchases after its first trial.
CREATE INDEX an_purchases_device_idx ON an_purchases (app_id, environment, anon_id, ts);
