package units

import (
	"errors"
	"math"
	"strings"
	"testing"
)

// near reports whether got equals want within a relative 1e-12 (absolute
// 1e-12 around zero).
func near(got, want float64) bool {
	return math.Abs(got-want) <= 1e-12*math.Max(1, math.Abs(want))
}

// Reference values computed by hand from the defining constants
// (1 ft = 0.3048 m, 1 gal = 231 in³, 1 BTU = 1055.05585262 J,
// 1 lbf = 0.45359237 kg × 9.80665 m/s²).
var conversions = []struct {
	v        float64
	from, to string
	want     float64
}{
	// temperature
	{0, "celsius", "fahrenheit", 32},
	{100, "celsius", "fahrenheit", 212},
	{-40, "celsius", "fahrenheit", -40},
	{20, "celsius", "fahrenheit", 68},
	{32, "fahrenheit", "celsius", 0},
	{212, "fahrenheit", "celsius", 100},
	{-40, "fahrenheit", "celsius", -40},
	{0, "celsius", "kelvin", 273.15},
	{100, "celsius", "kelvin", 373.15},
	{-40, "celsius", "kelvin", 233.15},
	{0, "kelvin", "celsius", -273.15},
	{0, "kelvin", "fahrenheit", -459.67},
	{212, "fahrenheit", "kelvin", 373.15},
	{-40, "fahrenheit", "kelvin", 233.15},
	// pressure
	{1, "bar", "kPa", 100},
	{1, "bar", "hPa", 1000},
	{1, "bar", "Pa", 1e5},
	{1, "bar", "psi", 14.503773773020923},
	{1, "psi", "kPa", 6.894757293168361},
	{1, "psi", "Pa", 6894.757293168361},
	{1013.25, "mbar", "hPa", 1013.25},
	{1, "inH2O", "Pa", 249.08891},
	// energy
	{1, "kWh", "MJ", 3.6},
	{1, "kWh", "Wh", 1000},
	{1, "MWh", "kWh", 1000},
	{1, "kWh", "BTU", 3412.141633127942},
	{1, "therm", "BTU", 100000},
	{1, "therm", "MJ", 105.505585262},
	{1, "therm", "kWh", 29.307107017222222},
	{1, "GJ", "kWh", 277.77777777777777},
	{1, "MMBTU", "kBTU", 1000},
	{1, "kJ", "J", 1000},
	// power
	{1, "TR", "kW", 3.5168528420666667},
	{1, "TR", "BTU/h", 12000},
	{1, "kW", "BTU/h", 3412.141633127942},
	{1, "kBTU/h", "BTU/h", 1000},
	{1, "MW", "kW", 1000},
	{1, "hp", "W", 745.6998715822702},
	// volume flow
	{1, "m3/h", "cfm", 0.5885777786914764},
	{1, "cfm", "m3/h", 1.69901079552},
	{1, "l/s", "m3/h", 3.6},
	{1, "l/s", "cfm", 2.118880003289315},
	{60, "l/min", "l/s", 1},
	{1, "gpm", "l/s", 0.0630901964},
	{3600, "m3/h", "m3/s", 1},
	// volume
	{1, "gal", "l", 3.785411784},
	{1, "ft3", "l", 28.316846592},
	{1, "ft3", "gal", 7.480519480519482},
	{1, "m3", "l", 1000},
	// area
	{1, "m2", "ft2", 10.763910416709722},
	{1, "ft2", "m2", 0.09290304},
	// length
	{1, "ft", "in", 12},
	{1, "ft", "m", 0.3048},
	{1, "in", "mm", 25.4},
	{1, "m", "cm", 100},
	{1, "km", "m", 1000},
	// speed
	{1, "mph", "km/h", 1.609344},
	{1, "mph", "m/s", 0.44704},
	{1, "mph", "ft/min", 88},
	{1, "m/s", "km/h", 3.6},
	{1, "m/s", "ft/min", 196.85039370078738},
	// illuminance, irradiance, energy use intensity
	{1, "fc", "lx", 10.763910416709722},
	{1, "W/m2", "BTU/(h*ft2)", 0.3169983306281505},
	{1, "kWh/m2", "kBTU/ft2", 0.3169983306281505},
	// ratio, concentration
	{50, "percent", "ratio", 0.5},
	{0.25, "ratio", "percent", 25},
	{0.4, "count", "percent", 40},
	{1, "ppm", "ppb", 1000},
	// time, electrical
	{1, "h", "min", 60},
	{1, "d", "s", 86400},
	{1, "kV", "V", 1000},
	{1, "A", "mA", 1000},
	{50, "Hz", "Hz", 50},
}

func TestConvert(t *testing.T) {
	for _, c := range conversions {
		got, err := Convert(c.v, c.from, c.to)
		if err != nil {
			t.Errorf("Convert(%v, %q, %q): %v", c.v, c.from, c.to, err)
			continue
		}
		if !near(got, c.want) {
			t.Errorf("Convert(%v, %q, %q) = %.17g, want %.17g", c.v, c.from, c.to, got, c.want)
		}
	}
}

// The everyday temperature points come out exact, not 211.99999999999997.
func TestTemperatureExact(t *testing.T) {
	for _, c := range conversions[:9] {
		if got, _ := Convert(c.v, c.from, c.to); got != c.want {
			t.Errorf("Convert(%v, %q, %q) = %.17g, want exactly %v", c.v, c.from, c.to, got, c.want)
		}
	}
}

func TestRoundTrip(t *testing.T) {
	values := []float64{-40, 0, 0.1, 1, 21.5, 1e6}
	for _, a := range units {
		for _, b := range units {
			if a.dim != b.dim {
				continue
			}
			there, err := Converter(a.id, b.id)
			if err != nil {
				t.Fatal(err)
			}
			back, err := Converter(b.id, a.id)
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range values {
				if got := back(there(v)); math.Abs(got-v) > 1e-9*math.Max(1, math.Abs(v)) {
					t.Errorf("%v %s -> %s -> %s = %.17g", v, a.id, b.id, a.id, got)
				}
			}
		}
	}
}

func TestLookupSpellings(t *testing.T) {
	cases := map[string]string{
		"celsius": "celsius", "°C": "celsius", "degC": "celsius", "DEGC": "celsius", "℃": "celsius", "°c": "celsius",
		"°F": "fahrenheit", "degF": "fahrenheit", "K": "kelvin", "k": "kelvin",
		"kWh": "kWh", "kwh": "kWh", "KWH": "kWh", "kW h": "kWh", "MWh": "MWh", "mwh": "MWh",
		"Pa": "Pa", "pa": "Pa", "PA": "Pa", "hpa": "hPa",
		"m3/h": "m3/h", "m³/h": "m3/h", "m^3/h": "m3/h", "m3 / h": "m3/h", "M3/H": "m3/h",
		"%": "percent", "percent": "percent", "count": "ratio", "Ratio": "ratio",
		"BTU/h": "BTU/h", "Btu/h": "BTU/h", "btu/hr": "BTU/h", "MBH": "kBTU/h",
		"l": "l", "L": "l", "L/s": "l/s", "CFM": "cfm", "ft³": "ft3", "m²": "m2", "ft^2": "ft2",
		"BTU/(h·ft²)": "BTU/(h*ft2)", "  kW ": "kW", "TR": "TR", "RT": "TR", "gallon": "gal",
	}
	for name, want := range cases {
		u, ok := Lookup(name)
		if !ok || u.ID != want {
			t.Errorf("Lookup(%q) = %q, %v; want %q", name, u.ID, ok, want)
		}
	}
	for _, name := range []string{"", "C", "F", "degX", "kWhh", "EUR", "EUR/kWh", "ton"} {
		if u, ok := Lookup(name); ok {
			t.Errorf("Lookup(%q) = %q, want not found", name, u.ID)
		}
	}
}

// Every spelling is accepted in any case: no two units share a spelling when
// case is ignored. A new unit that breaks this must be looked at.
func TestNoAmbiguousSpellings(t *testing.T) {
	if len(index.ambiguous) > 0 {
		t.Errorf("spellings that fit two units when case is ignored: %v", index.ambiguous)
	}
}

func TestTableWellFormed(t *testing.T) {
	base := map[Dimension]string{}
	known := map[Dimension]bool{}
	for _, d := range dimensions {
		known[d.id] = true
		for sys, id := range d.preferred {
			u, ok := Lookup(id)
			if !ok || u.ID != id || u.Dimension != d.id || u.System != sys {
				t.Errorf("%s: preferred %s unit %q is not a %s unit of the table", d.id, sys, id, sys)
			}
		}
	}
	for _, u := range units {
		if !known[u.dim] {
			t.Errorf("%s: dimension %q not in the dimensions table", u.id, u.dim)
		}
		if !(u.factor > 0) {
			t.Errorf("%s: factor %v", u.id, u.factor)
		}
		if u.factor == 1 && u.offset == 0 {
			if prev, dup := base[u.dim]; dup {
				t.Errorf("%s: two base units %s and %s", u.dim, prev, u.id)
			}
			base[u.dim] = u.id
		}
		if got, ok := Lookup(u.id); !ok || got.ID != u.id {
			t.Errorf("Lookup(%q) = %q", u.id, got.ID)
		}
	}
	for d := range known {
		if base[d] == "" {
			t.Errorf("%s has no base unit", d)
		}
	}
}

func TestErrors(t *testing.T) {
	cases := []struct {
		from, to string
		want     error
		mention  []string
	}{
		{"furlong", "m", ErrUnknownUnit, []string{`"furlong"`}},
		{"m", "cubits", ErrUnknownUnit, []string{`"cubits"`}},
		{"C", "fahrenheit", ErrUnknownUnit, []string{`"C"`}},
		{"kWh", "m", ErrIncompatible, []string{"energy", "length"}},
		{"celsius", "percent", ErrIncompatible, []string{"temperature", "ratio"}},
		{"ppm", "percent", ErrIncompatible, []string{"concentration", "ratio"}},
		{"kW", "kWh", ErrIncompatible, []string{"power", "energy"}},
		{"EUR", "USD", ErrUnknownUnit, []string{`"EUR"`}}, // currencies need Rates
	}
	for _, c := range cases {
		_, err := Convert(1, c.from, c.to)
		if !errors.Is(err, c.want) {
			t.Errorf("Convert(%q, %q) error %v, want %v", c.from, c.to, err, c.want)
			continue
		}
		for _, m := range c.mention {
			if !strings.Contains(err.Error(), m) {
				t.Errorf("error %q does not mention %s", err, m)
			}
		}
		if f, err := Converter(c.from, c.to); f != nil || err == nil {
			t.Errorf("Converter(%q, %q) gave a function", c.from, c.to)
		}
	}
}

func BenchmarkConverter(b *testing.B) {
	f, err := Converter("fahrenheit", "celsius")
	if err != nil {
		b.Fatal(err)
	}
	sum := 0.0
	for i := 0; b.Loop(); i++ {
		sum += f(float64(i))
	}
	_ = sum
}

func BenchmarkConverterLinear(b *testing.B) {
	f, err := Converter("kWh", "BTU")
	if err != nil {
		b.Fatal(err)
	}
	sum := 0.0
	for i := 0; b.Loop(); i++ {
		sum += f(float64(i))
	}
	_ = sum
}
