package units

import (
	"errors"
	"testing"
)

func TestForSystem(t *testing.T) {
	cases := []struct{ from, system, want string }{
		{"fahrenheit", "SI", "celsius"},
		{"kelvin", "SI", "kelvin"},
		{"°C", "imperial", "fahrenheit"},
		{"kelvin", "imperial", "fahrenheit"},
		{"psi", "SI", "Pa"},
		{"hPa", "SI", "hPa"},
		{"bar", "imperial", "psi"},
		{"inH2O", "imperial", "inH2O"},
		{"BTU", "SI", "kWh"},
		{"therm", "SI", "kWh"},
		{"MWh", "SI", "MWh"},
		{"kWh", "imperial", "BTU"},
		{"TR", "SI", "kW"},
		{"kW", "imperial", "BTU/h"},
		{"cfm", "SI", "m3/h"},
		{"l/s", "imperial", "cfm"},
		{"gal", "SI", "m3"},
		{"m3", "imperial", "ft3"},
		{"ft2", "SI", "m2"},
		{"m2", "imperial", "ft2"},
		{"in", "SI", "m"},
		{"mm", "SI", "mm"},
		{"mm", "imperial", "ft"},
		{"mph", "SI", "m/s"},
		{"km/h", "imperial", "ft/min"},
		{"fc", "SI", "lx"},
		{"W/m2", "imperial", "BTU/(h*ft2)"},
		{"kBTU/ft2", "SI", "kWh/m2"},
		{"percent", "imperial", "percent"},
		{"ratio", "SI", "ratio"},
		{"count", "SI", "ratio"},
		{"ppm", "imperial", "ppm"},
		{"min", "imperial", "min"},
		{"V", "imperial", "V"},
		{"kwh", "si", "kWh"}, // canonical id back, system id in any case
		{"EUR/kWh", "imperial", "EUR/BTU"},
		{"$/BTU", "SI", "USD/kWh"},
		{"EUR", "imperial", "EUR"},
	}
	for _, c := range cases {
		got, err := ForSystem(c.from, c.system)
		if err != nil || got != c.want {
			t.Errorf("ForSystem(%q, %q) = %q, %v; want %q", c.from, c.system, got, err, c.want)
		}
	}
	if _, err := ForSystem("kWh", "metric"); !errors.Is(err, ErrUnknownSystem) {
		t.Errorf("unknown system: %v", err)
	}
	if _, err := ForSystem("furlong", "SI"); !errors.Is(err, ErrUnknownUnit) {
		t.Errorf("unknown unit: %v", err)
	}
}

// Every dimension with preferred units converts into them: the chosen unit
// is always usable with the source.
func TestForSystemConverts(t *testing.T) {
	for _, u := range units {
		for _, sys := range []string{SI, Imperial} {
			to, err := ForSystem(u.id, sys)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Converter(u.id, to); err != nil {
				t.Errorf("%s in %s is %s: %v", u.id, sys, to, err)
			}
		}
	}
}

func TestDefinitions(t *testing.T) {
	tree := Definitions()
	if tree.Units.ID != "units" || tree.Currencies.ID != "currencies" {
		t.Fatalf("roots %q %q", tree.Units.ID, tree.Currencies.ID)
	}
	leaves := 0
	var walk func(n Node)
	walk = func(n Node) {
		if len(n.Children) == 0 {
			leaves++
			if u, ok := Lookup(n.ID); !ok || u.ID != n.ID {
				t.Errorf("leaf %q does not look up", n.ID)
			}
			return
		}
		for _, c := range n.Children {
			walk(c)
		}
	}
	walk(tree.Units)
	if leaves != len(units) {
		t.Errorf("%d unit leaves, table has %d units", leaves, len(units))
	}
	if len(tree.Units.Children) != len(dimensions) {
		t.Errorf("%d dimension groups, want %d", len(tree.Units.Children), len(dimensions))
	}
	for _, c := range tree.Currencies.Children {
		if len(c.Children) != 0 {
			t.Errorf("currency %q has children", c.ID)
		}
		if got, err := DefaultRates().Convert(1, c.ID, c.ID); err != nil || got != 1 {
			t.Errorf("currency leaf %q: %v %v", c.ID, got, err)
		}
	}
	tree.Units.Children[0].ID = "changed"
	if Definitions().Units.Children[0].ID != "temperature" {
		t.Error("Definitions shares its tree between calls")
	}
}

func TestSystems(t *testing.T) {
	s := Systems()
	ids := func(list []System) map[string]string {
		m := map[string]string{}
		for _, e := range list {
			m[e.ID] = e.Name
		}
		return m
	}
	us, cs := ids(s.UnitsSystems), ids(s.CurrencySystems)
	if us["SI"] != "International System (SI)" || us["imperial"] != "Imperial / US customary" {
		t.Errorf("units systems %v", us)
	}
	for _, c := range []string{"EUR", "USD", "GBP", "CHF"} {
		if cs[c] == "" {
			t.Errorf("currency system %s missing: %v", c, cs)
		}
	}
}
