package analytics

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/openbdp/bdp/store"
)

// The function table agrees with the shipped catalog: every component a
// function fits exists, every pin it reads is a pin of that component,
// every attribute it reads is defined there. A pin renamed in
// components.json without the table following fails here (and stops the
// server at start).
func TestFunctionTableFitsTheShippedCatalog(t *testing.T) {
	comps, err := ParseCatalog(componentsFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := checkFunctions(comps, functionTable()); err != nil {
		t.Fatal(err)
	}
	// The units the table assumes where an attribute is not filled in are
	// the ones the catalog asks of the mapped datapoints.
	for _, f := range functionTable() {
		for _, p := range f.Pins {
			for comp, pin := range p.PinIDs {
				c := catalogComponent(t, comps, comp)
				unit := c.Pins[slices.IndexFunc(c.Pins, func(cp store.CatalogPin) bool { return cp.AlphanumericID == pin })].Unit
				if p.Role == roleVolume && unit != defaultVolumeFlowUnit {
					t.Errorf("%s: %s.%s is in %q, the heat meter assumes %s", f.AlphanumericID, comp, pin, unit, defaultVolumeFlowUnit)
				}
				if (p.Role == "energy_meter" && unit != "kWh") || (p.Role == "power" && unit != "kW") {
					t.Errorf("%s: %s.%s is in %q, the energy kernel reads kWh and kW", f.AlphanumericID, comp, pin, unit)
				}
			}
		}
		if !slices.Contains(f.Attributes, "energy_price") {
			continue
		}
		for _, comp := range f.Components {
			for _, a := range catalogComponent(t, comps, comp).Attributes {
				if a.Key == "energy_price" && a.Unit != energyPriceCurrency+"/kWh" {
					t.Errorf("%s energy_price in %q, the function assumes %s/kWh", comp, a.Unit, energyPriceCurrency)
				}
			}
		}
	}
}

func catalogComponent(t *testing.T, comps []store.CatalogComponent, id string) store.CatalogComponent {
	t.Helper()
	for _, c := range comps {
		if c.AlphanumericID == id {
			return c
		}
	}
	t.Fatalf("no component %s", id)
	return store.CatalogComponent{}
}

// A catalog that renames or drops what a function reads is refused with
// the function, the component and the pin or attribute named.
func TestCheckFunctionsNamesTheFault(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(comps []store.CatalogComponent)
		want   string
	}{
		{"pin renamed", func(comps []store.CatalogComponent) {
			c := componentIn(comps, "room")
			for i := range c.Pins {
				if c.Pins[i].AlphanumericID == "co2" {
					c.Pins[i].AlphanumericID = "co2_concentration"
				}
			}
		}, `room_air_quality_analysis: pin role co2: component room has no pin "co2"`},
		{"component dropped", func(comps []store.CatalogComponent) {
			componentIn(comps, "electricity_meter").AlphanumericID = "power_meter"
		}, `energy_consumption_analysis: component "electricity_meter" is not in the catalog`},
		{"attribute defined nowhere", func(comps []store.CatalogComponent) {
			for _, id := range []string{"room", "air_handling_unit"} {
				c := componentIn(comps, id)
				c.Attributes = slices.DeleteFunc(c.Attributes, func(a store.AttributeDefinition) bool { return a.Key == "outdoor_co2" })
			}
		}, `room_air_quality_analysis: attribute "outdoor_co2" is defined on none of its components`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			comps, err := ParseCatalog(componentsFile)
			if err != nil {
				t.Fatal(err)
			}
			tc.change(comps)
			if err := checkFunctions(comps, functionTable()); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
	// An attribute every fitting component must define.
	comps, _ := ParseCatalog(componentsFile)
	f := Function{AlphanumericID: "probe", NameDE: "Probe", NameEN: "probe", Components: []string{"room", "fan"},
		Attributes: []string{"outdoor_co2"}, KPIs: []string{"co2.mean"}, SummaryKPI: "co2.mean", run: roomAirQuality().run, explain: explainAirQuality}
	if err := checkFunctions(comps, []Function{f}); err == nil || !strings.Contains(err.Error(), `attribute "outdoor_co2" is not defined on component fan`) {
		t.Errorf("attribute missing on a component: %v", err)
	}
}

func componentIn(comps []store.CatalogComponent, id string) *store.CatalogComponent {
	for i := range comps {
		if comps[i].AlphanumericID == id {
			return &comps[i]
		}
	}
	panic("no component " + id)
}

// LoadCatalog persists the functions: ids are positive, unique, stable
// across loads, and the catalog answers them by id and by component.
func TestLoadCatalogPersistsFunctions(t *testing.T) {
	ctx := context.Background()
	st := newTestStore(t)
	first, err := LoadCatalog(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	second, err := LoadCatalog(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	fns := first.Functions()
	if len(fns) != len(functionTable()) {
		t.Fatalf("%d functions loaded, the table has %d", len(fns), len(functionTable()))
	}
	seen := map[int64]string{}
	for i, f := range fns {
		if f.ID <= 0 || seen[f.ID] != "" {
			t.Errorf("%s: id %d (also %s)", f.AlphanumericID, f.ID, seen[f.ID])
		}
		seen[f.ID] = f.AlphanumericID
		if again := second.Functions()[i]; again.ID != f.ID || again.AlphanumericID != f.AlphanumericID {
			t.Errorf("%s: id %d, then %s %d", f.AlphanumericID, f.ID, again.AlphanumericID, again.ID)
		}
		if got, ok := second.Function(f.ID); !ok || got.AlphanumericID != f.AlphanumericID {
			t.Errorf("Function(%d) = %s %v", f.ID, got.AlphanumericID, ok)
		}
	}
	if _, ok := first.Function(0); ok {
		t.Error("Function(0) found")
	}
	var forRoom []string
	for _, f := range first.FunctionsFor("room") {
		forRoom = append(forRoom, f.AlphanumericID)
		if !f.Fits("room") {
			t.Errorf("%s listed for room but does not fit it", f.AlphanumericID)
		}
	}
	for _, want := range []string{"room_air_quality_analysis", "thermal_comfort_analysis"} {
		if !slices.Contains(forRoom, want) {
			t.Errorf("FunctionsFor(room) = %v, lacks %s", forRoom, want)
		}
	}
	if slices.Contains(forRoom, "energy_consumption_analysis") || len(first.FunctionsFor("no_such_component")) != 0 {
		t.Errorf("FunctionsFor lists functions that do not fit: %v", forRoom)
	}
	// A release that renames a function's names keeps its id.
	ids, err := st.SyncAnalysisFunctions(ctx, []store.AnalysisFunctionRow{{AlphanumericID: fns[0].AlphanumericID, NameDE: "neu", NameEN: "new"},
		{AlphanumericID: "added_analysis", NameDE: "Neu", NameEN: "Added"}})
	if err != nil {
		t.Fatal(err)
	}
	if ids[fns[0].AlphanumericID] != fns[0].ID || ids["added_analysis"] <= 0 || seen[ids["added_analysis"]] != "" {
		t.Errorf("ids after a release: %v, first was %d", ids, fns[0].ID)
	}
}
