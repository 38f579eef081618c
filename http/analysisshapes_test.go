package http

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openbdp/bdp/analytics"
)

// aedifionSchema is the part of an OpenAPI 3.0 schema the shape tests
// check: types, enums, properties, items, references and nullable (in
// OpenAPI 3.0 a value is null only where the schema says nullable).
type aedifionSchema struct {
	Ref        string                     `json:"$ref"`
	Type       string                     `json:"type"`
	Enum       []any                      `json:"enum"`
	Nullable   bool                       `json:"nullable"`
	Properties map[string]*aedifionSchema `json:"properties"`
	Items      *aedifionSchema            `json:"items"`
}

// aedifionSchemas are the analysis schemas of aedifion's published
// OpenAPI document, copied into testdata (decisions.md 10: where api.md is
// silent, they rule).
func aedifionSchemas(t *testing.T) map[string]*aedifionSchema {
	t.Helper()
	raw, err := os.ReadFile("testdata/aedifion_analysis_schemas.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Schemas map[string]*aedifionSchema `json:"schemas"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	return doc.Schemas
}

// violations lists where v departs from the schema named name: a null
// where the schema has no nullable, a value of another type, a value
// outside an enum. Properties the schema does not list are bdp's own and
// not checked.
func violations(schemas map[string]*aedifionSchema, name string, v any) []string {
	var out []string
	var check func(s *aedifionSchema, v any, at string)
	check = func(s *aedifionSchema, v any, at string) {
		for s.Ref != "" {
			s = schemas[s.Ref[strings.LastIndex(s.Ref, "/")+1:]]
		}
		if v == nil {
			if !s.Nullable {
				out = append(out, at+" is null")
			}
			return
		}
		ok := true
		switch s.Type {
		case "string":
			_, ok = v.(string)
		case "number":
			_, ok = v.(float64)
		case "integer":
			f, isNumber := v.(float64)
			ok = isNumber && f == float64(int64(f))
		case "boolean":
			_, ok = v.(bool)
		case "object":
			var m map[string]any
			if m, ok = v.(map[string]any); ok {
				for key, prop := range s.Properties {
					if pv, present := m[key]; present {
						check(prop, pv, at+"."+key)
					}
				}
			}
		case "array":
			var items []any
			if items, ok = v.([]any); ok && s.Items != nil {
				for i, item := range items {
					check(s.Items, item, fmt.Sprintf("%s.%d", at, i))
				}
			}
		}
		if !ok {
			out = append(out, fmt.Sprintf("%s is %v, not a %s", at, v, s.Type))
		} else if len(s.Enum) > 0 && !slices.Contains(s.Enum, v) {
			out = append(out, fmt.Sprintf("%s is %q, not one of %v", at, v, s.Enum))
		}
	}
	check(&aedifionSchema{Ref: name}, v, name)
	return out
}

// Every analysis result answer, whatever its state (running, failed, a
// period without data, a summary without a value or a development without
// a percentage), and a mapped component's unmapped pin, have aedifion's
// shapes: no empty signal_color outside its enum, no null where aedifion
// has an object, a number or a string.
func TestAnalysisResultsHaveAedifionsShapes(t *testing.T) {
	schemas := aedifionSchemas(t)
	f := newAnalysisFixture(t)
	e, admin := f.e, f.c.Admin
	inst := f.createInstance(t, f.roomFns[0], f.room, false)
	results := map[string]string{}
	for name, o := range map[string]analytics.Outcome{
		"with a development": storedOutcome(ptrFloat(80), ptrFloat(100)),
		"no period before":   storedOutcome(ptrFloat(80), nil),
		"no value now":       storedOutcome(nil, ptrFloat(80)),
		"up from zero":       storedOutcome(ptrFloat(3), ptrFloat(0)),
		"period without data": {NoData: true, SignalColor: "yellow", Interpretation: tx("No data.", "Keine Daten."),
			Summary: analytics.Summary{Identifier: "energy consumption", Name: tx("energy consumption", "Energieverbrauch"), Unit: "kWh"}},
	} {
		results[name] = f.run(t, inst, analysisWeek, analysisWeek2)
		f.finish(t, results[name], o)
	}
	results["failed"] = f.run(t, inst, analysisWeek, analysisWeek2)
	e.sqlExec(`UPDATE analysis_results SET status = 'Failed', info = 'required pin co2 is not mapped', finished_at = now() WHERE id = $1::uuid`,
		results["failed"])
	results["running"] = f.run(t, inst, analysisWeek.Add(time.Hour), analysisWeek2)

	for name, id := range results {
		d := e.do("GET", f.instPath(fmt.Sprintf("/v2/analytics/instance/%d/result/%s", inst, id)), admin, nil).want(t, 200).JSON
		for _, v := range violations(schemas, "AnalysisResult", d) {
			t.Errorf("%s: %s", name, v)
		}
		if name == "failed" || name == "running" {
			if _, ok := d["signal_color"]; ok {
				t.Errorf("%s: signal_color %q, want it left out", name, d["signal_color"])
			}
		}
	}
	for i, item := range e.do("GET", f.instPath(fmt.Sprintf("/v2/analytics/instance/%d/results", inst)), admin, nil).want(t, 200).List {
		for _, v := range violations(schemas, "AnalysisResultSummary", item) {
			t.Errorf("results list item %d: %s", i, v)
		}
	}
	// The component's latest result is the running one: no summary_kpi,
	// no signal_color.
	grouped := e.do("GET", f.instPath(fmt.Sprintf("/v2/analytics/componentInProject/%d/results", f.room)), admin, nil).want(t, 200).JSON
	for i, item := range grouped["result_ids"].([]any) {
		for _, v := range violations(schemas, "AnalyticsResultsForComponentResultIds", item) {
			t.Errorf("component result %d: %s", i, v)
		}
	}

	// No pin of the fresh room is mapped.
	cip := e.do("GET", fmt.Sprintf("/v2/project/%d/componentInProject/%d", f.pid, f.room), admin, nil).want(t, 200).JSON
	for i, pin := range cip["pins"].([]any) {
		for _, v := range violations(schemas, "AssignedPin", pin) {
			t.Errorf("pin %d: %s", i, v)
		}
		if _, ok := pin.(map[string]any)["dataPointID"]; ok {
			t.Errorf("unmapped pin %d: dataPointID %v, want it left out", i, pin.(map[string]any)["dataPointID"])
		}
	}
}
