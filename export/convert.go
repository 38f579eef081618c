package export

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/openbdp/bdp/fault"
	"github.com/openbdp/bdp/store"
	"github.com/openbdp/bdp/units"
)

// conversion is what a read does to values: convert (nil: keep) and the
// unit to report (empty: none, the client asked for nothing).
type conversion struct {
	unit    string
	convert func(float64) float64
}

// conversionFor works out the target unit the way package units
// prescribes: the datapoint's units tag, then units_system, then
// currency_system, and units wins over both. Errors: an unknown system
// name is a bad parameter (Invalid); a conversion that cannot be done is
// Unprocessable.
func conversionFor(ctx context.Context, st *store.Store, dp store.DatapointInfo, q Query) (conversion, error) {
	if !q.converts() {
		return conversion{}, nil
	}
	source, ok := dp.Tag("system", "units")
	if !ok || strings.TrimSpace(source) == "" {
		return conversion{}, fault.Unprocessablef("datapoint %q has no units tag, so its values cannot be converted", dp.DataPointID)
	}
	to := source
	var err error
	if q.UnitsSystem != "" {
		if to, err = units.ForSystem(to, q.UnitsSystem); err != nil {
			return conversion{}, conversionError("units_system", source, "units system "+strconv.Quote(q.UnitsSystem), err)
		}
	}
	if q.CurrencySystem != "" {
		if to, err = units.ForCurrencySystem(to, q.CurrencySystem); err != nil {
			return conversion{}, conversionError("currency_system", source, "currency system "+strconv.Quote(q.CurrencySystem), err)
		}
	}
	if q.Units != "" {
		to = q.Units
	}
	// Most conversions need no exchange rate; the rate table is read only
	// when currencies differ.
	f, err := units.Rates{}.Converter(source, to)
	if errors.Is(err, units.ErrNoRate) {
		var rates units.Rates
		if rates, err = CurrencyRates(ctx, st); err != nil {
			return conversion{}, err
		}
		f, err = rates.Converter(source, to)
	}
	if err != nil {
		return conversion{}, conversionError("units", source, strconv.Quote(to), err)
	}
	return conversion{unit: to, convert: f}, nil
}

// conversionError names both ends (to is already quoted or described) and
// keeps the package units error, which holds no internals, as the reason.
// An unknown system is a bad parameter value rather than an impossible
// conversion.
func conversionError(param, from, to string, err error) error {
	if errors.Is(err, units.ErrUnknownSystem) {
		return fault.Wrap(fault.Invalid, err, fmt.Sprintf("%s: %s", param, err.Error()))
	}
	return fault.Wrap(fault.Unprocessable, err, fmt.Sprintf("cannot convert from %q to %s: %s", from, to, err.Error()))
}

// CurrencyRates reads the operator's exchange-rate table.
func CurrencyRates(ctx context.Context, st *store.Store) (units.Rates, error) {
	table, err := st.CurrencyRates(ctx)
	if err != nil {
		return units.Rates{}, err
	}
	r, err := units.NewRates(table)
	if err != nil {
		return units.Rates{}, fmt.Errorf("stored currency rates: %w", err)
	}
	return r, nil
}
