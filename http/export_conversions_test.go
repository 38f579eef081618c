package http

import (
	"strings"
	"testing"
	"time"
)

// Unit and currency conversion of timeseries reads, /v2/labels/* and /operator/currency-rates.

// Each family of conversions, a units system, and prices under the
// operator's exchange rates.
func TestTimeseriesConversions(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	pid, _ := e.newProject(c.Admin)
	one := func(dp, unit string, v float64) {
		tsUpload(e, c.Admin, pid, dp, tsMinute, v)
		tsUnits(e, pid, dp, unit)
	}
	one("temp", "celsius", 20)
	one("pressure", "bar", 1)
	one("energy", "kWh", 1)
	one("power", "kW", 3.516852842066666)
	one("flow", "m3/h", 1.69901079552) // 1 cfm = 0.028316846592 m³ × 60 per hour
	one("price", "EUR/kWh", 0.3)
	one("humidity", "percent", 40)

	for _, tc := range []struct {
		dp, param, value, unit string
		want                   float64
	}{
		{"temp", "units", "fahrenheit", "fahrenheit", 68},
		{"temp", "units", "°F", "°F", 68},
		{"pressure", "units", "psi", "psi", 14.503773773020923},
		{"energy", "units", "BTU", "BTU", 3412.141633127942},
		{"power", "units", "TR", "TR", 1},
		{"power", "units", "BTU/h", "BTU/h", 12000},
		{"flow", "units", "cfm", "cfm", 1},
		{"temp", "units_system", "imperial", "fahrenheit", 68},
		{"pressure", "units_system", "imperial", "psi", 14.503773773020923},
		{"energy", "units_system", "imperial", "BTU", 3412.141633127942},
		{"flow", "units_system", "imperial", "cfm", 1},
		// Already in the system: answered unconverted, units still told.
		{"temp", "units_system", "SI", "celsius", 20},
		{"humidity", "units_system", "imperial", "percent", 40},
		{"price", "currency_system", "EUR", "EUR/kWh", 0.3},
		{"temp", "currency_system", "USD", "celsius", 20},
		// Default rates: 1 USD = 0.86 EUR.
		{"price", "currency_system", "USD", "USD/kWh", 0.3 / 0.86},
		{"price", "units", "EUR/MWh", "EUR/MWh", 300},
	} {
		r := tsGet(e, c.Admin, pid, tc.dp, tc.param, tc.value)
		got := tsData(t, r, "value")
		if len(got) != 1 || !tsNear(got[0].Value, tc.want) || r.JSON["units"] != tc.unit {
			t.Fatalf("%s %s=%s: want %v %s, got %s", tc.dp, tc.param, tc.value, tc.want, tc.unit, r.Body)
		}
	}

	// The operator changes the rates: 1 USD = 0.8 EUR.
	r := e.do("PUT", "/operator/currency-rates", bearer(testOperatorToken), map[string]any{"USD": 0.8}).want(t, 200)
	if res := r.resource(t); res["USD"] != 0.8 || res["EUR"] != 1.0 {
		t.Fatalf("rates after PUT: %s", r.Body)
	}
	r = tsGet(e, c.Admin, pid, "price", "currency_system", "USD")
	if got := tsData(t, r, "value"); !tsNear(got[0].Value, 0.375) || r.JSON["units"] != "USD/kWh" {
		t.Fatalf("EUR/kWh in USD at 0.8: %s", r.Body)
	}
	// units wins over the systems; conversion applies to aggregates but
	// not to counts.
	tsUpload(e, c.Admin, pid, "temp", func(int) time.Time { return tsMinute(1) }, 30)
	r = tsGet(e, c.Admin, pid, "temp", "samplerate", "1h", "units", "kelvin", "units_system", "imperial")
	if got := tsData(t, r, "mean"); len(got) != 1 || !tsNear(got[0].Value, 298.15) || r.JSON["units"] != "kelvin" {
		t.Fatalf("hourly mean in kelvin: %s", r.Body)
	}
	r = tsGet(e, c.Admin, pid, "temp", "samplerate", "1h", "aggregation", "count", "units", "fahrenheit")
	if got := tsData(t, r, "count"); got[0].Value != 2 {
		t.Fatalf("count converted: %s", r.Body)
	}
	r = tsGet(e, c.Admin, pid, "temp", "samplerate", "1h", "aggregation", "max", "units_system", "imperial")
	if got := tsData(t, r, "max"); !tsNear(got[0].Value, 86) {
		t.Fatalf("max in imperial: %s", r.Body)
	}
}

// 422: no units tag, unknown source unit, unknown or incompatible target.
func TestTimeseriesConversionFailures(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	pid, _ := e.newProject(c.Admin)
	tsUpload(e, c.Admin, pid, "bare", tsMinute, 1)
	tsUpload(e, c.Admin, pid, "odd", tsMinute, 1)
	tsUnits(e, pid, "odd", "furlongs")
	tsUpload(e, c.Admin, pid, "temp", tsMinute, 1)
	tsUnits(e, pid, "temp", "celsius")
	for _, tc := range []struct {
		dp, param, value string
		mention          []string
	}{
		{"bare", "units", "fahrenheit", []string{"no units tag"}},
		{"bare", "units_system", "imperial", []string{"no units tag"}},
		{"odd", "units", "celsius", []string{"furlongs", "celsius"}},
		{"odd", "units_system", "imperial", []string{"furlongs"}},
		{"temp", "units", "psi", []string{"celsius", "psi"}},
		{"temp", "units", "parsecs", []string{"celsius", "parsecs"}},
		{"temp", "units", "USD/kWh", []string{"celsius", "USD/kWh"}},
	} {
		r := tsGet(e, c.Admin, pid, tc.dp, tc.param, tc.value).wantError(t, 422)
		for _, m := range tc.mention {
			if !strings.Contains(r.JSON["error"].(string), m) {
				t.Fatalf("%s %s=%s: error does not name %q: %s", tc.dp, tc.param, tc.value, m, r.Body)
			}
		}
	}
	// An unknown system is a bad parameter value.
	for _, q := range [][]string{{"units_system", "metricish"}, {"currency_system", "XYZ"}} {
		r := tsGet(e, c.Admin, pid, "temp", q...).wantError(t, 400)
		if !strings.Contains(r.JSON["error"].(string), q[0]) {
			t.Fatalf("%v: %s", q, r.Body)
		}
	}
}

func TestLabels(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	e.do("GET", "/v2/labels/systems", nil, nil).wantError(t, 401)
	// A user without roles may use only the meta and user routes (api.md
	// 2.4, 5.4); the labels are granted like any route, by any role,
	// without a project.
	u, uid := e.newUser(c)
	systems, definitions := e.endpointID("GET", "/v2/labels/systems"), e.endpointID("GET", "/v2/labels/definitions")
	rbDenied(t, e.do("GET", "/v2/labels/systems", u, nil), systems, "GET", "/v2/labels/systems")
	rbDenied(t, e.do("GET", "/v2/labels/definitions", u, nil), definitions, "GET", "/v2/labels/definitions")
	pid, _ := e.newProject(c.Admin)
	rbAssignProjectRole(e, c.Admin, pid, rbCreateProjectRole(e, c.Admin, pid, []int32{definitions}), uid)
	rbDenied(t, e.do("GET", "/v2/labels/systems", u, nil), systems, "GET", "/v2/labels/systems")
	e.do("GET", "/v2/labels/definitions", u, nil).want(t, 200)
	rbAssignProjectRole(e, c.Admin, pid, rbCreateProjectRole(e, c.Admin, pid, []int32{systems}), uid)
	e.do("GET", "/v2/labels/systems", u, nil).want(t, 200)
	r := e.do("GET", "/v2/labels/systems", c.Admin, nil).want(t, 200)
	ids := func(key string) string {
		var out []string
		for _, s := range r.JSON[key].([]any) {
			out = append(out, s.(map[string]any)["id"].(string))
		}
		return strings.Join(out, ",")
	}
	if us, cs := ids("units_systems"), ids("currency_systems"); !strings.Contains(us, "SI") || !strings.Contains(us, "imperial") ||
		!strings.Contains(cs, "EUR") || !strings.Contains(cs, "USD") {
		t.Fatalf("systems: %s", r.Body)
	}
	r = e.do("GET", "/v2/labels/definitions", u, nil).want(t, 200)
	body := string(r.Body)
	for _, want := range []string{`"units"`, `"currencies"`, `"celsius"`, `"cfm"`, `"TR"`, `"EUR"`} {
		if !strings.Contains(body, want) {
			t.Fatalf("definitions lack %s: %.300s", want, body)
		}
	}
}

func TestCurrencyRatesOperatorAPI(t *testing.T) {
	e := newTestEnv(t)
	e.do("GET", "/operator/currency-rates", nil, nil).wantError(t, 401)
	e.do("PUT", "/operator/currency-rates", bearer("wrong"), map[string]any{"USD": 1}).wantError(t, 401)
	r := e.do("GET", "/operator/currency-rates", bearer(testOperatorToken), nil).want(t, 200)
	if res := r.resource(t); res["EUR"] != 1.0 || res["USD"] != 0.86 || len(res) != 4 {
		t.Fatalf("default rates: %s", r.Body)
	}
	for _, bad := range []any{map[string]any{"USD": 0}, map[string]any{"USD": -2}, map[string]any{"XYZ": 1},
		map[string]any{"USD": "1.1"}, []byte(`[1]`), []byte(`{"USD":`)} {
		e.do("PUT", "/operator/currency-rates", bearer(testOperatorToken), bad).wantError(t, 400)
	}
	// Symbols name currencies too; the table is keyed by code.
	r = e.do("PUT", "/operator/currency-rates", bearer(testOperatorToken), map[string]any{"£": 1.2, "CHF": 1.05}).want(t, 200)
	if res := r.resource(t); res["GBP"] != 1.2 || res["CHF"] != 1.05 || res["USD"] != 0.86 || len(res) != 4 {
		t.Fatalf("after PUT: %s", r.Body)
	}
}
