package http

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// GET /v2/analytics/functions answers aedifion's AnalysisFunction shape,
// all functions or those fitting one component (by alphanumeric or
// numeric id), with the pins and attribute definitions they read.
func TestAnalysisFunctionsRoute(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	comps := map[string]int64{}
	for _, item := range e.do("GET", "/v2/components", c.Admin, nil).want(t, 200).List {
		m := item.(map[string]any)
		comps[m["alphanumeric_id"].(string)] = int64(m["id"].(float64))
	}
	byAlnum := func(list []any) map[string]map[string]any {
		out := map[string]map[string]any{}
		for _, item := range list {
			m := item.(map[string]any)
			out[m["alphanumeric_id"].(string)] = m
		}
		return out
	}

	all := byAlnum(e.do("GET", "/v2/analytics/functions", c.Admin, nil).want(t, 200).List)
	for _, id := range []string{"room_air_quality_analysis", "operating_cycle_analysis", "thermal_comfort_analysis", "energy_consumption_analysis"} {
		f := all[id]
		if f == nil {
			t.Fatalf("GET /v2/analytics/functions lacks %s", id)
		}
		if f["id"].(float64) <= 0 || f["nameEN"] == "" || f["nameDE"] == "" || f["name"] != f["nameEN"] ||
			f["execution_schedule"] != "weekly" || len(f["kpis"].([]any)) == 0 || len(f["pins"].([]any)) == 0 {
			t.Errorf("%s: %v", id, f)
		}
	}

	room := e.do("GET", "/v2/analytics/functions?component_alphanumeric_id=room", c.Admin, nil).want(t, 200)
	forRoom := byAlnum(room.List)
	if forRoom["energy_consumption_analysis"] != nil || forRoom["operating_cycle_analysis"] != nil {
		t.Errorf("functions that do not fit a room listed for it: %s", room.Body)
	}
	air := forRoom["room_air_quality_analysis"]
	if air == nil {
		t.Fatalf("room lacks room_air_quality_analysis: %s", room.Body)
	}
	pins := air["pins"].([]any)
	if len(pins) != 1 || pins[0].(map[string]any)["alphanumeric_id"] != "co2" || pins[0].(map[string]any)["unit"] != "ppm" {
		t.Errorf("room air quality on a room reads %v, want its co2 pin", pins)
	}
	attrs := air["attributes"].([]any)
	if len(attrs) != 1 || attrs[0].(map[string]any)["key"] != "outdoor_co2" || attrs[0].(map[string]any)["value_type"] != "float" {
		t.Errorf("room air quality on a room reads attributes %v, want outdoor_co2", attrs)
	}
	if !slices.Contains(air["kpis"].([]any), any("co2 duration.IDA1.relative")) {
		t.Errorf("kpis %v", air["kpis"])
	}
	// The same by numeric id, and by both; names in German on request.
	byID := e.do("GET", fmt.Sprintf("/v2/analytics/functions?component_id=%d&language=de", comps["room"]), c.Admin, nil).want(t, 200)
	if got := byAlnum(byID.List); len(got) != len(forRoom) || got["room_air_quality_analysis"]["name"] != "Raumluftqualitätsanalyse" {
		t.Errorf("by component_id: %s", byID.Body)
	}
	both := e.do("GET", fmt.Sprintf("/v2/analytics/functions?component_id=%d&component_alphanumeric_id=room", comps["room"]), c.Admin, nil).want(t, 200)
	if len(both.List) != len(forRoom) {
		t.Errorf("by both: %s", both.Body)
	}
	// A thermal control loop gets the six functions aedifion's API lists
	// for it, and bdp's virtual heat meter (it has flow, return and volume
	// flow pins).
	var loop []string
	for _, f := range e.do("GET", "/v2/analytics/functions?component_alphanumeric_id=thermal_control_loop", c.Admin, nil).want(t, 200).List {
		loop = append(loop, f.(map[string]any)["alphanumeric_id"].(string))
	}
	slices.Sort(loop)
	if want := []string{"control_loop_oscillation_analysis", "heating_curve_analysis", "operating_cycle_analysis",
		"schedule_analysis", "setpoint_deviation_analysis", "temperature_spread_analysis", "virtual_heat_meter"}; !slices.Equal(loop, want) {
		t.Errorf("thermal control loop functions %v, want %v", loop, want)
	}
	// The air handling unit has no outdoor_co2 attribute: none listed.
	ahu := byAlnum(e.do("GET", "/v2/analytics/functions?component_alphanumeric_id=air_handling_unit", c.Admin, nil).want(t, 200).List)
	if f := ahu["room_air_quality_analysis"]; f == nil || len(f["attributes"].([]any)) != 0 ||
		f["pins"].([]any)[0].(map[string]any)["alphanumeric_id"] != "return_air_co2" {
		t.Errorf("air handling unit: %v", f)
	}
}

func TestAnalysisFunctionsBadInput(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	var meterID float64
	for _, item := range e.do("GET", "/v2/components", c.Admin, nil).want(t, 200).List {
		if m := item.(map[string]any); m["alphanumeric_id"] == "electricity_meter" {
			meterID = m["id"].(float64)
		}
	}
	for _, tc := range []struct {
		query  string
		status int
		want   string
	}{
		{"component_alphanumeric_id=no_such_component", 404, `no component "no_such_component"`},
		{"component_id=999999", 404, "no component with id 999999"},
		{"component_id=room", 400, "component_id must be a positive integer"},
		{"component_id=-3", 400, "component_id must be a positive integer"},
		{fmt.Sprintf("component_id=%v&component_alphanumeric_id=room", meterID), 400, "name different components"},
		{"language=fr", 400, `language "fr" is not supported`},
		{"component=room", 400, `unknown query parameter "component"`},
	} {
		t.Run(tc.query, func(t *testing.T) {
			r := e.do("GET", "/v2/analytics/functions?"+tc.query, c.Admin, nil).wantError(t, tc.status)
			if msg, _ := r.JSON["error"].(string); !strings.Contains(msg, tc.want) {
				t.Fatalf("error %q, want it to say %q", msg, tc.want)
			}
		})
	}
}

// Granted like the component catalog: a role must grant the route; no
// credentials, 401.
func TestAnalysisFunctionsGrants(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	e.do("GET", "/v2/analytics/functions", nil, nil).wantError(t, 401)
	u, uid := e.newUser(c)
	grant := e.endpointID("GET", "/v2/analytics/functions")
	rbDenied(t, e.do("GET", "/v2/analytics/functions", u, nil), grant, "GET", "/v2/analytics/functions")
	pid, _ := e.newProject(c.Admin)
	rbAssignProjectRole(e, c.Admin, pid, rbCreateProjectRole(e, c.Admin, pid, []int32{grant}), uid)
	if got := e.do("GET", "/v2/analytics/functions", u, nil).want(t, 200); len(got.List) == 0 {
		t.Errorf("granted user sees no functions: %s", got.Body)
	}
}
