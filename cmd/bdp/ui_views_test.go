//go:build unix

package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/openbdp/bdp/http/ui/uitest"
)

// uiViews plots two datapoints, saves them as a view, marks a favorite,
// starts over and reopens the view by its link; then reads the panel in
// German.
func uiViews(t *testing.T, e *uiEnv) {
	b := e.b
	e.goTo(t, pidHash(e.pid, ""))
	b.WaitJS(t, "datapoints listed", `document.getElementById("dp-count").textContent === "2 of 2 datapoints"`, 10*time.Second)
	b.WaitJS(t, "views panel", `document.getElementById("view-save") && document.getElementById("view-list").options.length === 1`, 5*time.Second)
	for _, id := range []string{"boiler.supply_temp", "boiler.return_temp"} {
		b.Do(t, "plot "+id, chromedp.Click(chromedp.CSS(`#dp-table tr[data-dp="`+id+`"] input[type=checkbox]`)))
	}
	b.WaitJS(t, "two series", `document.getElementById("plot").dataset.state === "ready" && document.getElementById("plot").dataset.points === "300,300"`, 20*time.Second)

	b.Do(t, "name and save the view",
		chromedp.SendKeys(chromedp.ID("view-name"), "boiler temperatures"),
		chromedp.Click(chromedp.ID("view-save")))
	b.WaitJS(t, "saved", `document.getElementById("view-status").textContent.includes("saved")`, 10*time.Second)
	link := uitest.Eval[string](t, b, `document.getElementById("view-link").value`)
	if !strings.Contains(link, fmt.Sprintf("#/project/%d/view/", e.pid)) {
		t.Fatalf("share link %q", link)
	}
	var stored []struct {
		Name       string   `json:"name"`
		Datapoints []string `json:"datapoints"`
	}
	e.api(t, "GET", fmt.Sprintf("/v2/project/%d/plot-views", e.pid), "", &stored)
	if len(stored) == 1 {
		slices.Sort(stored[0].Datapoints) // in the order they were plotted, which the two clicks do not fix
	}
	if len(stored) != 1 || stored[0].Name != "boiler temperatures" || strings.Join(stored[0].Datapoints, ",") != "boiler.return_temp,boiler.supply_temp" {
		t.Fatalf("stored views %+v", stored)
	}

	// A favorite, with the star of its row (a button a screen reader names).
	star := `#dp-table tr[data-dp="boiler.return_temp"] button.star`
	if label := uitest.Eval[string](t, b, `document.querySelector(`+uitest.JSString(star)+`).getAttribute("aria-label")`); label != "Favorite boiler.return_temp" {
		t.Errorf("star label %q", label)
	}
	b.Do(t, "star", chromedp.Click(chromedp.CSS(star)))
	b.WaitJS(t, "favorite listed", `document.querySelector('#fav-list button[data-dp="boiler.return_temp"]') !== null`, 5*time.Second)
	var favs []string
	e.api(t, "GET", fmt.Sprintf("/v2/project/%d/datapoints/favorites", e.pid), "", &favs)
	if strings.Join(favs, ",") != "boiler.return_temp" {
		t.Errorf("favorites %v", favs)
	}

	// Start over: the plot empties; the link reopens the view.
	for _, id := range []string{"boiler.supply_temp", "boiler.return_temp"} {
		b.Do(t, "unplot "+id, chromedp.Click(chromedp.CSS(`#dp-table tr[data-dp="`+id+`"] input[type=checkbox]`)))
	}
	b.WaitJS(t, "plot empty", `document.getElementById("plot").dataset.state === "empty"`, 10*time.Second)
	e.goTo(t, "#/projects")
	b.WaitJS(t, "projects", `!document.getElementById("view-projects").hidden`, 5*time.Second)
	// The projects page lists the favorites of every project.
	b.WaitJS(t, "favorites of every project", `document.querySelector('#all-fav-list a[data-dp="boiler.return_temp"]') !== null`, 5*time.Second)
	if got := e.text(t, "#all-fav-list a"); !strings.HasPrefix(got, "★ boiler.return_temp in ") {
		t.Errorf("favorite on the projects page %q", got)
	}
	// A fresh page (the token is kept for the tab) opened at the link.
	b.Do(t, "open the link", chromedp.Navigate("about:blank"), chromedp.Navigate(link))
	b.WaitJS(t, "view reopened", `document.getElementById("plot").dataset.state === "ready" && document.getElementById("plot").dataset.points === "300,300" && document.getElementById("view-status").textContent.includes("opened")`, 20*time.Second)
	if got := uitest.Eval[[]bool](t, b, `[...document.querySelectorAll("#dp-table input[type=checkbox]")].map(c => c.checked)`); len(got) != 2 || !got[0] || !got[1] {
		t.Errorf("checkboxes after reopening %v", got)
	}
	if got := uitest.Eval[string](t, b, `document.querySelector(`+uitest.JSString(star)+`).getAttribute("aria-pressed")`); got != "true" {
		t.Errorf("favorite star pressed %q", got)
	}
	b.Screenshot(t, "ui-views")

	e.setLang(t, "de")
	for css, want := range map[string]string{"#views-heading": "Gespeicherte Ansichten", "#view-save": "Ansicht aktualisieren", "#fav-heading": "Favoriten",
		".tabs a[aria-current=page]": "Datenpunkte und Diagramme"} {
		if got := e.text(t, css); got != want {
			t.Errorf("German %s = %q, want %q", css, got, want)
		}
	}
	e.setLang(t, "en")
	uiSharedView(t, e, link)
}

// uiSharedView signs in as another user of the company, whose project
// role reads boiler.supply_temp only, and opens the link: the view shows
// what that user may read, and says someone else saved it.
func uiSharedView(t *testing.T, e *uiEnv, link string) {
	b := e.b
	e.addUserWithRole(t, `{"firstName":"Bo","lastName":"Reader","email":"bo@acme.test","password":"bo-password-12"}`, "reader",
		func(_, path, tag string) bool {
			return tag == "project" && (strings.HasPrefix(path, "/v2/project/{project_id}") || path == "/v2/datapoint/timeseries")
		},
		`[{"key":"name","value":"boiler.supply_temp","read":true,"write":false}]`)

	e.signInAs(t, "bo@acme.test", "bo-password-12")
	b.Do(t, "open the shared link", chromedp.Navigate("about:blank"), chromedp.Navigate(link))
	b.WaitJS(t, "shared view opened", `document.getElementById("plot").dataset.state === "ready" && document.getElementById("view-status").textContent.includes("Someone else saved it")`, 20*time.Second)
	if got := uitest.Eval[string](t, b, `document.getElementById("plot").dataset.points`); got != "300" {
		t.Errorf("the reader's plot has %q points, want boiler.supply_temp's 300 alone", got)
	}
	if got := uitest.Eval[[]string](t, b, `[...document.querySelectorAll("#dp-table tbody tr")].map(r => r.dataset.dp)`); strings.Join(got, ",") != "boiler.supply_temp" {
		t.Errorf("the reader lists %v", got)
	}
	// Back to the admin for the other steps.
	e.signInAs(t, "ada@acme.test", "ada-password-1")
}
