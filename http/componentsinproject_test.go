package http

import (
	"fmt"
	"strings"
	"testing"
)

// cipFixture is a project with datapoints and the catalog ids tests need.
type cipFixture struct {
	e          *testEnv
	c          company
	pid        int64
	components map[string]int64            // alphanumeric id → id
	pins       map[string]map[string]int64 // component → pin alphanumeric id → id
}

func newCIPFixture(t *testing.T, datapoints ...string) cipFixture {
	e := newTestEnv(t)
	c := e.newCompany()
	pid, _ := e.newProject(c.Admin)
	for _, dp := range datapoints {
		tsUpload(e, c.Admin, pid, dp, tsMinute, 1)
	}
	f := cipFixture{e: e, c: c, pid: pid, components: map[string]int64{}, pins: map[string]map[string]int64{}}
	for _, item := range e.do("GET", "/v2/components", c.Admin, nil).want(t, 200).List {
		m := item.(map[string]any)
		id := int64(m["id"].(float64))
		f.components[m["alphanumeric_id"].(string)] = id
		f.pins[m["alphanumeric_id"].(string)] = map[string]int64{}
		for _, p := range e.do("GET", fmt.Sprintf("/v2/component/%d/pins", id), c.Admin, nil).want(t, 200).List {
			pm := p.(map[string]any)
			f.pins[m["alphanumeric_id"].(string)][pm["alphanumeric_id"].(string)] = int64(pm["id"].(float64))
		}
	}
	return f
}

func (f cipFixture) path(suffix string) string {
	return fmt.Sprintf("/v2/project/%d/componentInProject%s", f.pid, suffix)
}

// create maps a catalog component into the project and answers its id.
func (f cipFixture) create(t *testing.T, as cred, component string) int64 {
	t.Helper()
	res := f.e.do("POST", f.path(""), as, map[string]any{"component_id": f.components[component], "nameEN": component + " 1"}).
		want(t, 200).resource(t)
	return int64(res["id"].(float64))
}

// pinOf finds a pin of a detail by alphanumeric id.
func pinOf(t *testing.T, detail map[string]any, pin string) map[string]any {
	t.Helper()
	for _, p := range detail["pins"].([]any) {
		if p.(map[string]any)["alphanumeric_id"] == pin {
			return p.(map[string]any)
		}
	}
	t.Fatalf("detail lacks pin %s: %v", pin, detail["pins"])
	return nil
}

func attributeOf(detail map[string]any, key string) any {
	for _, a := range detail["attributes"].([]any) {
		if a.(map[string]any)["key"] == key {
			return a.(map[string]any)["value"]
		}
	}
	return nil
}

func TestComponentInProjectLifecycle(t *testing.T) {
	f := newCIPFixture(t, "hp_return", "hp_supply")
	e, admin := f.e, f.c.Admin
	res := e.do("POST", f.path(""), admin, map[string]any{"component_id": f.components["heat_pump"], "nameEN": "Heat pump 1",
		"nameDE": "Wärmepumpe 1", "display_name": "HP1"}).want(t, 200)
	if res.JSON["operation"] != "create" {
		t.Fatalf("operation: %s", res.Body)
	}
	d := res.resource(t)
	hp := int64(d["id"].(float64))
	if d["component"].(map[string]any)["alphanumeric_id"] != "heat_pump" || d["display_name"] != "HP1" || d["nameDE"] != "Wärmepumpe 1" ||
		int64(d["project_id"].(float64)) != f.pid {
		t.Fatalf("detail: %s", res.Body)
	}
	if p := pinOf(t, d, "condenser_inlet_temperature"); p["dataPointID"] != nil {
		t.Fatalf("a new component has a mapped pin: %v", p)
	}

	pin := f.pins["heat_pump"]["condenser_inlet_temperature"]
	mapBody := func(dp string) map[string]any {
		return map[string]any{"componentinproject_id": hp, "pin_id": pin, "dataPointID": dp}
	}
	d = e.do("POST", f.path("/pin/datapoint"), admin, mapBody("hp_return")).want(t, 200).resource(t)
	if got := pinOf(t, d, "condenser_inlet_temperature")["dataPointID"]; got != "hp_return" {
		t.Fatalf("mapped pin shows %v", got)
	}
	e.do("POST", f.path("/pin/datapoint"), admin, mapBody("hp_supply")).wantError(t, 409)
	d = e.do("PUT", f.path("/pin/datapoint"), admin, mapBody("hp_supply")).want(t, 200).resource(t)
	if got := pinOf(t, d, "condenser_inlet_temperature")["dataPointID"]; got != "hp_supply" {
		t.Fatalf("remapped pin shows %v", got)
	}
	// The same datapoint on a pin of another component.
	room := f.create(t, admin, "room")
	d = e.do("POST", f.path("/pin/datapoint"), admin, map[string]any{"componentinproject_id": room,
		"pin_id": f.pins["room"]["temperature"], "dataPointID": "hp_supply"}).want(t, 200).resource(t)
	if got := pinOf(t, d, "temperature")["dataPointID"]; got != "hp_supply" {
		t.Fatalf("second mapping of a datapoint: %v", got)
	}

	// Attributes, each of its value type.
	attr := func(method, key string, value any) resp {
		return e.do(method, f.path("/attribute"), admin, map[string]any{"componentinproject_id": hp, "key": key, "value": value})
	}
	d = attr("POST", "nominal_heat_flow", 12.5).want(t, 200).resource(t)
	if got := attributeOf(d, "nominal_heat_flow"); got != "12.5" {
		t.Fatalf("float attribute: %v", got)
	}
	attr("POST", "nominal_heat_flow", 13).wantError(t, 409)
	if got := attributeOf(attr("PUT", "nominal_heat_flow", "13.0").want(t, 200).resource(t), "nominal_heat_flow"); got != "13" {
		t.Fatalf("float attribute given as text: %v", got)
	}
	schedule := map[string]any{"monday": []any{map[string]any{"start": "06:00", "end": "18:00"}}}
	if got := attributeOf(attr("POST", "schedule", schedule).want(t, 200).resource(t), "schedule"); got != `{"monday":[{"end":"18:00","start":"06:00"}]}` {
		t.Fatalf("json attribute: %v", got)
	}

	// Rename, list, unmap, remove a value, delete.
	d = e.do("PUT", f.path(fmt.Sprintf("/%d", hp)), admin, map[string]any{"nameEN": "Heat pump A"}).want(t, 200).resource(t)
	if d["nameEN"] != "Heat pump A" || d["display_name"] != "HP1" {
		t.Fatalf("rename: %v", d)
	}
	list := e.do("GET", fmt.Sprintf("/v2/project/%d/componentsInProject", f.pid), admin, nil).want(t, 200)
	items := list.JSON["items"].([]any)
	if len(items) != 2 || items[0].(map[string]any)["nameEN"] != "Heat pump A" ||
		int64(items[0].(map[string]any)["component_id"].(float64)) != f.components["heat_pump"] ||
		list.JSON["meta"].(map[string]any)["total_items"].(float64) != 2 {
		t.Fatalf("list: %s", list.Body)
	}
	d = e.do("DELETE", f.path("/pin/datapoint"), admin, map[string]any{"componentinproject_id": hp, "pin_id": pin}).want(t, 200).resource(t)
	if got := pinOf(t, d, "condenser_inlet_temperature")["dataPointID"]; got != nil {
		t.Fatalf("unmapped pin shows %v", got)
	}
	d = e.do("DELETE", f.path("/attribute"), admin, map[string]any{"componentinproject_id": hp, "key": "schedule"}).want(t, 200).resource(t)
	if attributeOf(d, "schedule") != nil || attributeOf(d, "nominal_heat_flow") != "13" {
		t.Fatalf("after removing schedule: %v", d["attributes"])
	}
	e.do("DELETE", f.path(fmt.Sprintf("/%d", hp)), admin, nil).want(t, 200)
	e.do("GET", f.path(fmt.Sprintf("/%d", hp)), admin, nil).wantError(t, 404)
	if got := e.do("GET", f.path(fmt.Sprintf("/%d", room)), admin, nil).want(t, 200).JSON; pinOf(t, got, "temperature")["dataPointID"] != "hp_supply" {
		t.Fatalf("deleting one component changed another: %v", got)
	}
	// A project goes with its mapped components.
	e.do("DELETE", fmt.Sprintf("/v2/project/%d", f.pid), admin, nil).want(t, 200)
}

func TestComponentInProjectBadInput(t *testing.T) {
	f := newCIPFixture(t, "dp1")
	e, admin := f.e, f.c.Admin
	hp := f.create(t, admin, "heat_pump")
	otherPid, _ := e.newProject(admin)
	foreign := e.do("POST", fmt.Sprintf("/v2/project/%d/componentInProject", otherPid), admin,
		map[string]any{"component_id": f.components["heat_pump"]}).want(t, 200).resource(t)["id"].(float64)
	pin := f.pins["heat_pump"]["operating_message"]
	e.do("POST", f.path("/pin/datapoint"), admin, map[string]any{"componentinproject_id": hp, "pin_id": pin, "dataPointID": "dp1"}).want(t, 200)
	attr := func(key string, value any) map[string]any {
		return map[string]any{"componentinproject_id": hp, "key": key, "value": value}
	}
	for _, tc := range []struct {
		name, method, path string
		body               any
		status             int
		want               string
	}{
		{"unknown component", "POST", "", map[string]any{"component_id": 999999}, 404, "no component with id 999999"},
		{"component_id missing", "POST", "", map[string]any{"nameEN": "x"}, 400, "component_id is required"},
		{"unknown component in project", "GET", "/999999", nil, 404, "component in project 999999 not found"},
		{"another project's component", "GET", fmt.Sprintf("/%d", int64(foreign)), nil, 404, "not found"},
		{"component_id cannot change", "PUT", fmt.Sprintf("/%d", hp), map[string]any{"component_id": f.components["room"]}, 400, "cannot change"},
		{"unknown pin", "POST", "/pin/datapoint", map[string]any{"componentinproject_id": hp, "pin_id": 999999, "dataPointID": "dp1"}, 404, "pin 999999 not found"},
		{"pin of another component", "POST", "/pin/datapoint", map[string]any{"componentinproject_id": hp,
			"pin_id": f.pins["room"]["co2"], "dataPointID": "dp1"}, 404, "not found on the component"},
		{"unknown datapoint", "POST", "/pin/datapoint", map[string]any{"componentinproject_id": hp,
			"pin_id": f.pins["heat_pump"]["power_consumption"], "dataPointID": "nope"}, 404, `datapoint "nope" not found`},
		{"remap an unmapped pin", "PUT", "/pin/datapoint", map[string]any{"componentinproject_id": hp,
			"pin_id": f.pins["heat_pump"]["power_consumption"], "dataPointID": "dp1"}, 404, "not found"},
		{"pin of a foreign component in project", "POST", "/pin/datapoint", map[string]any{"componentinproject_id": int64(foreign),
			"pin_id": pin, "dataPointID": "dp1"}, 404, "not found"},
		{"unknown attribute key", "POST", "/attribute", attr("colour", "red"), 404, `no attribute "colour"`},
		{"float given text", "POST", "/attribute", attr("nominal_heat_flow", "twelve"), 400, "takes a float value"},
		{"float given an object", "POST", "/attribute", attr("nominal_heat_flow", map[string]any{"v": 1}), 400, "takes a float value"},
		{"json given broken text", "POST", "/attribute", attr("schedule", "{monday"), 400, "not JSON text"},
		{"value missing", "POST", "/attribute", map[string]any{"componentinproject_id": hp, "key": "schedule"}, 400, "value is required"},
		{"change an unset attribute", "PUT", "/attribute", attr("nominal_heat_flow", 1), 404, "not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(tc.method, f.path(tc.path), admin, tc.body).wantError(t, tc.status)
			if msg, _ := r.JSON["error"].(string); !strings.Contains(msg, tc.want) {
				t.Fatalf("error %q, want it to say %q", msg, tc.want)
			}
		})
	}
	// A string attribute refuses a number; nothing was stored by any refusal.
	room := f.create(t, admin, "room")
	r := e.do("POST", f.path("/attribute"), admin, map[string]any{"componentinproject_id": room, "key": "comfort_category", "value": 2}).wantError(t, 400)
	if !strings.Contains(r.JSON["error"].(string), "takes a string value") {
		t.Fatalf("string attribute: %s", r.Body)
	}
	d := e.do("GET", f.path(fmt.Sprintf("/%d", hp)), admin, nil).want(t, 200).JSON
	if len(d["attributes"].([]any)) != 0 || pinOf(t, d, "operating_message")["dataPointID"] != "dp1" {
		t.Fatalf("a refused request changed the component: %v", d)
	}
}

// Mapping needs read access to the datapoint; the detail shows a mapped
// datapoint only to a caller who may read it.
func TestComponentInProjectTagAuths(t *testing.T) {
	f := newCIPFixture(t, "visible", "secret")
	e, admin := f.e, f.c.Admin
	base := "/v2/project/{project_id}/componentInProject"
	var grants []int32
	for _, r := range [][2]string{{"POST", base}, {"GET", base + "/{componentinproject_id}"}, {"POST", base + "/pin/datapoint"},
		{"PUT", base + "/pin/datapoint"}, {"GET", "/v2/components"}} {
		grants = append(grants, e.endpointID(r[0], r[1]))
	}
	u, uid := e.newUser(f.c)
	rbAssignProjectRole(e, admin, f.pid, rbCreateProjectRole(e, admin, f.pid, grants, rbTag("name", "visible", true, false)), uid)

	hp := f.create(t, u, "heat_pump")
	mapPin := func(as cred, method, pin, dp string) resp {
		return e.do(method, f.path("/pin/datapoint"), as, map[string]any{"componentinproject_id": hp,
			"pin_id": f.pins["heat_pump"][pin], "dataPointID": dp})
	}
	wantNoAccess(t, mapPin(u, "POST", "power_consumption", "secret"), "read", "secret")
	mapPin(u, "POST", "operating_message", "visible").want(t, 200)
	mapPin(admin, "POST", "power_consumption", "secret").want(t, 200)
	wantNoAccess(t, mapPin(u, "PUT", "operating_message", "secret"), "read", "secret")

	mine := e.do("GET", f.path(fmt.Sprintf("/%d", hp)), u, nil).want(t, 200).JSON
	if p := pinOf(t, mine, "operating_message"); p["dataPointID"] != "visible" || p["masked"] != nil {
		t.Errorf("readable mapping: %v", p)
	}
	if p := pinOf(t, mine, "power_consumption"); p["dataPointID"] != nil || p["masked"] != true {
		t.Errorf("unreadable mapping is not masked: %v", p)
	}
	if strings.Contains(string(e.do("GET", f.path(fmt.Sprintf("/%d", hp)), u, nil).Body), "secret") {
		t.Error("the detail names a datapoint the caller may not read")
	}
	full := e.do("GET", f.path(fmt.Sprintf("/%d", hp)), admin, nil).want(t, 200).JSON
	if pinOf(t, full, "power_consumption")["dataPointID"] != "secret" {
		t.Errorf("the company admin does not see the mapping: %v", full["pins"])
	}
}
