package http

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
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
