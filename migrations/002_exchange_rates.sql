-- USD value of one unit of a currency on a day. Platform data, shared by every tenant.
CREATE TABLE exchange_rates (
  currency text NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
  day date NOT NULL,
  usd_per_unit double precision NOT NULL CHECK (usd_per_unit > 0),
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (currency, day)
);

-- The rate of the day, or the latest earlier one when that day is missing; NULL for an unknown currency.
CREATE FUNCTION usd_rate(cur text, d date) RETURNS double precision
LANGUAGE sql STABLE AS $$
  SELECT CASE WHEN upper(cur) = 'USD' THEN 1.0 ELSE (
    SELECT usd_per_unit FROM exchange_rates
     WHERE currency = upper(cur) AND day <= d ORDER BY day DESC LIMIT 1) END
$$;
