-- +goose Up
-- Exchange rates for currency conversion (decisions.md 4: a table the
-- operator changes through PUT /operator/currency-rates; nothing is fetched
-- from outside). rate is the value of one unit of the currency in the base
-- currency, as package units reads it (units.NewRates): with the seed below
-- the base is EUR and 1 USD = 0.86 EUR. Only ratios matter, so an operator
-- may pick another base by setting every rate.
CREATE TABLE currency_rates (
    code text PRIMARY KEY CHECK (code ~ '^[A-Z]{3}$'),
    -- NaN compares greater than every number in PostgreSQL, so the upper
    -- bound keeps NaN out as well as infinity.
    rate double precision NOT NULL CHECK (rate > 0 AND rate < 'Infinity')
);

-- The placeholders of units.DefaultRates; an operator who converts money
-- sets current ones.
INSERT INTO currency_rates (code, rate) VALUES
    ('EUR', 1), ('USD', 0.86), ('GBP', 1.15), ('CHF', 1.07);

-- +goose Down
DROP TABLE currency_rates;
