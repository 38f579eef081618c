package http

import (
	"fmt"
	"strings"
	"testing"
)

// The analytics catalog answers its components, a component's pins and its
// attribute definitions under the ids persisted at start.
func TestComponentCatalogRoutes(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	list := e.do("GET", "/v2/components", c.Admin, nil).want(t, 200)
	ids := map[string]int64{}
	for _, item := range list.List {
		m := item.(map[string]any)
		if m["nameDE"] == "" || m["nameEN"] == "" {
			t.Errorf("component without names: %v", m)
		}
		ids[m["alphanumeric_id"].(string)] = int64(m["id"].(float64))
	}
	for _, want := range []string{"boiler", "condensing_boiler", "low-temperature_boiler", "combined_heat_and_power",
		"heat_pump", "fan", "room", "thermal_control_loop", "heat_meter", "weather_station", "air_handling_unit",
		"pump", "electricity_meter"} {
		if ids[want] == 0 {
			t.Errorf("GET /v2/components lacks %s: %s", want, list.Body)
		}
	}

	pins := e.do("GET", fmt.Sprintf("/v2/component/%d/pins", ids["heat_pump"]), c.Admin, nil).want(t, 200)
	var inlet map[string]any
	for _, p := range pins.List {
		if p.(map[string]any)["alphanumeric_id"] == "condenser_inlet_temperature" {
			inlet = p.(map[string]any)
		}
	}
	if inlet == nil || inlet["unit"] != "°C" || inlet["location"] == "" || inlet["id"].(float64) <= 0 {
		t.Fatalf("heat_pump pins lack condenser_inlet_temperature in °C: %s", pins.Body)
	}
	levels := map[string]bool{}
	for _, a := range inlet["pin_attributes"].([]any) {
		m := a.(map[string]any)
		levels[m["key"].(string)] = true
		if p := m["probability"].(float64); p < 0 || p > 1 || m["id"].(float64) <= 0 {
			t.Errorf("pin attribute %v", m)
		}
	}
	if len(levels) != 5 || !levels["L1_analog_digital"] || !levels["L5_unit"] {
		t.Errorf("pin attributes are not L1 to L5: %v", levels)
	}

	defs := e.do("GET", fmt.Sprintf("/v2/component/%d/attributeDefinitions", ids["room"]), c.Admin, nil).want(t, 200)
	types := map[string]string{}
	for _, d := range defs.List {
		m := d.(map[string]any)
		types[m["key"].(string)] = m["value_type"].(string)
	}
	if types["outdoor_co2"] != "float" || types["schedule"] != "json" {
		t.Errorf("room attribute definitions: %s", defs.Body)
	}
}

func TestComponentCatalogBadInput(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	for _, tc := range []struct {
		path   string
		status int
		want   string
	}{
		{"/v2/component/999999/pins", 404, "no component with id 999999"},
		{"/v2/component/999999/attributeDefinitions", 404, "no component with id 999999"},
		{"/v2/component/boiler/pins", 400, "component_id must be a positive integer"},
		{"/v2/component/0/attributeDefinitions", 400, "component_id must be a positive integer"},
		{"/v2/components?language=de", 400, "language is not supported"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			r := e.do("GET", tc.path, c.Admin, nil).wantError(t, tc.status)
			if msg, _ := r.JSON["error"].(string); !strings.Contains(msg, tc.want) {
				t.Fatalf("error %q, want it to say %q", msg, tc.want)
			}
		})
	}
}

// The catalog routes are granted like the unit labels: by any role,
// without a project; a user without one is refused.
func TestComponentCatalogGrants(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	e.do("GET", "/v2/components", nil, nil).wantError(t, 401)
	u, uid := e.newUser(c)
	routes := []string{"/v2/components", "/v2/component/{component_id}/pins", "/v2/component/{component_id}/attributeDefinitions"}
	grants := make([]int32, len(routes))
	for i, r := range routes {
		grants[i] = e.endpointID("GET", r)
		rbDenied(t, e.do("GET", strings.Replace(r, "{component_id}", "1", 1), u, nil), grants[i], "GET", r)
	}
	pid, _ := e.newProject(c.Admin)
	rbAssignProjectRole(e, c.Admin, pid, rbCreateProjectRole(e, c.Admin, pid, grants), uid)
	list := e.do("GET", "/v2/components", u, nil).want(t, 200)
	first := int64(list.List[0].(map[string]any)["id"].(float64))
	e.do("GET", fmt.Sprintf("/v2/component/%d/pins", first), u, nil).want(t, 200)
	e.do("GET", fmt.Sprintf("/v2/component/%d/attributeDefinitions", first), u, nil).want(t, 200)
}
