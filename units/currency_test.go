package units

import (
	"errors"
	"math"
	"testing"
)

func mustRates(t *testing.T, m map[string]float64) Rates {
	t.Helper()
	r, err := NewRates(m)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestRatesConvert(t *testing.T) {
	// Custom table with USD as base: 1 EUR = 1.25 USD, 1 GBP = 1.5 USD.
	r := mustRates(t, map[string]float64{"usd": 1, "€": 1.25, "GBP": 1.5, "CHF": 1.1})
	cases := []struct {
		v        float64
		from, to string
		want     float64
	}{
		{100, "EUR", "USD", 125},
		{125, "USD", "EUR", 100},
		{3, "GBP", "EUR", 3.6},
		{100, "€", "$", 125},
		{100, "eur", "usd", 125},
		{10, "£", "GBP", 10},
		{1.1, "CHF", "USD", 1.21},
		// prices: both parts convert
		{0.30, "EUR/kWh", "USD/MWh", 375},
		{375, "USD/MWh", "EUR/kWh", 0.30},
		{0.30, "EUR/kWh", "EUR/MWh", 300},
		{0.30, "€/kWh", "USD/kWh", 0.375},
		{1, "EUR/m3", "EUR/l", 0.001},
		{2, "USD/m³", "USD/ft3", 2 * 0.028316846592},
		{10, "EUR/kWh", "EUR/BTU", 10 / 3412.141633127942},
		{1, "EUR/K", "EUR/celsius", 1}, // per degree: an interval, no offset
		{5, "EUR/fahrenheit", "EUR/celsius", 9},
		// physical units pass through
		{100, "celsius", "fahrenheit", 212},
		{1, "kWh", "BTU", 3412.141633127942},
	}
	for _, c := range cases {
		got, err := r.Convert(c.v, c.from, c.to)
		if err != nil {
			t.Errorf("Convert(%v, %q, %q): %v", c.v, c.from, c.to, err)
			continue
		}
		if !near(got, c.want) {
			t.Errorf("Convert(%v, %q, %q) = %.17g, want %.17g", c.v, c.from, c.to, got, c.want)
		}
	}
}

func TestDefaultRates(t *testing.T) {
	r := DefaultRates()
	for _, code := range []string{"EUR", "USD", "GBP", "CHF"} {
		if v, ok := r.Rate(code); !ok || !(v > 0) {
			t.Errorf("default rate %s = %v, %v", code, v, ok)
		}
	}
	if v, _ := r.Rate("eur"); v != 1 {
		t.Errorf("EUR is the base of the default table, rate %v", v)
	}
	got, err := r.Convert(0.30, "EUR/kWh", "USD/MWh")
	if want := 300 / 0.86; err != nil || !near(got, want) {
		t.Errorf("0.30 EUR/kWh = %v USD/MWh, %v; want %v", got, err, want)
	}
}

func TestRatesImmutable(t *testing.T) {
	m := map[string]float64{"EUR": 1, "USD": 0.5}
	r := mustRates(t, m)
	m["USD"] = 100
	r.Table()["USD"] = 100
	if v, _ := r.Rate("USD"); v != 0.5 {
		t.Errorf("rate changed from outside: %v", v)
	}
}

func TestNewRatesRejects(t *testing.T) {
	bad := []map[string]float64{
		{"XYZ": 1},
		{"EUR": 0},
		{"EUR": -1},
		{"EUR": math.NaN()},
		{"EUR": math.Inf(1)},
		{"EUR": 1, "eur": 1},
	}
	for _, m := range bad {
		if _, err := NewRates(m); err == nil {
			t.Errorf("NewRates(%v) accepted", m)
		}
	}
	if _, err := NewRates(map[string]float64{"kWh": 1}); !errors.Is(err, ErrUnknownUnit) {
		t.Errorf("non-currency key: %v", err)
	}
}

func TestRatesErrors(t *testing.T) {
	r := mustRates(t, map[string]float64{"EUR": 1, "USD": 0.9})
	cases := []struct {
		from, to string
		want     error
	}{
		{"EUR", "GBP", ErrNoRate},
		{"CHF/kWh", "EUR/kWh", ErrNoRate},
		{"EUR", "kWh", ErrIncompatible},
		{"kWh", "EUR/kWh", ErrIncompatible},
		{"EUR/kWh", "EUR", ErrIncompatible},
		{"EUR/kWh", "USD/m3", ErrIncompatible},
		{"XYZ/kWh", "EUR/kWh", ErrUnknownUnit},
		{"EUR/furlong", "EUR/kWh", ErrUnknownUnit},
		{"EUR/", "EUR", ErrUnknownUnit},
		{"kWh", "m", ErrIncompatible},
	}
	for _, c := range cases {
		if _, err := r.Convert(1, c.from, c.to); !errors.Is(err, c.want) {
			t.Errorf("Convert(%q, %q) error %v, want %v", c.from, c.to, err, c.want)
		}
	}
	// Within one currency no rate is needed, not even from the zero Rates.
	if got, err := (Rates{}).Convert(0.3, "GBP/kWh", "GBP/MWh"); err != nil || !near(got, 300) {
		t.Errorf("zero Rates, one currency: %v %v", got, err)
	}
	if _, err := (Rates{}).Convert(1, "GBP", "EUR"); !errors.Is(err, ErrNoRate) {
		t.Errorf("zero Rates across currencies: %v", err)
	}
}

func TestForCurrencySystem(t *testing.T) {
	cases := []struct{ from, system, want string }{
		{"USD/kWh", "EUR", "EUR/kWh"},
		{"USD/kWh", "eur", "EUR/kWh"},
		{"€/MWh", "USD", "USD/MWh"},
		{"$", "GBP", "GBP"},
		{"EUR", "EUR", "EUR"},
		{"eur/kwh", "CHF", "CHF/kWh"},
		{"kwh", "USD", "kWh"},
		{"°C", "EUR", "celsius"},
	}
	for _, c := range cases {
		got, err := ForCurrencySystem(c.from, c.system)
		if err != nil || got != c.want {
			t.Errorf("ForCurrencySystem(%q, %q) = %q, %v; want %q", c.from, c.system, got, err, c.want)
		}
	}
	if _, err := ForCurrencySystem("EUR", "XYZ"); !errors.Is(err, ErrUnknownSystem) {
		t.Errorf("unknown currency system: %v", err)
	}
	if _, err := ForCurrencySystem("EUR", "imperial"); !errors.Is(err, ErrUnknownSystem) {
		t.Errorf("units system as currency system: %v", err)
	}
	if _, err := ForCurrencySystem("XYZ/kWh", "EUR"); !errors.Is(err, ErrUnknownUnit) {
		t.Errorf("unknown source: %v", err)
	}
	// The two system choices compose: a price in USD per BTU, asked for in SI
	// and EUR, is EUR per kWh, and converts.
	to, _ := ForSystem("USD/BTU", SI)
	to, _ = ForCurrencySystem(to, "EUR")
	if to != "EUR/kWh" {
		t.Fatalf("composed choice %q", to)
	}
	if _, err := DefaultRates().Convert(1, "USD/BTU", to); err != nil {
		t.Error(err)
	}
}

// No currency spelling is also a unit spelling, so "X/Y" reads one way only.
func TestCurrencyNamesAreNotUnits(t *testing.T) {
	for _, c := range currencies {
		for _, name := range []string{c.code, c.symbol} {
			if u, ok := Lookup(name); ok {
				t.Errorf("currency spelling %q is also unit %s", name, u.ID)
			}
		}
	}
}

func BenchmarkRatesConverter(b *testing.B) {
	f, err := DefaultRates().Converter("EUR/kWh", "USD/MWh")
	if err != nil {
		b.Fatal(err)
	}
	sum := 0.0
	for i := 0; b.Loop(); i++ {
		sum += f(float64(i))
	}
	_ = sum
}
