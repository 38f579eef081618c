package analytics

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/openbdp/bdp/store"
	"github.com/openbdp/bdp/store/pgcluster"
	"github.com/openbdp/bdp/store/storetest"
)

var testCluster *pgcluster.Cluster

func TestMain(m *testing.M) {
	pgcluster.RunTests(m, func(c *pgcluster.Cluster) { testCluster = c })
}

func newTestStore(t *testing.T) *store.Store {
	t.Helper()
	st, _ := storetest.Open(t, testCluster)
	return st
}

func TestShippedCatalogHasTheRequiredComponents(t *testing.T) {
	comps, err := ParseCatalog(componentsFile)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]store.CatalogComponent{}
	for _, c := range comps {
		byID[c.AlphanumericID] = c
	}
	for _, id := range []string{"boiler", "condensing_boiler", "low-temperature_boiler", "combined_heat_and_power",
		"heat_pump", "fan", "room", "thermal_control_loop", "heat_meter", "weather_station", "air_handling_unit",
		"pump", "electricity_meter"} {
		c, ok := byID[id]
		if !ok {
			t.Errorf("component %s missing", id)
			continue
		}
		if len(c.Pins) == 0 {
			t.Errorf("component %s has no pins", id)
		}
		for _, p := range c.Pins {
			if len(p.Attributes) != 5 {
				t.Errorf("%s pin %s: %d pin attributes, want L1 to L5", id, p.AlphanumericID, len(p.Attributes))
			}
		}
	}
	// Names a user of aedifion's data models looks for.
	pins := map[string]bool{}
	for _, p := range byID["heat_pump"].Pins {
		pins[p.AlphanumericID] = true
	}
	for _, want := range []string{"condenser_inlet_temperature", "condenser_outlet_temperature", "operating_message", "power_consumption"} {
		if !pins[want] {
			t.Errorf("heat_pump lacks pin %s", want)
		}
	}
}

// The shipped catalog uses the pin identifiers, units and attribute keys
// of aedifion's public component data models (aedifion/docs,
// engineers/component-data-models.md and engineers/analytics.md), so a
// user of that platform finds the names he knows. Pins and attributes the
// analysis functions read but aedifion does not name (operative
// temperature, reference temperature, outdoor CO2, energy price) are
// listed too: removing one would break a function.
func TestShippedCatalogUsesAedifionNames(t *testing.T) {
	comps, err := ParseCatalog(componentsFile)
	if err != nil {
		t.Fatal(err)
	}
	type pinWant struct{ component, pin, unit string }
	pinUnits := map[pinWant]bool{}
	attrTypes := map[[2]string]string{}
	for _, c := range comps {
		for _, p := range c.Pins {
			pinUnits[pinWant{c.AlphanumericID, p.AlphanumericID, p.Unit}] = true
		}
		for _, a := range c.Attributes {
			if a.AlphanumericID != a.Key {
				t.Errorf("%s attribute %s: alphanumeric_id differs from key %s", c.AlphanumericID, a.AlphanumericID, a.Key)
			}
			attrTypes[[2]string{c.AlphanumericID, a.Key}] = a.ValueType
		}
	}
	for _, want := range []pinWant{
		{"boiler", "operating_message", "binary"},
		{"boiler", "inlet_temperature", "°C"},
		{"boiler", "outlet_temperature", "°C"},
		{"boiler", "outlet_temperature_setpoint", "°C"},
		{"boiler", "volume_flow", "l/s"},
		{"boiler", "heat_meter", "kWh"},
		{"condensing_boiler", "power_consumption_meter", "kWh"},
		{"low-temperature_boiler", "exhaust_o2", "%"},
		{"combined_heat_and_power", "power_generation_meter", "kWh"},
		{"heat_pump", "condenser_volume_flow", "l/s"},
		{"heat_pump", "condenser_outlet_temperature_setpoint", "°C"},
		{"heat_pump", "evaporator_inlet_temperature", "°C"},
		{"fan", "volume_flow", "m³/h"},
		{"fan", "inverter_speed", "%"},
		{"room", "temperature", "°C"},
		{"room", "temperature_setpoint", "°C"},
		{"room", "humidity", "%"},
		{"room", "co2", "ppm"},
		{"room", "presence", "binary"},
		{"room", "outside_air_temperature", "°C"},
		{"room", "operative_temperature", "°C"},
		{"thermal_control_loop", "outlet_temperature", "°C"},
		{"thermal_control_loop", "outlet_temperature_setpoint", "°C"},
		{"thermal_control_loop", "outside_air_temperature", "°C"},
		{"thermal_control_loop", "pump_operating_message", "binary"},
		{"thermal_control_loop", "pump_revolution_speed", "rpm"},
		{"thermal_control_loop", "valve_position", "%"},
		{"heat_meter", "heat_meter", "kWh"},
		{"heat_meter", "volume_flow", "l/s"},
		{"weather_station", "temperature", "°C"},
		{"weather_station", "humidity", "%"},
		{"weather_station", "global_solar_irradiation", "W/m²"},
		{"weather_station", "co2", "ppm"},
		{"weather_station", "reference_temperature", "°C"},
		{"electricity_meter", "energy_meter", "kWh"},
	} {
		if !pinUnits[want] {
			t.Errorf("%s lacks pin %s in %s", want.component, want.pin, want.unit)
		}
	}
	for key, valueType := range map[[2]string]string{
		{"boiler", "schedule"}:                                "json",
		{"boiler", "schedule_timezone"}:                       "string",
		{"boiler", "volume_flow_unit"}:                        "string",
		{"heat_meter", "volume_flow_unit"}:                    "string",
		{"heat_pump", "volume_flow_unit"}:                     "string",
		{"room", "outdoor_co2"}:                               "float",
		{"thermal_control_loop", "reference_curve"}:           "json",
		{"thermal_control_loop", "heating_activation_limit"}:  "float",
		{"thermal_control_loop", "cooling_activation_limit"}:  "float",
		{"thermal_control_loop", "upper_deviation_tolerance"}: "float",
		{"thermal_control_loop", "lower_deviation_tolerance"}: "float",
		{"weather_station", "latitude"}:                       "float",
		{"weather_station", "longitude"}:                      "float",
		{"electricity_meter", "energy_price"}:                 "float",
	} {
		if got := attrTypes[key]; got != valueType {
			t.Errorf("%s attribute %s: value_type %q, want %q", key[0], key[1], got, valueType)
		}
	}
}

// A broken catalog file is refused at load with the fault named.
func TestParseCatalogRefusesBrokenFiles(t *testing.T) {
	valid := func() map[string]any {
		return map[string]any{"components": []any{map[string]any{
			"alphanumeric_id": "boiler", "nameDE": "Kessel", "nameEN": "Boiler",
			"pins": []any{map[string]any{"alphanumeric_id": "inlet_temperature", "nameDE": "Eintritt", "nameEN": "inlet temperature",
				"location": "left", "unit": "°C", "pin_attributes": []any{map[string]any{"key": "L5_unit", "value": "°C", "probability": 0.5}}}},
			"attribute_definitions": []any{map[string]any{"alphanumeric_id": "schedule", "key": "schedule",
				"nameDE": "Zeitplan", "nameEN": "schedule", "value_type": "json"}},
		}}}
	}
	comp := func(f map[string]any) map[string]any { return f["components"].([]any)[0].(map[string]any) }
	pin := func(f map[string]any) map[string]any { return comp(f)["pins"].([]any)[0].(map[string]any) }
	for _, tc := range []struct {
		name, want string
		breakIt    func(f map[string]any)
	}{
		{"duplicate component", "listed twice", func(f map[string]any) {
			f["components"] = append(f["components"].([]any), comp(valid()))
		}},
		{"duplicate pin", "listed twice", func(f map[string]any) {
			comp(f)["pins"] = append(comp(f)["pins"].([]any), pin(valid()))
		}},
		{"duplicate attribute", "listed twice", func(f map[string]any) {
			comp(f)["attribute_definitions"] = append(comp(f)["attribute_definitions"].([]any), comp(valid())["attribute_definitions"].([]any)[0])
		}},
		{"unknown value type", "value_type", func(f map[string]any) {
			comp(f)["attribute_definitions"].([]any)[0].(map[string]any)["value_type"] = "integer"
		}},
		{"probability above 1", "outside [0, 1]", func(f map[string]any) {
			pin(f)["pin_attributes"].([]any)[0].(map[string]any)["probability"] = 1.5
		}},
		{"negative probability", "outside [0, 1]", func(f map[string]any) {
			pin(f)["pin_attributes"].([]any)[0].(map[string]any)["probability"] = -0.1
		}},
		{"unknown pin attribute key", "unknown", func(f map[string]any) {
			pin(f)["pin_attributes"].([]any)[0].(map[string]any)["key"] = "L6_colour"
		}},
		{"unknown location", "location", func(f map[string]any) { pin(f)["location"] = "top" }},
		{"missing id", "required", func(f map[string]any) { comp(f)["alphanumeric_id"] = "" }},
		{"numeric id in the file", "assigned by the server", func(f map[string]any) { comp(f)["id"] = 7 }},
		{"unknown field", "unknown field", func(f map[string]any) { comp(f)["colour"] = "red" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := valid()
			if _, err := ParseCatalog(mustMarshal(t, f)); err != nil {
				t.Fatalf("the valid file is refused: %v", err)
			}
			tc.breakIt(f)
			_, err := ParseCatalog(mustMarshal(t, f))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Loading again keeps every numeric id; a release that adds a component, a
// pin and an attribute gives only those new ids.
func TestLoadKeepsIDsAndAddsWithoutRenumbering(t *testing.T) {
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
	ids := func(c *Catalog) map[string]int64 {
		m := map[string]int64{}
		for _, comp := range c.components {
			m[comp.AlphanumericID] = comp.ID
			for _, p := range comp.Pins {
				m[comp.AlphanumericID+"/pin/"+p.AlphanumericID] = p.ID
				for _, a := range p.Attributes {
					m[comp.AlphanumericID+"/pin/"+p.AlphanumericID+"/"+a.Key] = a.ID
				}
			}
			for _, a := range comp.Attributes {
				m[comp.AlphanumericID+"/attr/"+a.AlphanumericID] = a.ID
			}
		}
		return m
	}
	before := ids(first)
	if len(before) < 13*3 {
		t.Fatalf("only %d entries loaded", len(before))
	}
	assertKept := func(after map[string]int64) {
		t.Helper()
		seen := map[string]string{} // kind and id to entry
		for k, id := range before {
			if id == 0 || after[k] != id {
				t.Errorf("%s: id %d, then %d", k, id, after[k])
			}
		}
		for k, id := range after {
			slot := fmt.Sprint(kind(k), id)
			if other, dup := seen[slot]; dup {
				t.Errorf("%s and %s share id %d", k, other, id)
			}
			seen[slot] = k
		}
	}
	assertKept(ids(second))

	// The next release: a new component first in the file, a new pin and
	// a new attribute definition on an existing one.
	comps, err := ParseCatalog(componentsFile)
	if err != nil {
		t.Fatal(err)
	}
	comps[0].Pins = append([]store.CatalogPin{{AlphanumericID: "flue_gas_loss", NameDE: "Abgasverlust", NameEN: "flue gas loss",
		Location: "right", Unit: "%"}}, comps[0].Pins...)
	comps[0].Attributes = append(comps[0].Attributes, store.AttributeDefinition{AlphanumericID: "fuel", Key: "fuel",
		NameDE: "Brennstoff", NameEN: "fuel", ValueType: "string"})
	comps = append([]store.CatalogComponent{{AlphanumericID: "solar_thermal_collector", NameDE: "Solarthermie",
		NameEN: "Solar Thermal Collector"}}, comps...)
	third, err := loadComponents(ctx, st, comps)
	if err != nil {
		t.Fatal(err)
	}
	after := ids(third)
	assertKept(after)
	for _, k := range []string{"solar_thermal_collector", "boiler/pin/flue_gas_loss", "boiler/attr/fuel"} {
		id := after[k]
		for old, oldID := range before {
			if kind(old) == kind(k) && oldID >= id {
				t.Errorf("new %s got id %d, not above the existing %s (%d)", k, id, old, oldID)
			}
		}
	}
	if got, ok := third.Component(after["solar_thermal_collector"]); !ok || got.NameEN != "Solar Thermal Collector" {
		t.Errorf("new component not found by its id: %+v %v", got, ok)
	}
}

// kind tells which table an entry of the id map lives in.
func kind(k string) string {
	switch {
	case strings.Contains(k, "/attr/"):
		return "attr"
	case strings.Count(k, "/") == 3:
		return "pinattr"
	case strings.Contains(k, "/pin/"):
		return "pin"
	}
	return "component"
}
