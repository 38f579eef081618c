package http

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openbdp/bdp/analytics"
	"github.com/openbdp/bdp/analytics/kpi"
)

// A result's texts say the figures its KPI list shows, in the units and
// currency asked for and rounded alike, in both languages: a real
// function's outcome per case, read in imperial and USD and in SI and EUR.
func TestAnalysisResultTextsSayWhatTheKPIsSay(t *testing.T) {
	f := newAnalysisFixture(t)
	e, admin := f.e, f.c.Admin
	e.do("PUT", "/operator/currency-rates", bearer(testOperatorToken), map[string]any{"USD": 0.8}).want(t, 200) // 1 USD = 0.8 EUR
	functions := map[string]analytics.Function{}
	for _, fn := range e.srv.components.Functions() {
		functions[fn.AlphanumericID] = fn
	}
	end := analysisWeek.Add(48 * time.Hour)
	hourly := func(value func(h int) float64) []kpi.Point {
		var pts []kpi.Point
		for h := range 48 {
			pts = append(pts, kpi.Point{Time: analysisWeek.Add(time.Duration(h) * time.Hour), Value: value(h)})
		}
		return pts
	}
	for _, tc := range []struct {
		name, function string
		cip            int64
		component      string
		series         map[string][]kpi.Point
		attributes     map[string]string
		// says are what the English text must say in imperial and USD,
		// and the German text in SI and EUR.
		saysImperial, saysSI []string
	}{
		{name: "comfort in °F", function: "thermal_comfort_analysis", cip: f.room, component: "room",
			series:       map[string][]kpi.Point{"operative_temperature": hourly(func(h int) float64 { return 21 + float64(h/24)*4 })},
			saysImperial: []string{"averaged 73.4 °F (from 69.8 °F to 77 °F)"}, saysSI: []string{"im Mittel 23 °C (von 21 °C bis 25 °C)"}},
		// 2 kW for 16 h, then 4 kW: 160 kWh, a mean of 3.33 kW (not
		// 3.3333333333333335); 0.25 EUR/kWh is 40 EUR, 50 USD.
		{name: "energy in USD", function: "energy_consumption_analysis", cip: f.hp, component: "heat_pump",
			series: map[string][]kpi.Point{"power_consumption": hourly(func(h int) float64 {
				if h < 16 {
					return 2
				}
				return 4
			})},
			attributes:   map[string]string{"energy_price": "0.25"},
			saysImperial: []string{"It cost 50 USD."}, saysSI: []string{"Sie kostete 40 EUR.", "mittleren Leistung von 3,33 kW"}},
		// 1 K from the setpoint all the time, tolerance 0.5 K and large
		// deviation 2 K: the bands in °F are 0.9 and 3.6.
		{name: "deviation bands in °F", function: "setpoint_deviation_analysis", cip: f.room, component: "room",
			series: map[string][]kpi.Point{"temperature": hourly(func(int) float64 { return 22 }),
				"temperature_setpoint": hourly(func(int) float64 { return 21 })},
			attributes:   map[string]string{"lower_deviation_tolerance": "0.5", "upper_deviation_tolerance": "0.5"},
			saysImperial: []string{"within ±0.9 °F of its setpoint for 0 %", "more than 3.6 °F for 0 %", "mean deviation was 1.8 °F"},
			saysSI:       []string{"innerhalb ±0,5 K um den Sollwert", "um mehr als 2 K ab"}},
		// On for 12 h, off for 12 h: a cycle of 24 h, of which it ran 12.
		{name: "cycle of a day", function: "operating_cycle_analysis", cip: f.hp, component: "heat_pump",
			series: map[string][]kpi.Point{"operating_message": append(hourly(func(h int) float64 {
				return float64((h / 12) % 2)
			}), kpi.Point{Time: end, Value: 1})},
			saysImperial: []string{"a cycle took 24 h from start to start", "ran for 12 h of a cycle"},
			saysSI:       []string{"dauerte ein Zyklus von Start zu Start 24 h", "lief 12 h je Zyklus"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fn := functions[tc.function]
			o, err := fn.Run(analytics.Input{Component: tc.component, Period: kpi.Period{Start: analysisWeek, End: end},
				Series: tc.series, Attributes: tc.attributes})
			if err != nil {
				t.Fatal(err)
			}
			inst := f.createInstance(t, fn.ID, tc.cip, false)
			result := f.run(t, inst, analysisWeek, end)
			f.finish(t, result, o)
			path := fmt.Sprintf("/v2/analytics/instance/%d/result/%s", inst, result)
			for _, view := range []struct {
				lang, units, currency string
				says                  []string
			}{
				{"en", "imperial", "USD", tc.saysImperial}, {"de", "imperial", "USD", nil},
				{"en", "SI", "EUR", nil}, {"de", "SI", "EUR", tc.saysSI},
			} {
				d := e.do("GET", f.instPath(path, "result_language", view.lang, "units_system", view.units, "currency_system", view.currency),
					admin, nil).want(t, 200).JSON
				texts := []string{d["interpretation"].(string)}
				for _, r := range d["recommendation"].([]any) {
					texts = append(texts, r.(string))
				}
				for _, k := range d["kpi"].([]any) {
					texts = append(texts, k.(map[string]any)["name"].(string))
				}
				all := strings.Join(texts, "\n")
				for _, want := range view.says {
					if !strings.Contains(all, want) {
						t.Errorf("%s, %s: the texts do not say %q:\n%s", view.lang, view.units, want, all)
					}
				}
				if strings.ContainsAny(all, "{}") || (view.units == "imperial" && strings.Contains(all, "°C")) ||
					(view.currency == "USD" && strings.Contains(all, "EUR")) {
					t.Errorf("%s, %s, %s: a mark, or another unit than the KPIs':\n%s", view.lang, view.units, view.currency, all)
				}
				// Each KPI the interpretation states, it states as the KPI
				// list shows it.
				for _, k := range d["kpi"].([]any) {
					k := k.(map[string]any)
					id, value, unit := k["identifier"].(string), k["value"].(float64), k["unit"].(string)
					if value != analytics.Round(value) {
						t.Errorf("%s: KPI %s is %v, not rounded", view.units, id, value)
					}
					shown := strconv.FormatFloat(value, 'f', -1, 64)
					if view.lang == "de" {
						shown = strings.Replace(shown, ".", ",", 1)
					}
					template := o.Interpretation.EN
					if view.lang == "de" {
						template = o.Interpretation.DE
					}
					if unit != "count" && strings.Contains(template, "{"+id+"}") && !strings.Contains(d["interpretation"].(string), shown+" "+unit) {
						t.Errorf("%s, %s: the interpretation does not state %s as %s %s: %s", view.lang, view.units, id, shown, unit, d["interpretation"])
					}
				}
			}
		})
	}
}
