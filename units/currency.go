package units

import (
	"fmt"
	"math"
	"strings"
)

// Currencies and prices.
//
// A unit name may carry a currency: "EUR" (an amount), or "EUR/kWh" (a price:
// a currency over any unit of the table). Currencies are recognised by code,
// ignoring case ("eur"), and by symbol ("€", "$" is USD, "£"). Converting
// between currencies needs exchange rates; they come from a Rates table the
// operator sets (decisions.md 4): nothing is fetched from outside.
//
// Converting a price converts both parts: 0.30 EUR/kWh is 300 EUR/MWh, and
// with 1 USD = 0.86 EUR it is 348.84 USD/MWh. The per-unit part converts by
// factor only, as an interval: a price per kelvin is the same per °C.

// currency is one row of the currency table.
type currency struct {
	code, name, symbol string
	aliases            string // space-separated further spellings, exact case
}

// currencies is the currency table and the list of currency systems.
// Adding a currency is adding a line here and its rate to the operator's
// rate table.
var currencies = []currency{
	{"EUR", "Euro", "€", ""},
	{"USD", "US dollar", "$", "US$"},
	{"GBP", "Pound sterling", "£", ""},
	{"CHF", "Swiss franc", "CHF", ""},
}

// currencyCode resolves a currency code (any case), symbol or alias to the
// code.
func currencyCode(name string) (string, bool) {
	key := normalise(name)
	for _, c := range currencies {
		if strings.EqualFold(key, c.code) || key == c.symbol {
			return c.code, true
		}
		for _, a := range strings.Fields(c.aliases) {
			if key == a {
				return c.code, true
			}
		}
	}
	return "", false
}

// parsed is a unit name taken apart: a physical unit (currency ""), a
// currency (hasUnit false), or a price, currency per unit.
type parsed struct {
	currency string
	unit     Unit
	hasUnit  bool
}

// parseName takes a unit name apart. A name of the unit table wins over a
// currency reading, so "BTU/h" is a power, not something per hour.
func parseName(name string) (parsed, error) {
	if u, ok := Lookup(name); ok {
		return parsed{unit: u, hasUnit: true}, nil
	}
	head, tail, slash := strings.Cut(normalise(name), "/")
	code, ok := currencyCode(head)
	if !ok {
		return parsed{}, fmt.Errorf("%w %q", ErrUnknownUnit, name)
	}
	if !slash {
		return parsed{currency: code}, nil
	}
	u, ok := Lookup(tail)
	if !ok {
		return parsed{}, fmt.Errorf("%w %q", ErrUnknownUnit, name)
	}
	return parsed{currency: code, unit: u, hasUnit: true}, nil
}

// String is the canonical name: "kWh", "EUR", "EUR/kWh".
func (p parsed) String() string {
	switch {
	case p.currency == "":
		return p.unit.ID
	case !p.hasUnit:
		return p.currency
	default:
		return p.currency + "/" + p.unit.ID
	}
}

// kind names what the unit measures, for error messages: "energy",
// "currency", "currency/energy".
func (p parsed) kind() string {
	switch {
	case p.currency == "":
		return string(p.unit.Dimension)
	case !p.hasUnit:
		return "currency"
	default:
		return "currency/" + string(p.unit.Dimension)
	}
}

// ForCurrencySystem returns the unit name with its currency replaced by the
// currency system's ("EUR", "USD", "GBP", "CHF"; any case): "USD/kWh" in EUR
// is "EUR/kWh", "$" is "EUR". A unit without a currency stays as it is (as its
// canonical id).
func ForCurrencySystem(from, system string) (string, error) {
	code := ""
	for _, c := range currencies {
		if strings.EqualFold(strings.TrimSpace(system), c.code) {
			code = c.code
		}
	}
	if code == "" {
		return "", fmt.Errorf("%w %q: not a currency system", ErrUnknownSystem, system)
	}
	p, err := parseName(from)
	if err != nil {
		return "", err
	}
	if p.currency != "" {
		p.currency = code
	}
	return p.String(), nil
}

// Rates is an exchange-rate table: for each currency code, the value of one
// unit of it in a base currency of the operator's choice (EUR 1, USD 0.86
// means 1 USD = 0.86 EUR). It is immutable once built and safe for
// concurrent use. The zero Rates has no rates: it converts physical units
// and prices within one currency, and answers ErrNoRate for the rest.
type Rates struct {
	rate map[string]float64
}

// NewRates builds a rate table from the operator's map. Keys are currency
// codes or symbols of the currency table; values must be finite and
// positive. The map is copied.
func NewRates(table map[string]float64) (Rates, error) {
	r := Rates{rate: make(map[string]float64, len(table))}
	for name, v := range table {
		code, ok := currencyCode(name)
		if !ok {
			return Rates{}, fmt.Errorf("%w %q: not a currency", ErrUnknownUnit, name)
		}
		if !(v > 0) || math.IsInf(v, 0) {
			return Rates{}, fmt.Errorf("units: rate of %s must be a positive number, not %v", code, v)
		}
		if _, dup := r.rate[code]; dup {
			return Rates{}, fmt.Errorf("units: rate of %s given twice", code)
		}
		r.rate[code] = v
	}
	return r, nil
}

// DefaultRates is a fixed table with EUR as base: EUR 1, USD 0.86, GBP 1.15,
// CHF 1.07. These are plausible placeholders, not current rates; an operator
// who converts money should set their own table with NewRates.
func DefaultRates() Rates {
	r, err := NewRates(map[string]float64{"EUR": 1, "USD": 0.86, "GBP": 1.15, "CHF": 1.07})
	if err != nil {
		panic(err) // the literal above is valid
	}
	return r
}

// Rate returns the value of one unit of the currency in the base currency.
func (r Rates) Rate(currency string) (float64, bool) {
	code, ok := currencyCode(currency)
	if !ok {
		return 0, false
	}
	v, ok := r.rate[code]
	return v, ok
}

// Table returns a copy of the rate table, keyed by currency code.
func (r Rates) Table() map[string]float64 {
	out := make(map[string]float64, len(r.rate))
	for k, v := range r.rate {
		out[k] = v
	}
	return out
}

// Convert converts v between any two unit names: physical units as the
// package Convert does, currencies ("USD" to "EUR") and prices ("EUR/kWh" to
// "USD/MWh").
func (r Rates) Convert(v float64, from, to string) (float64, error) {
	f, err := r.Converter(from, to)
	if err != nil {
		return 0, err
	}
	return f(v), nil
}

// Converter is Convert with the lookups done once, for converting many
// values.
func (r Rates) Converter(from, to string) (func(float64) float64, error) {
	f, err := parseName(from)
	if err != nil {
		return nil, err
	}
	t, err := parseName(to)
	if err != nil {
		return nil, err
	}
	if (f.currency == "") != (t.currency == "") || f.hasUnit != t.hasUnit ||
		(f.hasUnit && f.unit.Dimension != t.unit.Dimension) {
		return nil, fmt.Errorf("%w: %q is %s, %q is %s", ErrIncompatible, from, f.kind(), to, t.kind())
	}
	if f.currency == "" {
		return linear(f.unit, t.unit), nil
	}
	k := 1.0
	if f.currency != t.currency {
		rf, ok := r.rate[f.currency]
		if !ok {
			return nil, fmt.Errorf("%w for %s", ErrNoRate, f.currency)
		}
		rt, ok := r.rate[t.currency]
		if !ok {
			return nil, fmt.Errorf("%w for %s", ErrNoRate, t.currency)
		}
		k = rf / rt
	}
	if f.hasUnit {
		// A price per unit scales inversely: per MWh is 1000 × per kWh.
		k = k * t.unit.Factor / f.unit.Factor
	}
	if k == 1 {
		return func(v float64) float64 { return v }, nil
	}
	return func(v float64) float64 { return v * k }, nil
}
