package http

import (
	"encoding/json"
	"flag"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// Every parameter aedifion's published API documents for an operation bdp
// serves is either declared by bdp's route or refused with 400 naming it,
// never ignored (decisions.md 10); parameters nobody documents are refused
// too.

// aedifionParamsFile holds, in bdp's own form, the facts this test needs
// from aedifion's published OpenAPI document (api-evangelist/aedifion,
// openapi/_original/aedifion-openapi.json at f33357bf): for each
// operation, its query parameters and top-level body fields with their
// JSON schema types. Regenerate it from a copy of that document with
//
//	go test ./http -run TestAedifionParametersSupportedOrRefused -aedifion-openapi=PATH
var aedifionParamsFile = filepath.Join("testdata", "aedifion-params.json")

var aedifionOpenAPI = flag.String("aedifion-openapi", "", "regenerate "+aedifionParamsFile+" from this copy of aedifion's OpenAPI document")

// aedifionParam is one parameter aedifion documents: a query parameter or
// a top-level field of the request body, with its JSON schema type.
type aedifionParam struct {
	In   string `json:"in"`
	Name string `json:"name"`
	Type string `json:"type"`
}

// loadAedifionParams maps "METHOD /path/{}/..." (path parameters
// anonymous, as their names differ) to the operation's query parameters
// and body fields.
func loadAedifionParams(t *testing.T) map[string][]aedifionParam {
	t.Helper()
	if *aedifionOpenAPI != "" {
		writeAedifionParams(t, *aedifionOpenAPI)
	}
	raw, err := os.ReadFile(aedifionParamsFile)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string][]aedifionParam
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("%s: %v", aedifionParamsFile, err)
	}
	return out
}

// writeAedifionParams extracts each operation's parameters from aedifion's
// document at path into aedifionParamsFile.
func writeAedifionParams(t *testing.T, path string) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths      map[string]map[string]json.RawMessage
		Components struct {
			Parameters map[string]openAPIParam
			Schemas    map[string]openAPISchema
		}
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	resolve := func(s openAPISchema) openAPISchema {
		for s.Ref != "" {
			s = doc.Components.Schemas[strings.TrimPrefix(s.Ref, "#/components/schemas/")]
		}
		return s
	}
	out := map[string][]aedifionParam{}
	for path, ops := range doc.Paths {
		for method, rawOp := range ops {
			if method == "parameters" {
				continue
			}
			var op struct {
				Parameters  []openAPIParam
				RequestBody struct {
					Content map[string]struct{ Schema openAPISchema }
				}
			}
			if err := json.Unmarshal(rawOp, &op); err != nil {
				t.Fatalf("%s %s: %v", method, path, err)
			}
			params := []aedifionParam{}
			for _, p := range op.Parameters {
				if p.Ref != "" {
					p = doc.Components.Parameters[strings.TrimPrefix(p.Ref, "#/components/parameters/")]
				}
				if p.In == "query" {
					params = append(params, aedifionParam{"query", p.Name, fmt.Sprint(p.Schema.Type)})
				}
			}
			for _, c := range op.RequestBody.Content {
				for name, field := range resolve(c.Schema).Properties {
					params = append(params, aedifionParam{"body", name, fmt.Sprint(resolve(field).Type)})
				}
			}
			slices.SortFunc(params, func(a, b aedifionParam) int {
				return strings.Compare(a.In+" "+a.Name, b.In+" "+b.Name)
			})
			out[opKey(method, path)] = slices.Compact(params)
		}
	}
	encoded, err := json.MarshalIndent(out, "", "\t")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(aedifionParamsFile, append(encoded, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

type openAPIParam struct {
	Ref    string `json:"$ref"`
	In     string
	Name   string
	Schema openAPISchema
}

type openAPISchema struct {
	Ref         string `json:"$ref"`
	Type        any    // a name, or in OpenAPI 3.1 a list of names
	Properties  map[string]openAPISchema
	Description string
}

var anyPathParam = regexp.MustCompile(`\{[^}]+\}`)

func opKey(method, path string) string {
	return strings.ToUpper(method) + " " + anyPathParam.ReplaceAllString(path, "{}")
}

// sample is a value of the type a parameter documents.
func (p aedifionParam) sample() any {
	switch p.Type {
	case "integer", "number":
		return 1
	case "boolean":
		return true
	case "array":
		return []any{}
	case "object":
		return map[string]any{}
	}
	return "x"
}

// TestAedifionParametersSupportedOrRefused goes through bdp's own OpenAPI
// document: for each operation aedifion documents too, each of aedifion's
// parameters is declared by bdp's operation or listed as not supported in
// its description and, sent, answered 400 naming it.
func TestAedifionParametersSupportedOrRefused(t *testing.T) {
	aed := loadAedifionParams(t)
	e := newTestEnv(t)
	c := e.newCompany()
	pid, _ := e.newProject(c.Admin)
	roleID := int64(adWantOp(t, e.do("POST", fmt.Sprintf("/v2/project/%d/role", pid), c.Admin,
		map[string]any{"name": uniq("role"), "authed_endpoints": []int{0}}), "create")["id"].(float64))
	_, userID := e.newUser(c)
	var ours struct {
		Paths map[string]map[string]struct {
			Description string
			Parameters  []struct{ Name, In string }
			RequestBody struct {
				Content map[string]struct{ Schema openAPISchema }
			}
		}
	}
	if err := json.Unmarshal(e.do("GET", "/v2/openapi.json", nil, nil).want(t, 200).Body, &ours); err != nil {
		t.Fatal(err)
	}
	matched, refused := 0, 0
	for path, ops := range ours.Paths {
		for method, op := range ops {
			documented, ok := aed[opKey(method, path)]
			if !ok {
				continue
			}
			matched++
			for _, p := range documented {
				declared := slices.ContainsFunc(op.Parameters, func(q struct{ Name, In string }) bool { return q.In == p.In && q.Name == p.Name })
				for _, c := range op.RequestBody.Content {
					if _, has := c.Schema.Properties[p.Name]; has && p.In == "body" {
						declared = true
					}
				}
				if declared {
					continue
				}
				refused++
				t.Run(strings.ToUpper(method)+" "+path+" "+p.In+" "+p.Name, func(t *testing.T) {
					_, notSupported, _ := strings.Cut(op.Description, "Not supported")
					if !strings.Contains(notSupported+";", " "+p.In+" "+p.Name+";") && !strings.Contains(notSupported, " "+p.In+" "+p.Name+".") {
						t.Fatalf("aedifion documents %s %s, which the operation neither declares nor lists as not supported: %q", p.In, p.Name, op.Description)
					}
					target := strings.NewReplacer("{project_id}", itoa(pid), "{role_id}", itoa(roleID), "{user_id}", itoa(userID)).Replace(path)
					query := url.Values{}
					if slices.ContainsFunc(op.Parameters, func(q struct{ Name, In string }) bool { return q.In == "query" && q.Name == "project_id" }) {
						query.Set("project_id", itoa(pid))
					}
					var body any
					if p.In == "query" {
						query.Set(p.Name, fmt.Sprint(p.sample()))
					} else {
						body = map[string]any{p.Name: p.sample()}
					}
					r := e.do(strings.ToUpper(method), target+"?"+query.Encode(), c.Admin, body).wantError(t, 400)
					if msg := r.JSON["error"].(string); !strings.Contains(msg, p.Name+" is not supported") {
						t.Fatalf("the answer must name %s: %s", p.Name, msg)
					}
				})
			}
		}
	}
	if matched < 30 || refused == 0 {
		t.Fatalf("only %d operations matched aedifion's, %d parameters refused: is %s aedifion's document?", matched, refused, aedifionParamsFile)
	}
}

// A refused body field changes nothing, not even the fields bdp takes
// beside it; a refused query parameter deletes nothing.
func TestAedifionRefusedParameterChangesNothing(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	pid, _ := e.newProject(c.Admin)
	project := fmt.Sprintf("/v2/project/%d", pid)
	name := e.do("GET", project, c.Admin, nil).want(t, 200).JSON["name"]
	e.do("PUT", project, c.Admin, map[string]any{"name": "renamed", "latitude": 50.8}).wantError(t, 400)
	if got := e.do("GET", project, c.Admin, nil).want(t, 200).JSON["name"]; got != name {
		t.Fatalf("a refused update renamed the project from %v to %v", name, got)
	}
	email := uniq("u") + "@example.com"
	e.do("POST", "/v2/company/user", c.Admin, map[string]any{"company_id": c.ID, "firstName": "A", "lastName": "B",
		"email": email, "password": "a-long-password", "locale": "de"}).wantError(t, 400)
	e.do("GET", "/v2/user", basic{email, "a-long-password"}, nil).wantError(t, 401) // not created
	e.do("DELETE", project+"?project_name="+url.QueryEscape(fmt.Sprint(name))+"&cascade=true", c.Admin, nil).wantError(t, 400)
	e.do("GET", project, c.Admin, nil).want(t, 200)
}

// Query parameters no route declares are refused by name on every kind
// of route (meta, company, project, operator), so that a misspelt one
// (sampelrate) never passes unnoticed.
func TestUnknownQueryParameterIsRefused(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	pid, _ := e.newProject(c.Admin)
	for _, tc := range []struct{ method, path, name string }{
		{"GET", "/v2/user?verbose=1", "verbose"},
		{"PUT", "/operator/currency-rates?base=USD", "base"},
		{"GET", "/v2/meta/endpoints?lang=en", "lang"},
		{"GET", fmt.Sprintf("/v2/datapoint/timeseries?project_id=%d&dataPointID=a&sampelrate=1h", pid), "sampelrate"},
		{"DELETE", fmt.Sprintf("/v2/project/%d?force=true", pid), "force"},
		{"POST", fmt.Sprintf("/v2/project/%d/importTimeseries?on_error=abort&format=csv&delimiter=;", pid), "delimiter"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var cr cred = c.Admin
			switch {
			case strings.HasPrefix(tc.path, "/v2/meta"):
				cr = nil
			case strings.HasPrefix(tc.path, "/operator"):
				cr = bearer(testOperatorToken)
			}
			r := e.do(tc.method, tc.path, cr, nil).wantError(t, 400)
			if msg := r.JSON["error"].(string); !strings.Contains(msg, `unknown query parameter "`+tc.name+`"`) {
				t.Fatalf("the answer must name %s: %s", tc.name, msg)
			}
		})
	}
	e.do("GET", fmt.Sprintf("/v2/project/%d", pid), c.Admin, nil).want(t, 200) // not deleted
}

// language: en is what bdp's labels are in; other languages are refused
// rather than answered in English.
func TestLabelDefinitionsLanguage(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	english := e.do("GET", "/v2/labels/definitions", c.Admin, nil).want(t, 200).Body
	if got := e.do("GET", "/v2/labels/definitions?language=en", c.Admin, nil).want(t, 200).Body; string(got) != string(english) {
		t.Fatal("language=en must answer the labels")
	}
	for _, lang := range []string{"de", "fr", "EN"} {
		r := e.do("GET", "/v2/labels/definitions?language="+lang, c.Admin, nil).wantError(t, 400)
		if !strings.Contains(r.JSON["error"].(string), "language") {
			t.Fatalf("language=%s: %s", lang, r.Body)
		}
	}
}

// DELETE of a virtual datapoint with purge=true deletes its output
// datapoint and stored timeseries too; without purge they stay.
func TestDeleteVDPPurge(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	pid, _ := e.newProject(c.Admin)
	for _, tc := range []struct {
		purge      string
		wantStored bool
	}{
		{"", true},
		{"false", true},
		{"true", false},
	} {
		t.Run("purge="+tc.purge, func(t *testing.T) {
			out, src := uniq("out"), uniq("src")
			e.do("POST", vdpPath(pid, "", "dataPointID", out, "type", "formula"), c.Admin,
				formulaConfig("P1 x 2;", map[string]string{"P1": src})).want(t, 200)
			e.do("POST", vdpPath(pid, "/run", "dataPointID", out, "run", "true"), c.Admin, nil).want(t, 200)
			at := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC).Format(time.RFC3339)
			e.do("POST", fmt.Sprintf("/v2/project/%d/timeseries", pid), c.Admin,
				map[string]any{src: []map[string]any{{"time": at, "value": 4}}}).want(t, 200)
			if body := e.readValues(c.Admin, pid, out, 1); !strings.Contains(body, `"value":8`) {
				t.Fatalf("no output before the delete: %s", body)
			}
			e.do("POST", vdpPath(pid, "/run", "dataPointID", out, "run", "false"), c.Admin, nil).want(t, 200)
			e.do("DELETE", vdpPath(pid, "", "dataPointID", out, "purge", "maybe"), c.Admin, nil).wantError(t, 400)
			e.do("GET", vdpPath(pid, "", "dataPointID", out), c.Admin, nil).want(t, 200) // a bad purge deletes nothing
			q := []string{"dataPointID", out}
			if tc.purge != "" {
				q = append(q, "purge", tc.purge)
			}
			e.do("DELETE", vdpPath(pid, "", q...), c.Admin, nil).want(t, 200)
			e.do("GET", vdpPath(pid, "", "dataPointID", out), c.Admin, nil).wantError(t, 404)

			listed := slices.Contains(e.do("GET", fmt.Sprintf("/v2/project/%d", pid), c.Admin, nil).want(t, 200).JSON["datapoints"].([]any), any(out))
			stored := e.sqlFloat(`SELECT count(*) FROM observations o JOIN datapoints d ON d.id = o.datapoint
				WHERE d.project_id = $1 AND d.datapoint_id = $2`, pid, out)
			orphans := e.sqlFloat(`SELECT count(*) FROM observations WHERE datapoint NOT IN (SELECT id FROM datapoints)`)
			if listed != tc.wantStored || (stored == 1) != tc.wantStored || orphans != 0 {
				t.Fatalf("after the delete: output listed %v, %v observations stored, %v orphaned; want stored %v", listed, stored, orphans, tc.wantStored)
			}
			if !slices.Contains(e.do("GET", fmt.Sprintf("/v2/project/%d", pid), c.Admin, nil).want(t, 200).JSON["datapoints"].([]any), any(src)) {
				t.Fatal("purge deleted the source datapoint")
			}
		})
	}
}

// User creation takes aedifion's address and phone, as PUT /v2/user does.
func TestCreateUserWithAddressAndPhone(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	for _, path := range []string{"/v2/company/user", "/v2/user"} {
		t.Run(path, func(t *testing.T) {
			email := uniq("u") + "@example.com"
			e.do("POST", path, c.Admin, map[string]any{"company_id": c.ID, "firstName": "A", "lastName": "B", "email": email,
				"password": "a-long-password", "address": " Pascalstr. 59, Aachen ", "phone": "+49 241 123"}).want(t, 200)
			u := e.do("GET", "/v2/user", basic{email, "a-long-password"}, nil).want(t, 200).JSON["user"].(map[string]any)
			if u["address"] != "Pascalstr. 59, Aachen" || u["phone"] != "+49 241 123" {
				t.Fatalf("address and phone not stored: %v", u)
			}
			e.do("POST", path, c.Admin, map[string]any{"company_id": c.ID, "firstName": "A", "lastName": "B", "email": uniq("u") + "@example.com",
				"password": "a-long-password", "phone": strings.Repeat("1", 201)}).wantError(t, 400)
		})
	}
}
