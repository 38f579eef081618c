//go:build unix

package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/openbdp/bdp/http/ui/uitest"
)

// uiAnalytics maps a pump with an operating message into the project and
// then, in the browser, makes an operating-cycle instance with the page's
// form, sees the component with its mapping, runs
// the instance over the last week, opens the result and finds its KPIs,
// signal colour, interpretation, recommendations, pie and bar chart, in
// English and in German.
func uiAnalytics(t *testing.T, e *uiEnv) {
	b := e.b
	// On for an hour, off for two, over five days before today.
	day := time.Now().UTC().Truncate(24 * time.Hour)
	var obs []string
	for m := 0; m < 5*24*60; m += 30 {
		tm := day.Add(-6 * 24 * time.Hour).Add(time.Duration(m) * time.Minute)
		v := 0
		if (m/60)%3 == 0 {
			v = 1
		}
		obs = append(obs, fmt.Sprintf(`{"time":%q,"value":%d}`, tm.Format(time.RFC3339), v))
	}
	e.api(t, "POST", fmt.Sprintf("/v2/project/%d/timeseries", e.pid), `{"pump.operating":[`+strings.Join(obs, ",")+`]}`, nil)

	var comps []catalogEntry
	e.api(t, "GET", "/v2/components", "", &comps)
	pump := idByAlphanumeric(t, comps, "pump")
	var cip struct {
		Resource struct {
			ID   int64          `json:"id"`
			Pins []catalogEntry `json:"pins"`
		} `json:"resource"`
	}
	e.api(t, "POST", fmt.Sprintf("/v2/project/%d/componentInProject", e.pid), fmt.Sprintf(`{"component_id":%d,"display_name":"Heating pump"}`, pump), &cip)
	pin := idByAlphanumeric(t, cip.Resource.Pins, "operating_message")
	e.api(t, "POST", fmt.Sprintf("/v2/project/%d/componentInProject/pin/datapoint", e.pid),
		fmt.Sprintf(`{"componentinproject_id":%d,"pin_id":%d,"dataPointID":"pump.operating"}`, cip.Resource.ID, pin), nil)
	var fns []catalogEntry
	e.api(t, "GET", "/v2/analytics/functions?component_alphanumeric_id=pump", "", &fns)
	fn := idByAlphanumeric(t, fns, "operating_cycle_analysis")
	// The analytics page, reached by the project's page links.
	e.goTo(t, pidHash(e.pid, ""))
	b.Do(t, "analytics tab", chromedp.Click(chromedp.CSS(`#view-project .tabs a[href$="/analytics"]`)))
	// The instance made with the page's form: the function offered for
	// the pump, a name, no weekly runs.
	b.WaitJS(t, "new instance form", `!document.getElementById("inst-new").hidden && document.querySelector('#inst-new-fn option[value="`+fmt.Sprint(fn)+`"]') !== null`, 10*time.Second)
	b.Do(t, "new instance",
		chromedp.SetValue(chromedp.ID("inst-new-fn"), fmt.Sprint(fn)),
		chromedp.SendKeys(chromedp.ID("inst-new-name"), "pump cycles"),
		chromedp.Click(chromedp.ID("inst-new-go")))
	b.WaitJS(t, "instance listed", `document.querySelector("#inst-list tr[data-instance]") !== null && document.getElementById("inst-status").textContent.includes("pump cycles")`, 10*time.Second)
	row := `#inst-list tr[data-instance="` + uitest.Eval[string](t, b, `document.querySelector("#inst-list tr[data-instance]").dataset.instance`) + `"]`
	if got := e.text(t, row+" th"); got != "pump cycles" {
		t.Errorf("instance row %q", got)
	}
	if got := e.text(t, fmt.Sprintf(`#cip-list tr[data-cip="%d"]`, cip.Resource.ID)); !strings.Contains(got, "Heating pump") || !strings.Contains(got, "pump.operating") {
		t.Errorf("component row %q lacks its name and mapped datapoint", got)
	}
	// By keyboard: Enter on the run button, then on the result's link.
	b.Do(t, "run over the last week", chromedp.Focus(chromedp.CSS(row+` form.run button[type=submit]`)), chromedp.KeyEvent("\r"))
	b.WaitJS(t, "run finished", `document.querySelector('#results-list tr[data-status="Success"]') !== null`, 60*time.Second)
	if got := e.text(t, "#inst-status"); !strings.Contains(got, "finished: Success") {
		t.Errorf("status line %q", got)
	}
	b.Do(t, "open the result", chromedp.Focus(chromedp.CSS(`#results-list tr[data-status="Success"] a`)), chromedp.KeyEvent("\r"))
	b.WaitJS(t, "result shown", `document.getElementById("result-body").dataset.state === "ready"`, 10*time.Second)

	checks := func(lang string) {
		t.Helper()
		if n := uitest.Eval[int](t, b, `document.querySelectorAll("#result-kpis tbody tr").length`); n < 4 {
			t.Errorf("%s: %d KPIs shown", lang, n)
		}
		if got := uitest.Eval[[]string](t, b, `[...document.querySelectorAll("#result-body figure")].map(f => f.dataset.type)`); strings.Join(got, ",") != "pie_chart,bar_chart" {
			t.Errorf("%s: charts %v, want a pie and a bar chart", lang, got)
		}
		if n := uitest.Eval[int](t, b, `document.querySelectorAll("#result-body figure[data-type=pie_chart] svg path, #result-body figure[data-type=pie_chart] svg circle").length`); n < 2 {
			t.Errorf("%s: the pie has %d slices", lang, n)
		}
		if n := uitest.Eval[int](t, b, `document.querySelectorAll("#result-body figure[data-type=bar_chart] svg rect[data-category]").length`); n < 10 {
			t.Errorf("%s: the bar chart has %d bars", lang, n)
		}
		if got := uitest.Eval[string](t, b, `document.querySelector("#result-body .signal").dataset.signal`); got != "green" && got != "yellow" && got != "red" {
			t.Errorf("%s: signal colour %q", lang, got)
		}
	}
	checks("en")
	heading := e.text(t, "#result-heading")
	if !strings.Contains(heading, "Operating Cycle Analysis") || !strings.Contains(heading, "Heating pump") {
		t.Errorf("result heading %q", heading)
	}
	interp := e.text(t, "#result-body h3 + p")
	b.Screenshot(t, "ui-analysis")

	e.setLang(t, "de")
	b.WaitJS(t, "German result", `document.getElementById("result-heading").textContent.includes("Taktanalyse") && document.getElementById("result-body").dataset.state === "ready"`, 10*time.Second)
	checks("de")
	if got := e.text(t, "#result-body h3"); got != "Interpretation" {
		t.Errorf("German heading %q", got)
	}
	if got := e.text(t, "#result-body h3 + p"); got == interp {
		t.Errorf("the interpretation was not translated: %q", got)
	}
	b.Screenshot(t, "ui-analysis-de")
	e.setLang(t, "en")
}

// catalogEntry is an item of a catalog the API lists (components, their
// pins, analysis functions): its id and alphanumeric id.
type catalogEntry struct {
	ID             int64  `json:"id"`
	AlphanumericID string `json:"alphanumeric_id"`
}

// idByAlphanumeric is the id of the entry with the alphanumeric id; the
// test stops when there is none.
func idByAlphanumeric(t *testing.T, entries []catalogEntry, alphanumeric string) int64 {
	t.Helper()
	for _, e := range entries {
		if e.AlphanumericID == alphanumeric {
			return e.ID
		}
	}
	t.Fatalf("no %q among %d entries", alphanumeric, len(entries))
	return 0
}
