package http

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// The answers api.md leaves without a shape carry aedifion's names and
// nesting (decisions.md 10, issue 8 item 10), beside every field api.md
// names: each route lists both, and each field must be present.
func TestAnswersCarryAPIMdAndAedifionFields(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	pid, _ := e.newProject(c.Admin) // the creator holds the project's admin role
	e.do("POST", fmt.Sprintf("/v2/project/%d/timeseries", pid), c.Admin,
		map[string]any{"src": []map[string]any{{"time": "2026-01-05T10:00:00Z", "value": 1}}}).want(t, 200)
	e.do("PUT", fmt.Sprintf("/operator/projects/%d/datapoints/src/tags", pid), bearer(testOperatorToken),
		[]map[string]any{{"key": "units", "value": "celsius"}}).want(t, 200)
	e.do("POST", vdpPath(pid, "", "dataPointID", "double", "type", "formula"), c.Admin,
		formulaConfig("P1*2;", map[string]string{"P1": "src"})).want(t, 200)

	role := []string{"id", "name", "description", "authed_endpoints"}
	project := []string{"id", "company_id", "name", "description"}
	companyFields := []string{"id", "name", "description", "address", "phone"}
	key := []string{"id", "name", "description", "project_id"}
	under := func(prefix string, fields ...string) []string {
		out := make([]string, len(fields))
		for i, f := range fields {
			out[i] = prefix + "." + f
		}
		return out
	}
	cat := func(lists ...[]string) []string {
		var out []string
		for _, l := range lists {
			out = append(out, l...)
		}
		return out
	}
	for _, tc := range []struct {
		path         string
		apiMD, aedif []string
		keysOf       string // with checkKeys: the path of an array of keys, name then units
		checkKeys    bool
	}{
		{path: "/v2/user",
			apiMD: cat([]string{"user", "roles", "companyroles"}, under("user", "id", "company_id", "firstName", "lastName", "email", "address", "phone"),
				under("roles.0", role...), []string{"roles.0.project_id", "roles.0.authed_tags"},
				under("companyroles.0", role...), []string{"companyroles.0.company_id"}),
			aedif: cat([]string{"company"}, under("company", companyFields...))},
		{path: "/v2/user/projects",
			apiMD:  under("0", project...), // bdp's flat project, kept
			aedif:  cat(under("0.project", project...), under("0.company", companyFields...), under("0.dataPointKeys.0", key...)),
			keysOf: "0.dataPointKeys", checkKeys: true},
		{path: fmt.Sprintf("/v2/project/%d", pid),
			apiMD:  cat(project, []string{"datapoints", "datapoints.0"}),
			aedif:  cat(under("project", project...), under("company", companyFields...), under("dataPointKeys.0", key...)),
			keysOf: "dataPointKeys", checkKeys: true},
		{path: fmt.Sprintf("/v2/project/%d/datapointkeys", pid),
			aedif: under("0", key...), checkKeys: true},
		{path: vdpPath(pid, "", "dataPointID", "double"),
			apiMD: []string{"dataPointID", "description", "logs", "parameters", "pins", "status"},
			aedif: []string{"vdp_type"}},
		{path: "/v2/meta/endpoints",
			apiMD: under("0", "id", "path", "request_method"),
			aedif: under("0", "id", "path", "request_method", "summary")},
	} {
		t.Run(tc.path, func(t *testing.T) {
			r := e.do("GET", tc.path, c.Admin, nil).want(t, 200)
			var body any = r.JSON
			if r.List != nil {
				body = r.List
			}
			for _, f := range cat(tc.apiMD, tc.aedif) {
				if _, ok := fieldAt(body, f); !ok {
					t.Errorf("no field %s in %s", f, r.Body)
				}
			}
			if tc.checkKeys {
				keys, _ := fieldAt(body, tc.keysOf)
				var names []string
				list, _ := keys.([]any)
				for _, k := range list {
					names = append(names, k.(map[string]any)["name"].(string))
				}
				if strings.Join(names, ",") != "name,units" {
					t.Errorf("datapoint keys %v, want name,units", names)
				}
			}
		})
	}

	// The nested objects hold the same values as the flat ones.
	p := e.do("GET", fmt.Sprintf("/v2/project/%d", pid), c.Admin, nil).want(t, 200).JSON
	if adStr(t, p, "project.name") != adStr(t, p, "name") || num(t, p, "company.id") != c.ID || num(t, p, "project.id") != pid {
		t.Fatalf("nested project or company differ: %v", p)
	}
	if u := e.do("GET", "/v2/user", c.Admin, nil).want(t, 200).JSON; num(t, u, "company.id") != c.ID {
		t.Fatalf("user's company: %v", u)
	}
	for _, ep := range adList(t, e.do("GET", "/v2/meta/endpoints", nil, nil).want(t, 200).List, "") {
		if s, _ := ep["summary"].(string); s == "" {
			t.Fatalf("endpoint without summary: %v", ep)
		}
	}
}

// fieldAt walks a dotted path through decoded JSON; a number indexes an
// array. "" is v itself.
func fieldAt(v any, path string) (any, bool) {
	if path == "" {
		return v, true
	}
	cur := v
	for _, seg := range strings.Split(path, ".") {
		switch x := cur.(type) {
		case map[string]any:
			var ok bool
			if cur, ok = x[seg]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i >= len(x) {
				return nil, false
			}
			cur = x[i]
		default:
			return nil, false
		}
	}
	return cur, true
}
