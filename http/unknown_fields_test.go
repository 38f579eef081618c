package http

import (
	"fmt"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/openbdp/bdp/store"
)

// Every JSON body refuses a field its operation does not declare, with
// 400 naming it, and changes nothing (decode_fields.go).

// TestEveryJSONBodyRefusesUnknownFields sends a body with one undeclared
// field to every route of the table that takes a JSON body, as a caller
// allowed to use it, with the path and query it needs.
func TestEveryJSONBodyRefusesUnknownFields(t *testing.T) {
	f := newAnalysisFixture(t)
	e, c, pid := f.e, f.c, f.pid
	roleID := rbCreateProjectRole(e, c.Admin, pid, []int32{})
	_, userID := e.newUser(c)
	mq := num(t, e.do("POST", mqPath(pid), c.Admin, mqBody(uniq("mq"))).want(t, 201).resource(t), "id")
	companyRole := rbCreateCompanyRole(e, c.Admin, []int32{})
	instance := f.createInstance(t, f.roomFns[0], f.room, false)
	view := e.do("POST", fmt.Sprintf("/v2/project/%d/plot-view", pid), c.Admin, map[string]any{"start": "2026-07-01T00:00:00Z",
		"end": "2026-07-02T00:00:00Z", "samplerate": "auto", "datapoints": []string{}}).want(t, 201).JSON["id"].(string)
	ids := strings.NewReplacer("{project_id}", itoa(pid), "{mqttuser_id}", itoa(mq), "{user_id}", itoa(userID), "{company_id}", itoa(c.ID),
		"{componentinproject_id}", itoa(f.room), "{instance_id}", itoa(instance), "{plot_view_id}", view)
	queryValues := map[string]string{"project_id": itoa(pid), "run": "true", "type": "formula", "componentinproject_id": itoa(f.room), "algorithm": "schedule"}
	// Bodies that must be whole for the handler to read further.
	bodies := map[string]map[string]any{"POST /v2/project/{project_id}/virtual_datapoint": formulaConfig("P1 x 2;", map[string]string{"P1": "src"})}
	checked := 0
	for _, rt := range e.srv.routes {
		if rt.Body == nil || rt.StreamBody || reflect.TypeOf(rt.Body).Kind() != reflect.Struct || rt.Tag == store.TagMeta {
			// No body, a form, a map or list whose keys are data, or the
			// token routes, whose body is the OAuth2 password-grant form.
			continue
		}
		path := ids.Replace(rt.Path)
		if strings.HasPrefix(rt.Path, "/v2/company/role") {
			path = strings.ReplaceAll(path, "{role_id}", itoa(companyRole))
		}
		path = strings.ReplaceAll(path, "{role_id}", itoa(roleID))
		q := url.Values{}
		for _, p := range rt.Query {
			if p.Required || p.Name == "project_id" {
				v, known := queryValues[p.Name]
				if !known {
					v = "x"
				}
				q.Set(p.Name, v)
			}
		}
		if strings.Contains(path, "{") {
			t.Errorf("%s %s: no id for the path in this test", rt.Method, rt.Path)
			continue
		}
		if len(q) > 0 {
			path += "?" + q.Encode()
		}
		var as cred = c.Admin
		if strings.HasPrefix(rt.Path, "/operator/") {
			as = bearer(testOperatorToken)
		}
		t.Run(rt.Method+" "+rt.Path, func(t *testing.T) {
			body := map[string]any{}
			for k, v := range bodies[rt.Method+" "+rt.Path] {
				body[k] = v
			}
			body["bdp_no_such_field"] = 1
			r := e.do(rt.Method, path, as, body)
			r.wantError(t, 400)
			if msg := r.JSON["error"].(string); !strings.Contains(msg, "bdp_no_such_field") {
				t.Fatalf("the answer must name the field: %s", r.Body)
			}
		})
		checked++
	}
	if checked < 25 {
		t.Fatalf("only %d routes with a JSON body checked", checked)
	}
}

// The cases users met: a misspelt field passed for a request obeyed.
func TestUnknownFieldChangesNothing(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	pid, _ := e.newProject(c.Admin)
	settings := fmt.Sprintf("/operator/projects/%d/settings", pid)
	for _, tc := range []struct {
		name, method, path string
		as                 cred
		body               any
		field              string
		unchanged          func() string
	}{
		{"MQTT user with right for rights", "POST", mqPath(pid), c.Admin, mqBody("typo-gw", "right", "write"), "right",
			func() string { _, exists := e.mqRow("typo-gw"); return fmt.Sprint(exists) }},
		{"operator settings typo", "PUT", settings, bearer(testOperatorToken), map[string]any{"setpoint_writing_enabeld": true}, "setpoint_writing_enabeld",
			func() string { return string(e.do("GET", settings, bearer(testOperatorToken), nil).Body) }},
		{"a TagAuth's misspelt flag, nested", "POST", fmt.Sprintf("/v2/project/%d/role", pid), c.Admin,
			rbRoleBody("typo-role", []int32{0}, map[string]any{"key": "name", "value": "*", "read": true, "wirte": true}), "authed_tags[0].wirte",
			func() string { return rbProjectRoles(e, c.Admin, pid) }},
		{"a field in another case", "PUT", "/v2/user", c.Admin, map[string]any{"FirstName": "Other"}, "FirstName",
			func() string { return string(e.do("GET", "/v2/user", c.Admin, nil).Body) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.unchanged()
			r := e.do(tc.method, tc.path, tc.as, tc.body).wantError(t, 400)
			if msg := r.JSON["error"].(string); !strings.Contains(msg, `unknown field "`+tc.field+`"`) {
				t.Fatalf("the answer must name %s: %s", tc.field, r.Body)
			}
			if after := tc.unchanged(); after != before {
				t.Fatalf("a refused request changed something: %s -> %s", before, after)
			}
		})
	}
	// The form-encoded password change refuses an unknown field too.
	r := e.send("PUT", "/v2/user/password", c.Admin, "application/x-www-form-urlencoded",
		strings.NewReader("current_password=admin-password&new_password=another-password&new_pasword=x"))
	r.wantError(t, 400)
	if !strings.Contains(r.JSON["error"].(string), `unknown field "new_pasword"`) {
		t.Fatalf("the answer must name new_pasword: %s", r.Body)
	}
	e.do("GET", "/v2/user", c.Admin, nil).want(t, 200) // the password did not change
}

// An integer field takes a number JSON carries as an integer exactly,
// however written (3600.0 from Python's float, 1e3); a fraction or a
// value beyond 64 bits is still refused, naming the field.
func TestIntegerFieldsTakeExactIntegers(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	pid, _ := e.newProject(c.Admin)
	for _, tc := range []struct {
		name, validity string
		seconds        int
		refused        string
	}{
		{"plain", "3600", 3600, ""},
		{"with a zero fraction", "3600.0", 3600, ""},
		{"with an exponent", "1e3", 1000, ""},
		{"with both", "7.2E+3", 7200, ""},
		{"a fraction", "3600.5", 0, "validity: want an integer, got the number 3600.5"},
		{"beyond 64 bits", "1e30", 0, "validity: want an integer, got the number 1e30"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := uniq("int")
			body := []byte(`{"username":"` + name + `","password":"mqtt-secret-1","validity":` + tc.validity + `,"description":"1.0"}`)
			r := e.do("POST", mqPath(pid), c.Admin, body)
			if tc.refused != "" {
				r.wantError(t, 400)
				if r.JSON["error"] != tc.refused {
					t.Fatalf("error %q, want %q", r.JSON["error"], tc.refused)
				}
				if _, exists := e.mqRow(name); exists {
					t.Fatal("a refused request created the MQTT user")
				}
				return
			}
			res := r.want(t, 201).resource(t)
			mqValidUntil(t, res, tc.seconds)
			if res["description"] != "1.0" {
				t.Fatalf("a string that looks like a number changed: %v", res["description"])
			}
		})
	}
	// Within arrays too: a role's endpoint ids.
	r := e.do("POST", fmt.Sprintf("/v2/project/%d/role", pid), c.Admin, []byte(`{"name":"exact","authed_endpoints":[0.0],"authed_tags":[]}`)).want(t, 200)
	if ids := r.resource(t)["authed_endpoints"].([]any); len(ids) == 0 {
		t.Fatalf("authed_endpoints [0.0] is not all endpoints: %s", r.Body)
	}
}
