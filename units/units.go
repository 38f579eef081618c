// Package units converts measured values between the units of building
// practice (°C and °F, kWh and BTU, m³/h and cfm, ...) and prices between
// currencies (EUR/kWh to USD/MWh). It serves GET /v2/datapoint/timeseries
// (query units, units_system, currency_system), GET /v2/labels/systems and
// GET /v2/labels/definitions. It is pure code: no I/O, no global state that
// changes after start-up.
//
// Reading order:
//
//   - table.go: the data. Every dimension and every unit, one line each.
//   - units.go: looking a unit name up and converting values.
//   - systems.go: the SI and imperial units systems (ForSystem, Systems).
//   - currency.go: exchange rates, currency units and prices such as EUR/kWh.
//   - definitions.go: the label tree of GET /v2/labels/definitions.
//
// # Unit names
//
// Every unit has one canonical id, the name the API reports and ForSystem
// returns ("celsius", "kWh", "m3/h", "BTU/h"). Lookup also accepts the unit's
// symbol ("°C", "m³/h") and its aliases ("degC", "%"). Before matching,
// whitespace is dropped, "²" "³" "^2" "^3" become "2" "3" and "·" becomes
// "*", so "m^3/h", "m³/h" and "m3 / h" are one name. The exact spelling is
// tried first, then the spelling in any case ("kwh", "KWH", "pa"). A spelling
// that, ignoring case, fits two different units is accepted only exactly
// (the current table has none; a test checks it). Bare "C" and "F" are not
// accepted (coulomb and farad in SI).
//
// # Conversion
//
// Every unit converts linearly to its dimension's base unit:
// base = (value + Offset) × Factor. Only temperatures have an offset. Units
// of different dimensions do not convert: ErrIncompatible. A name not in the
// table: ErrUnknownUnit. Both wrap a message naming the units, fit for the
// 422 answer of a conversion that cannot be done.
//
// A caller converting many values asks Converter once and calls the returned
// function per value.
//
// # Choosing a target unit
//
// The target unit is either named (query parameter units) or chosen from
// the source unit (the datapoint's units tag) by system; the two choices
// compose:
//
//	to := source
//	if unitsSystem != ""    { to, err = units.ForSystem(to, unitsSystem) }
//	if currencySystem != "" { to, err = units.ForCurrencySystem(to, currencySystem) }
//	convert, err := rates.Converter(source, to) // rates: the operator's Rates
package units

import (
	"errors"
	"fmt"
	"strings"
)

// The error kinds. Errors from this package wrap exactly one of them; test
// with errors.Is.
var (
	// ErrUnknownUnit: a unit or currency name that is not in the tables.
	ErrUnknownUnit = errors.New("unknown unit")
	// ErrIncompatible: two units of different dimensions, e.g. kWh and m.
	ErrIncompatible = errors.New("incompatible units")
	// ErrUnknownSystem: a units or currency system id that does not exist.
	ErrUnknownSystem = errors.New("unknown system")
	// ErrNoRate: the rate table has no exchange rate for a currency.
	ErrNoRate = errors.New("no exchange rate")
)

// Unit describes one unit of the table.
type Unit struct {
	ID        string    // canonical name, used in the API: "celsius", "kWh"
	Name      string    // human name: "degree Celsius"
	Symbol    string    // display symbol: "°C"; empty for ratio
	Dimension Dimension // what it measures
	Factor    float64   // size in base units: base = (v + Offset) * Factor
	Offset    float64   // zero-point shift in this unit; temperatures only
	System    string    // SI, Imperial, or "" when the unit fits both
}

// index maps every accepted spelling to its unit. Built once from the table.
var index = buildIndex()

type lookupIndex struct {
	exact  map[string]Unit // normalised spelling -> unit
	folded map[string]Unit // lower-cased spelling -> unit; ambiguous ones left out
	// ambiguous lists lower-cased spellings that fit two units.
	ambiguous []string
}

func buildIndex() lookupIndex {
	ix := lookupIndex{exact: map[string]Unit{}, folded: map[string]Unit{}}
	clash := map[string]bool{}
	for _, r := range units {
		u := Unit{ID: r.id, Name: r.name, Symbol: r.symbol, Dimension: r.dim,
			Factor: r.factor, Offset: r.offset, System: r.system}
		names := append([]string{r.id, r.symbol}, strings.Fields(r.aliases)...)
		for _, name := range names {
			key := normalise(name)
			if key == "" {
				continue
			}
			if prev, ok := ix.exact[key]; ok && prev.ID != u.ID {
				panic(fmt.Sprintf("units: %q names both %s and %s", name, prev.ID, u.ID))
			}
			ix.exact[key] = u
			low := strings.ToLower(key)
			if prev, ok := ix.folded[low]; ok && prev.ID != u.ID {
				clash[low] = true
			}
			ix.folded[low] = u
		}
	}
	for low := range clash {
		delete(ix.folded, low)
		ix.ambiguous = append(ix.ambiguous, low)
	}
	return ix
}

// spelling rewrites the typographic variants of a unit name to one form.
var spelling = strings.NewReplacer("²", "2", "³", "3", "^2", "2", "^3", "3", "·", "*", "⋅", "*")

// normalise drops all whitespace and rewrites exponents, see the package
// documentation.
func normalise(name string) string {
	return spelling.Replace(strings.Join(strings.Fields(name), ""))
}

// Lookup finds a unit by its id, symbol or alias: exact spelling first, then
// ignoring case. Currency names are not units here; see Rates.
func Lookup(name string) (Unit, bool) {
	key := normalise(name)
	if u, ok := index.exact[key]; ok {
		return u, true
	}
	u, ok := index.folded[strings.ToLower(key)]
	return u, ok
}

// lookup is Lookup with the ErrUnknownUnit error.
func lookup(name string) (Unit, error) {
	u, ok := Lookup(name)
	if !ok {
		return Unit{}, fmt.Errorf("%w %q", ErrUnknownUnit, name)
	}
	return u, nil
}

// Convert converts v from one unit to another: Convert(20, "celsius", "°F")
// is 68. For currencies and prices use Rates.Convert.
func Convert(v float64, from, to string) (float64, error) {
	f, err := Converter(from, to)
	if err != nil {
		return 0, err
	}
	return f(v), nil
}

// Converter looks both units up once and returns the function converting a
// value from one to the other.
func Converter(from, to string) (func(float64) float64, error) {
	f, err := lookup(from)
	if err != nil {
		return nil, err
	}
	t, err := lookup(to)
	if err != nil {
		return nil, err
	}
	if f.Dimension != t.Dimension {
		return nil, fmt.Errorf("%w: %q is %s, %q is %s", ErrIncompatible, from, f.Dimension, to, t.Dimension)
	}
	return linear(f, t), nil
}

// linear returns the conversion from unit f to unit t of one dimension:
// to base, (v + f.Offset) × f.Factor, then back, base / t.Factor − t.Offset.
// Multiplying before dividing keeps the common cases exact: 100 °C is
// 212 °F, not 211.99999999999997.
func linear(f, t Unit) func(float64) float64 {
	if f.ID == t.ID {
		return func(v float64) float64 { return v }
	}
	fo, ff, tf, to := f.Offset, f.Factor, t.Factor, t.Offset
	if fo == 0 && to == 0 {
		return func(v float64) float64 { return v * ff / tf }
	}
	return func(v float64) float64 { return (v+fo)*ff/tf - to }
}
