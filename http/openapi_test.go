package http

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The document is generated from the route declarations: every /v2 and
// operator route is in it, with its path parameters, a success schema and
// the error envelope.
func TestOpenAPIDocumentCoversEveryRoute(t *testing.T) {
	e := newTestEnv(t)
	r := e.do("GET", "/v2/openapi.json", nil, nil).want(t, 200)
	var doc struct {
		OpenAPI string                               `json:"openapi"`
		Paths   map[string]map[string]map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(r.Body, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.OpenAPI != "3.1.0" {
		t.Fatalf("openapi %q", doc.OpenAPI)
	}
	opIDs := map[string]bool{}
	paramRe := regexp.MustCompile(`\{([^}]+)\}`)
	for _, group := range [][]*route{e.srv.routes, operatorRoutes(e.srv)} {
		for _, rt := range group {
			op, ok := doc.Paths[rt.Path][strings.ToLower(rt.Method)]
			if !ok {
				t.Errorf("%s %s missing from the document", rt.Method, rt.Path)
				continue
			}
			id, _ := op["operationId"].(string)
			if id == "" || opIDs[id] {
				t.Errorf("%s %s: operationId %q empty or duplicate", rt.Method, rt.Path, id)
			}
			opIDs[id] = true
			params, _ := op["parameters"].([]any)
			for _, m := range paramRe.FindAllStringSubmatch(rt.Path, -1) {
				found := false
				for _, p := range params {
					pm := p.(map[string]any)
					found = found || (pm["name"] == m[1] && pm["in"] == "path" && pm["required"] == true)
				}
				if !found {
					t.Errorf("%s %s: path parameter %s not declared", rt.Method, rt.Path, m[1])
				}
			}
			responses, _ := op["responses"].(map[string]any)
			if _, ok := responses["400"]; !ok {
				t.Errorf("%s %s: no error response documented", rt.Method, rt.Path)
			}
		}
	}
	// Every status a route answers is documented: those of its kind and
	// its own (schemathesis, make test-api, checks the same on live answers).
	for _, tc := range []struct {
		path, method string
		statuses     []string
	}{
		{"/v2/meta/endpoints", "get", []string{"200", "400", "404", "408", "413", "414", "431"}},
		{"/v2/auth/token", "post", []string{"200", "400", "401", "404", "408", "413", "414", "429", "431", "503"}},
		{"/v2/user/token", "post", []string{"200", "400", "401", "404", "408", "413", "414", "429", "431", "503"}},
		{"/v2/user", "get", []string{"200", "400", "401", "403", "404", "408", "413", "414", "429", "431", "503"}},
		{"/v2/project/{project_id}/virtual_datapoint/run", "post", []string{"200", "400", "401", "403", "404", "408", "409", "413", "414", "429", "431", "503"}},
		{"/v2/datapoint/timeseries", "get", []string{"200", "400", "401", "403", "404", "408", "413", "414", "422", "429", "431", "503"}},
		{"/v2/company/role", "post", []string{"200", "400", "401", "403", "404", "408", "409", "413", "414", "429", "431", "503"}},
		{"/operator/companies", "post", []string{"201", "400", "401", "403", "404", "408", "409", "413", "414", "431", "503"}},
	} {
		responses, _ := doc.Paths[tc.path][tc.method]["responses"].(map[string]any)
		var got []string
		for code := range responses {
			got = append(got, code)
		}
		slices.Sort(got)
		if !slices.Equal(got, tc.statuses) {
			t.Errorf("%s %s: documented statuses %v, want %v", tc.method, tc.path, got, tc.statuses)
		}
	}
	// Request schemas carry the required fields the server enforces.
	create := doc.Paths["/v2/company/user"]["post"]["requestBody"].(map[string]any)
	schema := create["content"].(map[string]any)["application/json"].(map[string]any)["schema"].(map[string]any)
	req, _ := json.Marshal(schema["required"])
	for _, f := range []string{"firstName", "lastName", "email", "password"} {
		if !strings.Contains(string(req), `"`+f+`"`) {
			t.Errorf("POST /v2/company/user: %s not required in the schema (%s)", f, req)
		}
	}
	if strings.Contains(string(req), `"company_id"`) { // the caller's company when left out
		t.Errorf("POST /v2/company/user: company_id is optional, the schema requires it (%s)", req)
	}
	// A body is required where the server refuses to go without one.
	for _, tc := range []struct {
		path, method string
		required     bool
	}{
		{"/v2/company/user", "post", true},
		{"/v2/datapoint", "put", true},
		{"/operator/projects/{project_id}/datapoints/{dataPointID}/tags", "put", true},
		{"/v2/auth/token", "post", false}, // Basic credentials stand in for the form
		{"/v2/user", "put", false},        // every field optional
	} {
		body, _ := doc.Paths[tc.path][tc.method]["requestBody"].(map[string]any)
		if body == nil || body["required"] != tc.required {
			t.Errorf("%s %s: requestBody %v, want required %v", tc.method, tc.path, body, tc.required)
		}
	}
	// No response schema exposes a password, but the edge credentials'
	// answer: a password the platform generated, shown once (decisions.md 2).
	for path, ops := range doc.Paths {
		for m, op := range ops {
			res, _ := json.Marshal(op["responses"])
			if strings.Contains(string(res), `"password"`) && (m != "post" || path != "/operator/projects/{project_id}/edge") {
				t.Errorf("%s %s: a response schema has a password field", m, path)
			}
		}
	}
}
