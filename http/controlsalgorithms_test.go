package http

import (
	"fmt"
	"testing"
)

// GET /v2/controls/algorithms documents every algorithm: the components it
// fits with the pins it writes and reads, and the attributes it reads with
// their formats. Every attribute it names is one the catalog gives each of
// those components, with the same value_type, and every pin one of its
// pins; the aedifion-shaped view says the same, and the OpenAPI document
// has both routes.
func TestControlsAlgorithmsDocumented(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	catalog := map[string]int64{}
	for _, item := range e.do("GET", "/v2/components", c.Admin, nil).want(t, 200).List {
		m := item.(map[string]any)
		catalog[m["alphanumeric_id"].(string)] = int64(m["id"].(float64))
	}
	names := func(path string, key string) map[string]string {
		out := map[string]string{}
		for _, item := range e.do("GET", path, c.Admin, nil).want(t, 200).List {
			m := item.(map[string]any)
			v, _ := m["value_type"].(string)
			out[m[key].(string)] = v
		}
		return out
	}

	specs := e.do("GET", "/v2/controls/algorithms", c.Admin, nil).want(t, 200).List
	wantAttrs := map[string][]string{
		"schedule":      {"setpoint_schedule", "setpoint_schedule_default", "schedule_timezone"},
		"heating_curve": {"heating_curve_slope", "heating_curve_offset", "heating_curve_min", "heating_curve_max"},
	}
	if len(specs) != len(wantAttrs) {
		t.Fatalf("algorithms: %v", specs)
	}
	for _, item := range specs {
		spec := item.(map[string]any)
		key := spec["key"].(string)
		attrs := map[string]map[string]any{}
		for _, a := range spec["attributes"].([]any) {
			attrs[a.(map[string]any)["key"].(string)] = a.(map[string]any)
		}
		for _, k := range wantAttrs[key] {
			if a, ok := attrs[k]; !ok || a["format"] == "" || a["value_type"] == "" {
				t.Fatalf("%s: attribute %s undocumented: %v", key, k, spec["attributes"])
			}
		}
		if len(attrs) != len(wantAttrs[key]) || spec["description"] == "" || len(spec["components"].([]any)) == 0 {
			t.Fatalf("%s: %v", key, spec)
		}
		for _, cp := range spec["components"].([]any) {
			comp := cp.(map[string]any)["component_alphanumeric_id"].(string)
			id, ok := catalog[comp]
			if !ok {
				t.Fatalf("%s fits %s, which the catalog lacks", key, comp)
			}
			defs := names(fmt.Sprintf("/v2/component/%d/attributeDefinitions", id), "key")
			for k, a := range attrs {
				if defs[k] != a["value_type"] {
					t.Fatalf("%s on %s: attribute %s is %v in the catalog, documented %v", key, comp, k, defs[k], a["value_type"])
				}
			}
			pins := names(fmt.Sprintf("/v2/component/%d/pins", id), "alphanumeric_id")
			for _, side := range []string{"input", "output"} {
				for _, p := range cp.(map[string]any)[side].([]any) {
					if _, ok := pins[p.(string)]; !ok {
						t.Fatalf("%s on %s: %s pin %s is not a pin of the component", key, comp, side, p)
					}
				}
			}
		}
	}

	byComp := e.do("GET", "/v2/controls/algorithms_by_component?component_alphanumeric_ids=thermal_control_loop", c.Admin, nil).want(t, 200).JSON
	loop, ok := byComp["thermal_control_loop"].(map[string]any)
	if len(byComp) != 1 || !ok {
		t.Fatalf("by component: %v", byComp)
	}
	curve := loop["heating_curve"].(map[string]any)["default"].(map[string]any)
	pins := curve["pins"].(map[string]any)
	if in := pins["input"].([]any); len(in) != 1 || in[0].(map[string]any)["pin_alphanumeric_id"] != "outside_air_temperature" {
		t.Fatalf("heating_curve input pins: %v", pins)
	}
	if out := pins["output"].([]any); len(out) != 1 || out[0].(map[string]any)["pin_alphanumeric_id"] != "outlet_temperature_setpoint" {
		t.Fatalf("heating_curve output pins: %v", pins)
	}
	if n := len(curve["attributes"].([]any)); n != 4 {
		t.Fatalf("heating_curve attributes: %v", curve["attributes"])
	}
	if _, ok := loop["schedule"]; !ok {
		t.Fatalf("schedule missing on thermal_control_loop: %v", loop)
	}

	doc := e.do("GET", "/v2/openapi.json", nil, nil).want(t, 200).JSON
	for _, p := range []string{"/v2/controls/algorithms", "/v2/controls/algorithms_by_component"} {
		if _, ok := doc["paths"].(map[string]any)[p]; !ok {
			t.Fatalf("OpenAPI lacks %s", p)
		}
	}
}
