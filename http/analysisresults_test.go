package http

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/openbdp/bdp/analytics"
	"github.com/openbdp/bdp/analytics/kpi"
)

var (
	analysisWeek  = time.Date(2024, 3, 4, 0, 0, 0, 0, time.UTC)
	analysisWeek2 = analysisWeek.Add(7 * 24 * time.Hour)
)

func tx(en, de string) analytics.Text { return analytics.Text{EN: en, DE: de} }

// storedOutcome is what a runner would store for a room: units of every
// kind the conversion treats differently.
func storedOutcome(current, previous *float64) analytics.Outcome {
	return analytics.Outcome{SignalColor: "red",
		KPIs: []analytics.OutcomeKPI{
			{Identifier: "operative temperature.mean", Name: tx("mean operative temperature", "mittlere operative Temperatur"), Unit: "°C", Value: 20},
			{Identifier: "heating curve deviation.mean", Name: tx("mean deviation", "mittlere Abweichung"), Unit: "K", Value: 2},
			{Identifier: "energy consumption", Name: tx("energy consumption", "Energieverbrauch"), Unit: "kWh", Value: 100},
			{Identifier: "energy cost", Name: tx("energy cost", "Energiekosten"), Unit: "EUR", Value: 10},
			{Identifier: "operating time", Name: tx("operating time", "Betriebszeit"), Unit: "h", Value: 5},
			{Identifier: "starts", Name: tx("starts", "Starts"), Unit: "count", Value: 7},
		},
		Plots: []analytics.OutcomePlot{{Identifier: "energy", Title: tx("energy by load", "Energie nach Last"), Type: "pie_chart", Unit: "kWh",
			Categories: []string{"base load", "rest"}, Data: []analytics.PlotSeries{{Name: "energy", Values: []float64{40, 60}}}}},
		Interpretation: tx("The room was too warm.", "Der Raum war zu warm."),
		Recommendation: []analytics.Text{tx("Lower the setpoint.", "Den Sollwert senken.")},
		Summary: analytics.Summary{Identifier: "energy consumption", Name: tx("energy consumption", "Energieverbrauch"), Unit: "kWh",
			Current: current, Previous: previous},
	}
}

// finish completes a queued run the way the runner does.
func (f analysisFixture) finish(t *testing.T, result string, o analytics.Outcome) {
	t.Helper()
	raw, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	f.e.sqlExec(`UPDATE analysis_results SET status = 'Success', outcome = $2, analytics_version = 'v1.2.3', finished_at = now()
		WHERE id = $1::uuid`, result, raw)
}

func ptrFloat(v float64) *float64 { return &v }

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-6*math.Max(1, math.Abs(b)) }

// kpiOf finds a KPI of a detail by identifier.
func kpiOf(t *testing.T, detail map[string]any, id string) map[string]any {
	t.Helper()
	for _, k := range detail["kpi"].([]any) {
		if k.(map[string]any)["identifier"] == id {
			return k.(map[string]any)
		}
	}
	t.Fatalf("no KPI %s in %v", id, detail["kpi"])
	return nil
}

func TestAnalysisResultDetail(t *testing.T) {
	f := newAnalysisFixture(t)
	e, admin := f.e, f.c.Admin
	e.do("PUT", fmt.Sprintf("/v2/project/%d/componentInProject/%d", f.pid, f.room), admin, map[string]any{"display_name": "Room 1.01"}).want(t, 200)
	inst := f.createInstance(t, f.roomFns[0], f.room, true)
	result := f.run(t, inst, analysisWeek, analysisWeek2)
	f.finish(t, result, storedOutcome(ptrFloat(80), ptrFloat(100)))
	e.do("PUT", "/operator/currency-rates", bearer(testOperatorToken), map[string]any{"USD": 0.8}).want(t, 200) // 1 USD = 0.8 EUR
	path := fmt.Sprintf("/v2/analytics/instance/%d/result/%s", inst, result)
	fn, _ := e.srv.components.Function(f.roomFns[0])

	// English and the project's settings (SI, EUR) by default.
	d := e.do("GET", f.instPath(path), admin, nil).want(t, 200).JSON
	if d["status"] != "Success" || d["signal_color"] != "red" || d["interpretation"] != "The room was too warm." ||
		fmt.Sprint(d["recommendation"]) != "[Lower the setpoint.]" || d["alphanumeric_id"] != fn.AlphanumericID ||
		d["function_name"] != fn.NameEN || d["display_name"] != "Room 1.01" || d["analytics_version"] != "v1.2.3" ||
		int64(d["instance_id"].(float64)) != inst || int64(d["project_id"].(float64)) != f.pid || d["result_id"] != result ||
		d["start"] != "2024-03-04T00:00:00Z" || d["end"] != "2024-03-11T00:00:00Z" || len(d["info"].([]any)) != 0 {
		t.Fatalf("detail: %v", d)
	}
	for id, want := range map[string]struct {
		unit  string
		value float64
	}{"operative temperature.mean": {"°C", 20}, "heating curve deviation.mean": {"K", 2}, "energy consumption": {"kWh", 100},
		"energy cost": {"EUR", 10}, "operating time": {"h", 5}, "starts": {"count", 7}} {
		if k := kpiOf(t, d, id); k["unit"] != want.unit || k["value"] != want.value {
			t.Errorf("SI, EUR: %s is %v %v, want %v %s", id, k["value"], k["unit"], want.value, want.unit)
		}
	}
	if k := kpiOf(t, d, "energy cost"); k["name"] != "energy cost" {
		t.Errorf("KPI name: %v", k)
	}
	plot := d["plots"].([]any)[0].(map[string]any)
	if plot["title"] != "energy by load" || plot["type"] != "pie_chart" || plot["unit"] != "kWh" ||
		fmt.Sprint(plot["categories"]) != "[base load rest]" || fmt.Sprint(plot["data"]) != "[map[name:energy values:[40 60]]]" {
		t.Errorf("plot: %v", plot)
	}
	// 80 against 100 the week before: down 20 %.
	sum := d["summary_kpi"].(map[string]any)
	cur, dev := sum["current"].(map[string]any), sum["development"].(map[string]any)
	if cur["name"] != "energy consumption" || cur["unit"] != "kWh" || cur["value"] != 80.0 ||
		cur["time_reference"] != "2024-03-04T00:00:00Z/2024-03-11T00:00:00Z" ||
		dev["arrow"] != "down" || dev["unit"] != "%" || dev["value"] != -20.0 || dev["time_reference"] != "2024-02-26T00:00:00Z/2024-03-04T00:00:00Z" {
		t.Errorf("summary_kpi: %v", sum)
	}

	// German.
	d = e.do("GET", f.instPath(path, "result_language", "de"), admin, nil).want(t, 200).JSON
	if d["interpretation"] != "Der Raum war zu warm." || fmt.Sprint(d["recommendation"]) != "[Den Sollwert senken.]" || d["function_name"] != fn.NameDE ||
		kpiOf(t, d, "energy cost")["name"] != "Energiekosten" || d["plots"].([]any)[0].(map[string]any)["title"] != "Energie nach Last" ||
		d["summary_kpi"].(map[string]any)["current"].(map[string]any)["name"] != "Energieverbrauch" {
		t.Fatalf("German detail: %v", d)
	}

	// Imperial and USD: °C with its offset, K by the factor alone (a
	// difference), kWh to BTU, EUR to USD at the operator's rate; hours,
	// counts and the relative development stay.
	imperial := map[string]struct {
		unit  string
		value float64
	}{"operative temperature.mean": {"°F", 68}, "heating curve deviation.mean": {"°F", 3.6}, "energy consumption": {"BTU", 100 * 3412.141633},
		"energy cost": {"USD", 12.5}, "operating time": {"h", 5}, "starts": {"count", 7}}
	check := func(name string, d map[string]any) {
		t.Helper()
		for id, want := range imperial {
			if k := kpiOf(t, d, id); k["unit"] != want.unit || !near(k["value"].(float64), want.value) {
				t.Errorf("%s: %s is %v %v, want %v %s", name, id, k["value"], k["unit"], want.value, want.unit)
			}
		}
		plot := d["plots"].([]any)[0].(map[string]any)
		values := plot["data"].([]any)[0].(map[string]any)["values"].([]any)
		if plot["unit"] != "BTU" || !near(values[0].(float64), 40*3412.141633) || !near(values[1].(float64), 60*3412.141633) {
			t.Errorf("%s: plot %v", name, plot)
		}
		sum := d["summary_kpi"].(map[string]any)
		cur, dev := sum["current"].(map[string]any), sum["development"].(map[string]any)
		if cur["unit"] != "BTU" || !near(cur["value"].(float64), 80*3412.141633) || dev["value"] != -20.0 || dev["unit"] != "%" {
			t.Errorf("%s: summary %v", name, sum)
		}
	}
	check("query", e.do("GET", f.instPath(path, "units_system", "imperial", "currency_system", "USD"), admin, nil).want(t, 200).JSON)
	// The same from the project's settings, and the query wins over them.
	e.do("PUT", fmt.Sprintf("/operator/projects/%d/settings", f.pid), bearer(testOperatorToken),
		map[string]any{"units_system": "imperial", "currency_system": "USD"}).want(t, 200)
	check("project settings", e.do("GET", f.instPath(path), admin, nil).want(t, 200).JSON)
	d = e.do("GET", f.instPath(path, "units_system", "SI", "currency_system", "EUR"), admin, nil).want(t, 200).JSON
	if k := kpiOf(t, d, "operative temperature.mean"); k["unit"] != "°C" || k["value"] != 20.0 {
		t.Errorf("SI asked for over imperial settings: %v", k)
	}
	// A currency without a rate cannot be shown: 422 naming it.
	e.sqlExec(`DELETE FROM currency_rates WHERE code = 'GBP'`)
	r := e.do("GET", f.instPath(path, "currency_system", "GBP"), admin, nil).wantError(t, 422)
	if !strings.Contains(r.JSON["error"].(string), "GBP") {
		t.Errorf("422 must name the currency: %s", r.Body)
	}
}

// Summaries without a previous value, a period without data and a failed
// run: never NaN, never a 500.
func TestAnalysisResultEdgeCases(t *testing.T) {
	f := newAnalysisFixture(t)
	e, admin := f.e, f.c.Admin
	inst := f.createInstance(t, f.roomFns[0], f.room, false)
	get := func(result string, query ...string) map[string]any {
		t.Helper()
		return e.do("GET", f.instPath(fmt.Sprintf("/v2/analytics/instance/%d/result/%s", inst, result), query...), admin, nil).want(t, 200).JSON
	}
	for _, tc := range []struct {
		name              string
		current, previous *float64
		arrow             string
		development       any // nil: no development at all
	}{
		{"no period before", ptrFloat(80), nil, "", nil},
		{"no value now", nil, ptrFloat(80), "", nil},
		{"steady", ptrFloat(100.5), ptrFloat(100), "right", 0.5},
		{"up", ptrFloat(150), ptrFloat(100), "up", 50.0},
		{"from zero", ptrFloat(3), ptrFloat(0), "up", "null"},
		{"zero to zero", ptrFloat(0), ptrFloat(0), "right", 0.0},
		{"negative before", ptrFloat(-50), ptrFloat(-100), "up", 50.0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			result := f.run(t, inst, analysisWeek, analysisWeek2)
			f.finish(t, result, storedOutcome(tc.current, tc.previous))
			sum := get(result)["summary_kpi"].(map[string]any)
			cur := sum["current"].(map[string]any)
			if (tc.current == nil) != (cur["value"] == nil) {
				t.Fatalf("current: %v", cur)
			}
			dev, _ := sum["development"].(map[string]any)
			switch {
			case tc.development == nil:
				if sum["development"] != nil {
					t.Fatalf("development without two values: %v", sum)
				}
			case tc.development == "null":
				if dev["arrow"] != tc.arrow || dev["value"] != nil {
					t.Fatalf("development: %v", dev)
				}
			default:
				if dev["arrow"] != tc.arrow || !near(dev["value"].(float64), tc.development.(float64)) {
					t.Fatalf("development %v, want %v %v", dev, tc.arrow, tc.development)
				}
			}
		})
	}

	// A period without data: the run succeeded and says so.
	empty := f.run(t, inst, analysisWeek, analysisWeek2)
	f.finish(t, empty, analytics.Outcome{NoData: true, SignalColor: "yellow", Interpretation: tx("No data in the period.", "Keine Daten im Zeitraum."),
		Summary: analytics.Summary{Identifier: "energy consumption", Name: tx("energy consumption", "Energieverbrauch"), Unit: "kWh"}})
	d := get(empty)
	if d["status"] != "Success" || d["signal_color"] != "yellow" || d["interpretation"] != "No data in the period." || len(d["kpi"].([]any)) != 0 ||
		len(d["plots"].([]any)) != 0 || d["summary_kpi"].(map[string]any)["current"].(map[string]any)["value"] != nil ||
		d["summary_kpi"].(map[string]any)["development"] != nil {
		t.Fatalf("no-data result: %v", d)
	}

	// A failed run: its reason in info and in the interpretation.
	failed := f.run(t, inst, analysisWeek, analysisWeek2)
	e.sqlExec(`UPDATE analysis_results SET status = 'Failed', info = 'required pin co2 is not mapped', finished_at = now() WHERE id = $1::uuid`, failed)
	d = get(failed, "result_language", "de")
	if d["status"] != "Failed" || fmt.Sprint(d["info"]) != "[required pin co2 is not mapped]" || d["signal_color"] != nil ||
		d["interpretation"] != "Die Analyse ist fehlgeschlagen: required pin co2 is not mapped" || len(d["kpi"].([]any)) != 0 || d["summary_kpi"] != nil {
		t.Fatalf("failed result: %v", d)
	}
	list := e.do("GET", f.instPath(fmt.Sprintf("/v2/analytics/instance/%d/results", inst)), admin, nil).want(t, 200).List
	if len(list) != 9 {
		t.Fatalf("%d results listed, want 9", len(list))
	}
	for _, item := range list {
		m := item.(map[string]any)
		in := m["input_parameters"].(map[string]any)
		if in["start"] != "2024-03-04T00:00:00Z" || in["end"] != "2024-03-11T00:00:00Z" || m["weekly"] != false {
			t.Fatalf("list item: %v", m)
		}
		if m["result_id"] == failed && (m["status"] != "Failed" || m["signal_color"] != nil || !strings.HasPrefix(m["interpretation"].(string), "The analysis failed")) {
			t.Fatalf("failed item: %v", m)
		}
		if m["result_id"] == empty && (m["signal_color"] != "yellow" || m["interpretation"] != "No data in the period.") {
			t.Fatalf("no-data item: %v", m)
		}
	}
}

// The grouped routes: componentsInProject (latest result per instance,
// components without results left out), componentInProject/{id}/results
// and results (every instance, null without a result).
func TestAnalyticsResultsGroupedByComponent(t *testing.T) {
	f := newAnalysisFixture(t)
	e, admin := f.e, f.c.Admin
	air := f.createInstance(t, f.roomFns[0], f.room, true)
	comfort := f.createInstance(t, f.roomFns[1], f.room, false)
	idle := f.createInstance(t, f.notRoom, f.hp, false) // no result: the heat pump is left out of componentsInProject
	f.create(t, admin, "fan")                           // no instance: left out everywhere

	old := f.run(t, air, analysisWeek.Add(-7*24*time.Hour), analysisWeek)
	f.finish(t, old, storedOutcome(ptrFloat(1), nil))
	latest := f.run(t, air, analysisWeek, analysisWeek2)
	o := storedOutcome(ptrFloat(80), ptrFloat(100))
	o.SignalColor = "yellow"
	f.finish(t, latest, o)
	// An older period queued later is not the latest.
	f.run(t, air, analysisWeek.Add(-14*24*time.Hour), analysisWeek.Add(-7*24*time.Hour))
	comfortRun := f.run(t, comfort, analysisWeek, analysisWeek2) // still running

	r := e.do("GET", f.instPath("/v2/analytics/componentsInProject", "language", "de"), admin, nil).want(t, 200)
	items := r.JSON["items"].([]any)
	if len(items) != 1 || r.JSON["meta"].(map[string]any)["total_items"] != 1.0 {
		t.Fatalf("componentsInProject: %s", r.Body)
	}
	room := items[0].(map[string]any)
	results := room["result_ids"].([]any)
	if int64(room["componentinproject_id"].(float64)) != f.room || room["display_name"] != "room 1" || room["signal_color"] != "yellow" || len(results) != 2 {
		t.Fatalf("room: %v", room)
	}
	first, second := results[0].(map[string]any), results[1].(map[string]any)
	fn, _ := e.srv.components.Function(f.roomFns[0])
	if first["result_id"] != latest || int64(first["instance_id"].(float64)) != air || first["function_name"] != fn.NameDE ||
		int64(first["analysis_function_id"].(float64)) != f.roomFns[0] || first["alphanumeric_id"] != fn.AlphanumericID ||
		first["signal_color"] != "yellow" || first["interpretation"] != "Der Raum war zu warm." || first["status"] != "Success" ||
		first["summary_kpi"].(map[string]any)["development"].(map[string]any)["value"] != -20.0 {
		t.Fatalf("latest result of the air instance: %v", first)
	}
	if second["result_id"] != comfortRun || second["status"] != "running" || second["summary_kpi"] != nil || second["signal_color"] != nil {
		t.Fatalf("latest result of the comfort instance: %v", second)
	}
	// Units convert here too.
	r = e.do("GET", f.instPath("/v2/analytics/componentsInProject", "units_system", "imperial"), admin, nil).want(t, 200)
	if cur := r.JSON["items"].([]any)[0].(map[string]any)["result_ids"].([]any)[0].(map[string]any)["summary_kpi"].(map[string]any)["current"].(map[string]any); cur["unit"] != "BTU" {
		t.Fatalf("imperial summary: %v", cur)
	}
	if r := e.do("GET", f.instPath("/v2/analytics/componentsInProject", "page", "2", "per_page", "1"), admin, nil).want(t, 200); len(r.JSON["items"].([]any)) != 0 ||
		r.JSON["meta"].(map[string]any)["total_pages"] != 1.0 {
		t.Fatalf("page 2: %s", r.Body)
	}

	c := e.do("GET", f.instPath(fmt.Sprintf("/v2/analytics/componentInProject/%d/results", f.room)), admin, nil).want(t, 200).JSON
	cip := c["component_in_project"].(map[string]any)
	if int64(cip["id"].(float64)) != f.room || cip["component"].(map[string]any)["alphanumeric_id"] != "room" || c["signal_color"] != "yellow" ||
		len(c["result_ids"].([]any)) != 2 {
		t.Fatalf("component results: %v", c)
	}
	instances := c["instances"].([]any)
	if len(instances) != 2 || fmt.Sprint(instances[1].(map[string]any)["result_ids"]) != fmt.Sprint([]any{comfortRun}) {
		t.Fatalf("instances with their result ids: %v", instances)
	}
	if got := instances[0].(map[string]any)["result_ids"].([]any); len(got) != 3 || got[0] != latest || got[1] != old {
		t.Fatalf("result ids of the air instance, newest period first: %v", got)
	}
	hp := e.do("GET", f.instPath(fmt.Sprintf("/v2/analytics/componentInProject/%d/results", f.hp)), admin, nil).want(t, 200).JSON
	if hp["signal_color"] != "grey" || len(hp["result_ids"].([]any)) != 0 || len(hp["instances"].([]any)) != 1 {
		t.Fatalf("component with an instance without results: %v", hp)
	}

	all := e.do("GET", f.instPath("/v2/analytics/results"), admin, nil).want(t, 200).JSON
	groups := all["items"].([]any)
	if len(groups) != 2 || all["meta"].(map[string]any)["total_items"] != 2.0 {
		t.Fatalf("results: %v", all)
	}
	roomGroup, hpGroup := groups[0].(map[string]any), groups[1].(map[string]any)
	roomInstances := roomGroup["instances"].([]any)
	if int64(roomGroup["componentinproject_id"].(float64)) != f.room || len(roomInstances) != 2 ||
		roomInstances[0].(map[string]any)["latest_result"].(map[string]any)["result_id"] != latest ||
		roomInstances[1].(map[string]any)["latest_result"].(map[string]any)["status"] != "running" {
		t.Fatalf("room group: %v", roomGroup)
	}
	hpInstances := hpGroup["instances"].([]any)
	if int64(hpGroup["componentinproject_id"].(float64)) != f.hp || hpGroup["signal_color"] != "grey" || len(hpInstances) != 1 ||
		int64(hpInstances[0].(map[string]any)["instance"].(map[string]any)["id"].(float64)) != idle ||
		hpInstances[0].(map[string]any)["latest_result"] != nil {
		t.Fatalf("heat pump group: %v", hpGroup)
	}
}

// A real function's outcome (thermal comfort over two days with a known
// temperature) renders in both languages and in imperial units.
func TestAnalysisResultOfARealFunction(t *testing.T) {
	f := newAnalysisFixture(t)
	e, admin := f.e, f.c.Admin
	var comfort analytics.Function
	for _, fn := range e.srv.components.Functions() {
		if fn.AlphanumericID == "thermal_comfort_analysis" {
			comfort = fn
		}
	}
	// 21 °C for a day, then 25 °C: the mean is 23 °C, 73.4 °F.
	var series []kpi.Point
	for h := range 48 {
		v := 21.0
		if h >= 24 {
			v = 25
		}
		series = append(series, kpi.Point{Time: analysisWeek.Add(time.Duration(h) * time.Hour), Value: v})
	}
	end := analysisWeek.Add(48 * time.Hour)
	o, err := comfort.Run(analytics.Input{Component: "room", Period: kpi.Period{Start: analysisWeek, End: end},
		Series: map[string][]kpi.Point{"operative_temperature": series}})
	if err != nil {
		t.Fatal(err)
	}
	analytics.SetSummaryPrevious(&o, o) // the same two days before: no change
	inst := f.createInstance(t, comfort.ID, f.room, false)
	result := f.run(t, inst, analysisWeek, end)
	f.finish(t, result, o)
	path := f.instPath(fmt.Sprintf("/v2/analytics/instance/%d/result/%s", inst, result), "result_language", "de", "units_system", "imperial")
	d := e.do("GET", path, admin, nil).want(t, 200).JSON
	// The interpretation states the mean as the KPI list does: in °F, in
	// German.
	if !strings.Contains(d["interpretation"].(string), "im Mittel 73,4 °F") || d["function_name"] != comfort.NameDE || len(d["kpi"].([]any)) != len(o.KPIs) ||
		len(d["plots"].([]any)) != len(o.Plots) || len(d["recommendation"].([]any)) != len(o.Recommendation) || d["signal_color"] != o.SignalColor {
		t.Fatalf("detail of a thermal comfort outcome %+v: %v", o, d)
	}
	if k := kpiOf(t, d, "operative temperature.mean"); k["unit"] != "°F" || !near(k["value"].(float64), 73.4) {
		t.Errorf("mean operative temperature: %v", k)
	}
	if k := kpiOf(t, d, "thermal comfort.categoryI"); k["unit"] != "h" {
		t.Errorf("hours stay hours: %v", k)
	}
	dev := d["summary_kpi"].(map[string]any)["development"]
	if o.Summary.Current == nil || dev == nil || dev.(map[string]any)["arrow"] != "right" || dev.(map[string]any)["value"] != 0.0 {
		t.Errorf("summary against an equal period: %v", d["summary_kpi"])
	}
}
