package http

import (
	"encoding/json"
	"fmt"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"
)

// The forms aedifion's published clients send (issue 17, item 12): a user
// created without company_id, and the component-mapping routes with their
// fields in the query.

// POST /v2/company/user without company_id creates the user in the
// caller's company (aedifion's body has no company_id); another company's
// id is still refused.
func TestCreateUserWithoutCompanyID(t *testing.T) {
	e := newTestEnv(t)
	c, other := e.newCompany(), e.newCompany()
	for _, path := range []string{"/v2/company/user", "/v2/user"} {
		t.Run(path, func(t *testing.T) {
			email := uniq("nocompany") + "@example.com"
			r := e.do("POST", path, c.Admin, map[string]any{"firstName": "N", "lastName": "C", "email": email, "password": "a-long-password"}).want(t, 200)
			if got := num(t, r.resource(t), "company_id"); got != c.ID {
				t.Fatalf("the user joined company %d, want the caller's %d: %s", got, c.ID, r.Body)
			}
			me := e.do("GET", "/v2/user", basic{email, "a-long-password"}, nil).want(t, 200)
			if got := num(t, me.JSON, "user.company_id"); got != c.ID {
				t.Fatalf("GET /v2/user shows company %d: %s", got, me.Body)
			}
			stray := uniq("stray") + "@example.com"
			e.do("POST", path, c.Admin, map[string]any{"company_id": other.ID, "firstName": "N", "lastName": "C", "email": stray,
				"password": "a-long-password"}).wantError(t, 403)
			e.do("GET", "/v2/user", basic{stray, "a-long-password"}, nil).wantError(t, 401)
		})
	}
}

// The component-mapping routes take their fields in the query, as
// aedifion's document has them, or in the body; both give the same result,
// and one field given differently in both places is refused.
func TestComponentMappingQueryForm(t *testing.T) {
	f := newCIPFixture(t, "qf_return", "qf_supply")
	e, admin := f.e, f.c.Admin
	q := func(kv ...any) string {
		v := url.Values{}
		for i := 0; i+1 < len(kv); i += 2 {
			v.Set(kv[i].(string), fmt.Sprint(kv[i+1]))
		}
		return "?" + v.Encode()
	}
	// Create: component_id in the query, names in the body.
	d := e.do("POST", f.path("")+q("component_id", f.components["heat_pump"]), admin, map[string]any{"nameEN": "HP query"}).want(t, 200).resource(t)
	hp := int64(d["id"].(float64))
	if d["component"].(map[string]any)["alphanumeric_id"] != "heat_pump" || d["nameEN"] != "HP query" {
		t.Fatalf("created from the query: %v", d)
	}
	pin := f.pins["heat_pump"]["condenser_inlet_temperature"]
	pinQuery := func(dp string) string { return q("componentinproject_id", hp, "pin_id", pin, "dataPointID", dp) }
	d = e.do("POST", f.path("/pin/datapoint")+pinQuery("qf_return"), admin, nil).want(t, 200).resource(t)
	if got := pinOf(t, d, "condenser_inlet_temperature")["dataPointID"]; got != "qf_return" {
		t.Fatalf("mapped from the query: %v", got)
	}
	d = e.do("PUT", f.path("/pin/datapoint")+pinQuery("qf_supply"), admin, nil).want(t, 200).resource(t)
	if got := pinOf(t, d, "condenser_inlet_temperature")["dataPointID"]; got != "qf_supply" {
		t.Fatalf("remapped from the query: %v", got)
	}

	// Attributes: POST with the id in the query and key and value in the
	// body (aedifion's form), PUT and DELETE with everything in the query.
	d = e.do("POST", f.path("/attribute")+q("componentinproject_id", hp), admin, map[string]any{"key": "nominal_heat_flow", "value": 12.5}).
		want(t, 200).resource(t)
	if got := attributeOf(d, "nominal_heat_flow"); got != "12.5" {
		t.Fatalf("attribute set with the id in the query: %v", got)
	}
	d = e.do("PUT", f.path("/attribute")+q("componentinproject_id", hp, "key", "nominal_heat_flow", "value", "13"), admin, nil).want(t, 200).resource(t)
	if got := attributeOf(d, "nominal_heat_flow"); got != "13" {
		t.Fatalf("attribute changed from the query: %v", got)
	}

	// Refused, changing nothing: one field two ways, an id not a number,
	// a field of neither form.
	before := string(e.do("GET", f.path(fmt.Sprintf("/%d", hp)), admin, nil).want(t, 200).Body)
	for _, tc := range []struct {
		name, method, path string
		body               any
		want               string
	}{
		{"componentinproject_id in both, differently", "PUT", f.path("/attribute") + q("componentinproject_id", hp+1000, "key", "nominal_heat_flow"),
			map[string]any{"componentinproject_id": hp, "value": 14}, "componentinproject_id is given in the query and in the body with different values"},
		{"pin_id not an integer", "DELETE", f.path("/pin/datapoint") + q("componentinproject_id", hp, "pin_id", "first"), nil,
			`query parameter pin_id must be an integer, got "first"`},
		{"component_id not an integer", "POST", f.path("") + q("component_id", "1.5"), nil, `query parameter component_id must be an integer`},
		{"unit in the query of PUT", "PUT", f.path("/attribute") + q("componentinproject_id", hp, "key", "nominal_heat_flow", "value", "15", "unit", "kW"), nil,
			"unit is not supported"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(tc.method, tc.path, admin, tc.body).wantError(t, 400)
			if msg := r.JSON["error"].(string); !strings.Contains(msg, tc.want) {
				t.Fatalf("error %q, want %q", msg, tc.want)
			}
			if after := string(e.do("GET", f.path(fmt.Sprintf("/%d", hp)), admin, nil).want(t, 200).Body); after != before {
				t.Fatalf("a refused request changed the component: %s -> %s", before, after)
			}
		})
	}
	// The document says so: the query parameters are declared, and the
	// body requires none of the fields they can give.
	var doc struct {
		Paths map[string]map[string]struct {
			Parameters  []struct{ Name string }
			RequestBody struct {
				Required bool
				Content  map[string]struct{ Schema struct{ Required []string } }
			}
		}
	}
	if err := json.Unmarshal(e.do("GET", "/v2/openapi.json", nil, nil).want(t, 200).Body, &doc); err != nil {
		t.Fatal(err)
	}
	op := doc.Paths["/v2/project/{project_id}/componentInProject/pin/datapoint"]["post"]
	var names []string
	for _, p := range op.Parameters {
		names = append(names, p.Name)
	}
	if got := strings.Join(names, ","); !strings.Contains(got, "componentinproject_id,pin_id,dataPointID") || op.RequestBody.Required ||
		len(op.RequestBody.Content["application/json"].Schema.Required) != 0 {
		t.Fatalf("the document of POST .../pin/datapoint: parameters %s, body required %v, fields required %v", got, op.RequestBody.Required,
			op.RequestBody.Content["application/json"].Schema.Required)
	}

	// The same value in both places is one value.
	e.do("DELETE", f.path("/attribute")+q("componentinproject_id", hp, "key", "nominal_heat_flow"), admin,
		map[string]any{"componentinproject_id": hp}).want(t, 200)
	d = e.do("DELETE", f.path("/pin/datapoint")+q("componentinproject_id", hp, "pin_id", pin), admin, nil).want(t, 200).resource(t)
	if got := pinOf(t, d, "condenser_inlet_temperature")["dataPointID"]; got != nil {
		t.Fatalf("unmapped from the query, the pin shows %v", got)
	}
	if got := attributeOf(d, "nominal_heat_flow"); got != nil {
		t.Fatalf("the attribute's value was removed from the query, it shows %v", got)
	}
}

// Every list route answers page and per_page: each GET whose answer is a
// list takes them (none answers "unknown query parameter"), and the routes
// that built their whole list answer the page asked for, a bare array
// with its length in X-Total-Count, {items, meta} with the meta counted.
func TestEveryListRouteAnswersPages(t *testing.T) {
	f := newCIPFixture(t, "pg_a", "pg_b")
	e, c, pid := f.e, f.c, f.pid
	e.newProject(c.Admin)
	for i := 0; i < 2; i++ {
		e.do("POST", mqPath(pid), c.Admin, mqBody(uniq("pg"))).want(t, 201)
		rbCreateProjectRole(e, c.Admin, pid, []int32{})
		rbCreateCompanyRole(e, c.Admin, []int32{})
		f.create(t, c.Admin, "room")
	}
	room := f.components["room"]

	lists := 0
	for _, rt := range e.srv.routes {
		if rt.Method != "GET" || !isList(reflect.TypeOf(rt.Resp)) {
			continue
		}
		lists++
		path := strings.NewReplacer("{project_id}", itoa(pid), "{component_id}", itoa(room)).Replace(rt.Path)
		path = anyPathParam.ReplaceAllString(path, "1")
		q := url.Values{"page": {"1"}, "per_page": {"1"}}
		if rt.Tag == "project" && !strings.Contains(rt.Path, "{project_id}") {
			q.Set("project_id", itoa(pid))
		}
		r := e.do("GET", path+"?"+q.Encode(), c.Admin, nil)
		if msg, _ := r.JSON["error"].(string); r.Status == 400 && (strings.Contains(msg, "page") || strings.Contains(msg, "unknown query parameter")) {
			t.Errorf("GET %s refuses page and per_page: %s", rt.Path, r.Body)
		}
	}
	if lists < 15 {
		t.Fatalf("only %d list routes found", lists)
	}

	// Pages of lists the handlers build whole.
	for _, path := range []string{"/v2/meta/endpoints", "/v2/company/roles", fmt.Sprintf("/v2/project/%d/roles", pid),
		fmt.Sprintf("/v2/project/%d/mqttusers", pid), "/v2/user/projects", "/v2/components", fmt.Sprintf("/v2/component/%d/pins", room)} {
		t.Run(path, func(t *testing.T) {
			whole := e.do("GET", path, c.Admin, nil).want(t, 200)
			if whole.Header.Get("X-Total-Count") != "" || len(whole.List) < 2 {
				t.Fatalf("without page: the whole list, no count (%d items, X-Total-Count %q)", len(whole.List), whole.Header.Get("X-Total-Count"))
			}
			for page := 1; page <= 2; page++ {
				r := e.do("GET", fmt.Sprintf("%s?page=%d&per_page=1", path, page), c.Admin, nil).want(t, 200)
				if len(r.List) != 1 || fmt.Sprint(r.List[0]) != fmt.Sprint(whole.List[page-1]) {
					t.Fatalf("page %d of 1: %s, want item %d of %s", page, r.Body, page, whole.Body)
				}
				if got := r.Header.Get("X-Total-Count"); got != itoa(int64(len(whole.List))) {
					t.Fatalf("X-Total-Count %q, want %d", got, len(whole.List))
				}
			}
			beyond := e.do("GET", fmt.Sprintf("%s?page=%d&per_page=1000", path, 2), c.Admin, nil).want(t, 200)
			if string(beyond.Body) != "[]" {
				t.Fatalf("a page beyond the list: %s, want []", beyond.Body)
			}
			e.do("GET", path+"?per_page=1001", c.Admin, nil).wantError(t, 400)
			e.do("GET", path+"?page=0", c.Admin, nil).wantError(t, 400)
		})
	}
	cips := fmt.Sprintf("/v2/project/%d/componentsInProject", pid)
	r := e.do("GET", cips+"?page=2&per_page=1", c.Admin, nil).want(t, 200)
	items, _ := r.JSON["items"].([]any)
	if len(items) != 1 || num(t, r.JSON, "meta.current_page") != 2 || num(t, r.JSON, "meta.items_per_page") != 1 ||
		num(t, r.JSON, "meta.total_items") != 2 || num(t, r.JSON, "meta.total_pages") != 2 {
		t.Fatalf("componentsInProject page 2 of 1: %s", r.Body)
	}
}

// start equal to end with closed_interval=true answers the value at that
// instant: the observation at it, or the last before it; without
// closed_interval an empty window is still refused.
func TestTimeseriesClosedIntervalAtAnInstant(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	pid, _ := e.newProject(c.Admin)
	tsUpload(e, c.Admin, pid, "inst", tsMinute, 1, 2, 3)
	at := func(d time.Duration) string { return tsT0.Add(d).Format(time.RFC3339Nano) }
	for _, tc := range []struct {
		name string
		t    time.Duration
		want string
	}{
		{"at an observation", time.Minute, "1:2"},
		{"between observations", 90 * time.Second, "1.5m:2"},
		{"after the last", time.Hour, "60:3"},
		{"before the first", -time.Minute, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tsGet(e, c.Admin, pid, "inst", "start", at(tc.t), "end", at(tc.t), "closed_interval", "true")
			if got := tsCells(t, r, "value"); got != tc.want {
				t.Fatalf("at %s: %q, want %q", tc.t, got, tc.want)
			}
		})
	}
	short := tsGet(e, c.Admin, pid, "inst", "start", at(time.Minute), "end", at(time.Minute), "closed_interval", "true", "short", "true").want(t, 200)
	if string(short.Body) != `[["`+at(time.Minute)+`",2]]` {
		t.Fatalf("short answer at an instant: %s", short.Body)
	}
	r := tsGet(e, c.Admin, pid, "inst", "start", at(time.Minute), "end", at(time.Minute)).wantError(t, 400)
	if !strings.Contains(r.JSON["error"].(string), "closed_interval=true") {
		t.Fatalf("without closed_interval: %s", r.Body)
	}
	tsGet(e, c.Admin, pid, "inst", "start", at(2*time.Minute), "end", at(time.Minute), "closed_interval", "true").wantError(t, 400)
}
