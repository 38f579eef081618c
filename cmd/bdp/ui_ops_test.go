//go:build unix

package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/openbdp/bdp/http/ui"
	"github.com/openbdp/bdp/http/ui/uitest"
)

// The browser UI's operations against a real `bdp serve` with a simulated
// edge device: live values arriving over MQTT over WebSocket after HTTP
// uploads (timed from the upload to the drawn plot), a virtual datapoint
// made with the form (a bad formula shown at its field), run, and its
// output plotted beside its source; a setpoint's bounds, a dry run's
// priority array and an acked write's stages; a controls app's page; and
// a read-only user who sees no write action.
func TestBrowserUIOperations(t *testing.T) {
	if !ui.Available() {
		t.Fatal("the UI assets are not embedded: run `make ui`, then rerun the tests")
	}
	srv := startServe(t, newDataDir(t), "BDP_EDGE_SIMULATOR=1")
	const email, password = "ops@acme.test", "ops-password-1"
	pid := companyProject(t, srv, "acme", email, password)
	auth := basicAuth(email, password)
	if status, b := srv.request("PUT", fmt.Sprintf("/operator/projects/%d/settings", pid), operator, `{"setpoint_writing_enabled":true}`); status != 200 {
		t.Fatalf("enable setpoint writing: %d %s", status, b)
	}
	end := time.Now().UTC().Truncate(time.Second).Add(-time.Minute)
	temp := uiSeries{id: "room.temp", unit: "celsius", n: 120, step: time.Minute, f: func(i int) float64 { return 20 + float64(i%10)/10 }}
	temp.upload(t, srv, pid, auth, end)
	upload := func(id string, at time.Time, v float64) {
		t.Helper()
		body := fmt.Sprintf(`{%q:[{"time":%q,"value":%g}]}`, id, at.UTC().Format(time.RFC3339Nano), v)
		if status, b := srv.request("POST", fmt.Sprintf("/v2/project/%d/timeseries", pid), auth, body); status != 200 {
			t.Fatalf("upload %s: %d %s", id, status, b)
		}
	}

	b := uitest.NewBrowser(t, 4*time.Minute)
	signIn := func(email, password string) {
		t.Helper()
		b.Do(t, "sign in "+email,
			chromedp.Navigate(srv.base+"/ui/"),
			chromedp.WaitVisible(chromedp.ID("signin-form")),
			chromedp.SendKeys(chromedp.ID("email"), email),
			chromedp.SendKeys(chromedp.ID("password"), password),
			chromedp.Click(chromedp.CSS("#signin-form button[type=submit]")),
		)
		b.WaitJS(t, "signed in", `!document.getElementById("signout").hidden`, 10*time.Second)
	}
	hash := func(h string) {
		t.Helper()
		b.Do(t, "go to "+h, chromedp.Evaluate[chromedp.Void](`location.hash = `+uitest.JSString(h)))
	}
	js := uitest.JSString

	// Live values: plot the temperature, upload, see it drawn.
	signIn(email, password)
	hash(fmt.Sprintf("#/project/%d", pid))
	row := `#dp-table tr[data-dp="room.temp"]`
	b.WaitJS(t, "the datapoint listed", `document.querySelector(`+js(row)+`)`, 10*time.Second)
	b.Do(t, "plot it", chromedp.Click(chromedp.CSS(row+" input[type=checkbox]")))
	b.WaitJS(t, "plotted", `document.getElementById("plot").dataset.state === "ready"`, 20*time.Second)
	b.WaitJS(t, "live values on", `document.getElementById("live-status").dataset.state === "liveOn" &&
		(document.getElementById("live-status").dataset.subscribed || "").split("\n").includes("project/`+fmt.Sprint(pid)+`/datapoint/room.temp")`, 15*time.Second)
	var sent, answered []time.Duration
	const lives = 100
	for i := range lives {
		v := 30 + float64(i)/20
		at := time.Now()
		t0 := time.Now()
		upload("room.temp", at, v)
		t1 := time.Now()
		b.WaitJS(t, fmt.Sprintf("live value %g drawn", v), `(() => { const d = document.getElementById("plot").dataset.liveDrawn;
			return d && JSON.parse(d).value === `+fmt.Sprint(v)+`; })()`, 5*time.Second)
		var drawn struct {
			At int64 `json:"at"`
		}
		if err := json.Unmarshal([]byte(uitest.Eval[string](t, b, `document.getElementById("plot").dataset.liveDrawn`)), &drawn); err != nil {
			t.Fatal(err)
		}
		d := time.UnixMilli(drawn.At)
		sent = append(sent, d.Sub(t0))
		answered = append(answered, d.Sub(t1))
		time.Sleep(20 * time.Millisecond)
	}
	if got := uitest.Eval[string](t, b, `document.querySelector(`+js(row)+`).dataset.live`); got != fmt.Sprint(30+float64(lives-1)/20) {
		t.Errorf("the list's newest value %q, want the last live value %g", got, 30+float64(lives-1)/20)
	}
	slices.Sort(sent)
	slices.Sort(answered)
	p99 := sent[(len(sent)*99+99)/100-1] // nearest rank
	t.Logf("live value, HTTP upload sent -> drawn: median %s, p99 %s, max %s; upload answered (stored) -> drawn: median %s, max %s (%d values)",
		sent[len(sent)/2], p99, sent[len(sent)-1], answered[len(answered)/2], answered[len(answered)-1], len(sent))
	if p99 > time.Second {
		t.Errorf("live value stored -> drawn p99 %s, want at most 1 s", p99)
	}
	b.Screenshot(t, "ui-live")

	// A virtual datapoint: a bad formula is shown at its field; then made,
	// run, fed, and its output plotted beside its source.
	hash(fmt.Sprintf("#/project/%d/vdp/new", pid))
	b.WaitJS(t, "the form", `document.querySelector("#vdp-form [name=formula]")`, 10*time.Second)
	setValue := func(sel, v string) {
		t.Helper()
		b.Do(t, "fill "+sel, chromedp.Evaluate[chromedp.Void](`(() => { const e = document.querySelector(`+js(sel)+`); e.value = `+js(v)+
			`; e.dispatchEvent(new Event("input")); e.dispatchEvent(new Event("change")); })()`))
	}
	// Every control of the form has a label a screen reader announces.
	unlabelled := func(root string) []string {
		t.Helper()
		return uitest.Eval[[]string](t, b, `[...document.querySelectorAll(`+js(root+" input, "+root+" select, "+root+" textarea, "+root+" button")+`)]
			.filter(e => !(e.labels && e.labels.length) && !e.getAttribute("aria-label") && !(e.tagName === "BUTTON" && e.textContent.trim()))
			.map(e => e.outerHTML.slice(0, 80))`)
	}
	if u := unlabelled("#vdp-form"); len(u) > 0 {
		t.Errorf("controls without a label: %q", u)
	}
	setValue("#vdp-form [name=dataPointID]", "room.temp_f")
	setValue(`#vdp-form fieldset[data-pin="P1"] [name=source]`, "room.temp")
	setValue("#vdp-form [name=formula]", "P1 * 9 / 5 + ;")
	b.Do(t, "create", chromedp.Click(chromedp.CSS("#vdp-form button[type=submit]")))
	b.WaitJS(t, "the formula's error at its field", `(() => { const f = document.querySelector("#vdp-form [name=formula]");
		const e = document.getElementById(f.getAttribute("aria-describedby") || "none");
		return f.getAttribute("aria-invalid") === "true" && e && e.textContent.includes("config.parameters.formula") && document.activeElement === f; })()`, 10*time.Second)
	setValue("#vdp-form [name=formula]", "P1 * 9 / 5 + 32;")
	b.Do(t, "create", chromedp.Click(chromedp.CSS("#vdp-form button[type=submit]")))
	b.WaitJS(t, "its page", `document.getElementById("vdp-detail-heading") && document.getElementById("vdp-detail-heading").textContent === "room.temp_f"`, 10*time.Second)
	b.WaitJS(t, "ready to start", `document.getElementById("vdp-status").dataset.code === "102"`, 10*time.Second)
	b.Do(t, "run", chromedp.Click(chromedp.ID("vdp-run")))
	b.WaitJS(t, "running", `document.getElementById("vdp-status").dataset.code === "202"`, 20*time.Second)
	for i := range 5 {
		upload("room.temp", time.Now(), 21+float64(i))
		time.Sleep(200 * time.Millisecond)
	}
	b.WaitJS(t, "the output plotted beside its source", `(() => { const p = document.getElementById("vdp-plot");
		if (p.dataset.state !== "ready") return false; const n = p.dataset.points.split(",").map(Number); return n[0] >= 5 && n[1] >= 50; })()`, 20*time.Second)
	if logs := uitest.Eval[string](t, b, `document.getElementById("vdp-logs").textContent`); !strings.Contains(logs, "Running") {
		t.Errorf("the log does not show the start: %q", logs)
	}
	// A recompute of the last day (the form's default) fills in the output
	// over the source's history; the page follows its log.
	b.Do(t, "recompute", chromedp.Click(chromedp.CSS("#vdp-recompute button[type=submit]")))
	b.WaitJS(t, "recompute finished", `document.getElementById("vdp-logs").textContent.includes("finished")`, 30*time.Second)
	b.WaitJS(t, "the output over the hour", `(() => { const p = document.getElementById("vdp-plot");
		return p.dataset.state === "ready" && Number(p.dataset.points.split(",")[0]) >= 50; })()`, 20*time.Second)
	b.Screenshot(t, "ui-vdp")

	// A setpoint: bounds, a dry run's priority array, an acked write's
	// stages up to written.
	hash(fmt.Sprintf("#/project/%d/setpoints", pid))
	b.WaitJS(t, "the edge device online", `document.getElementById("sp-edge") && document.getElementById("sp-edge").dataset.online === "true"`, 40*time.Second)
	setValue("#sp-choose [name=dp]", "boiler.sp")
	b.Do(t, "open boiler.sp", chromedp.Click(chromedp.CSS("#sp-choose button[type=submit]")))
	b.WaitJS(t, "no bounds yet", `document.getElementById("sp-bounds-now").textContent.includes("no bounds")`, 10*time.Second)
	setValue("#sp-bounds [name=min]", "20")
	setValue("#sp-bounds [name=max]", "70")
	b.Do(t, "save bounds", chromedp.Click(chromedp.CSS("#sp-bounds button[type=submit]")))
	b.WaitJS(t, "bounds shown", `document.getElementById("sp-bounds-now").dataset.max === "70"`, 10*time.Second)
	setValue("#sp-write [name=value]", "55")
	b.Do(t, "dry run", chromedp.Click(chromedp.ID("sp-dryrun")))
	b.WaitJS(t, "the priority array previewed", `document.getElementById("sp-preview").dataset.state === "ready" &&
		document.querySelectorAll("#sp-preview tbody td").length === 17 && document.querySelector("#sp-preview td.chosen").textContent.includes("55")`, 40*time.Second)
	b.Do(t, "write", chromedp.Click(chromedp.ID("sp-submit")))
	b.WaitJS(t, "written", `document.getElementById("sp-op").dataset.state === "written"`, 40*time.Second)
	stages := uitest.Eval[[]string](t, b, `[...document.querySelectorAll("#sp-stages li")].map(l => l.dataset.status)`)
	if !slices.Equal(stages, []string{"initialized", "requested", "written"}) {
		t.Errorf("stages %q, want initialized, requested, written", stages)
	}
	b.Screenshot(t, "ui-setpoint")
	if u := unlabelled("#view-setpoints"); len(u) > 0 {
		t.Errorf("controls without a label: %q", u)
	}

	// A controls app: a schedule on a room whose setpoint pin is
	// boiler.sp, made with the form, run, its writes in its log.
	mapRoom(t, srv, auth, pid, "boiler.sp")
	hash(fmt.Sprintf("#/project/%d/apps", pid))
	b.WaitJS(t, "apps page", `document.getElementById("apps-count") && document.getElementById("apps-count").textContent === "0 controls apps"`, 10*time.Second)
	b.Do(t, "new app", chromedp.Click(chromedp.ID("apps-new")))
	b.WaitJS(t, "the schedule offered for the room", `document.querySelector("#apps-form [name=algorithm]") &&
		[...document.querySelector("#apps-form [name=algorithm]").options].map(o => o.value).join() === "schedule"`, 10*time.Second)
	if u := unlabelled("#apps-form"); len(u) > 0 {
		t.Errorf("controls without a label: %q", u)
	}
	setValue("#apps-form [name=name]", "office schedule")
	b.Do(t, "create the app", chromedp.Click(chromedp.CSS("#apps-form button[type=submit]")))
	b.WaitJS(t, "the app's page", `document.getElementById("apps-status") && document.getElementById("apps-status").dataset.code === "100"`, 10*time.Second)
	b.Do(t, "run the app", chromedp.Click(chromedp.ID("apps-run")))
	b.WaitJS(t, "running, a write logged", `document.getElementById("apps-status").dataset.code === "202" &&
		[...document.querySelectorAll("#apps-logs tbody tr")].some(r => r.children[2].textContent === "write")`, 30*time.Second)
	b.Screenshot(t, "ui-app")
	b.Do(t, "stop the app", chromedp.Click(chromedp.ID("apps-run")))
	b.WaitJS(t, "stopped", `document.getElementById("apps-status").dataset.code === "302"`, 20*time.Second)

	// German.
	b.Do(t, "German", chromedp.Evaluate[chromedp.Void](`(() => { const s = document.getElementById("lang"); s.value = "de"; s.dispatchEvent(new Event("change")); })()`))
	b.WaitJS(t, "German apps page", `document.getElementById("apps-heading") && document.getElementById("apps-heading").textContent === "Regelungs-Apps"`, 10*time.Second)
	b.Do(t, "English", chromedp.Evaluate[chromedp.Void](`(() => { const s = document.getElementById("lang"); s.value = "en"; s.dispatchEvent(new Event("change")); })()`))

	// A read-only user: GET endpoints only, TagAuth read: no write action
	// anywhere, and live values still on (a read MQTT user is theirs).
	readerEmail, readerPassword := "reader@acme.test", "reader-password-1"
	readOnlyUser(t, srv, auth, pid, readerEmail, readerPassword)
	b.Do(t, "sign out", chromedp.Click(chromedp.ID("signout")))
	signIn(readerEmail, readerPassword)
	hash(fmt.Sprintf("#/project/%d/vdp/room.temp_f", pid))
	b.WaitJS(t, "the reader sees the virtual datapoint", `document.getElementById("vdp-status") && document.getElementById("vdp-status").dataset.code === "202"`, 10*time.Second)
	hidden := func(sel string) string {
		return `(() => { const e = document.querySelector(` + js(sel) + `); return !e || e.hidden || e.closest("[hidden]") !== null; })()`
	}
	for _, sel := range []string{"#vdp-new", "#vdp-run", "#vdp-delete", "#vdp-recompute"} {
		if !uitest.Eval[bool](t, b, hidden(sel)) {
			t.Errorf("the read-only user sees %s", sel)
		}
	}
	hash(fmt.Sprintf("#/project/%d/setpoints/boiler.sp", pid))
	b.WaitJS(t, "the reader sees the bounds", `document.getElementById("sp-bounds-now") && document.getElementById("sp-bounds-now").dataset.max === "70"`, 10*time.Second)
	for _, sel := range []string{"#sp-write", "#sp-bounds button[type=submit]"} {
		if !uitest.Eval[bool](t, b, hidden(sel)) {
			t.Errorf("the read-only user sees %s", sel)
		}
	}
	hash(fmt.Sprintf("#/project/%d/apps", pid))
	b.WaitJS(t, "apps page", `document.getElementById("apps-count") && document.getElementById("apps-count").textContent === "1 controls apps"`, 10*time.Second)
	if !uitest.Eval[bool](t, b, hidden("#apps-new")) {
		t.Error("the read-only user is offered a new controls app")
	}
	b.Do(t, "open the app", chromedp.Click(chromedp.CSS("#apps-table tbody a")))
	b.WaitJS(t, "the reader sees the app", `document.getElementById("apps-status") && document.getElementById("apps-status").dataset.code === "302"`, 10*time.Second)
	for _, sel := range []string{"#apps-run", "#apps-delete"} {
		if !uitest.Eval[bool](t, b, hidden(sel)) {
			t.Errorf("the read-only user sees %s", sel)
		}
	}
	b.Screenshot(t, "ui-readonly")

	// The browser logs every answer that is not 2xx; these were asked
	// for: the bad formula (400), the output of the virtual datapoint
	// before its first value and the bounds of a datapoint that had none,
	// and no data, yet (404).
	expected := []string{"status of 400 (Bad Request) " + srv.base + fmt.Sprintf("/v2/project/%d/virtual_datapoint?dataPointID=room.temp_f", pid),
		"status of 404 (Not Found) " + srv.base + fmt.Sprintf("/v2/datapoint?project_id=%d&dataPointID=boiler.sp", pid),
		"status of 404 (Not Found) " + srv.base + fmt.Sprintf("/v2/datapoint/timeseries?project_id=%d&dataPointID=room.temp_f&", pid)}
	for _, p := range b.Problems() {
		if !slices.ContainsFunc(expected, func(e string) bool { return strings.Contains(p, e) }) {
			t.Errorf("page problem: %s", p)
		}
	}
}

// readOnlyUser makes a user of the company with a project role granting
// every GET endpoint and POST .../mqttuser (a read MQTT user for live
// values) and a TagAuth reading every datapoint.
func readOnlyUser(t *testing.T, srv *server, admin func(*http.Request), pid int64, email, password string) {
	t.Helper()
	status, body := srv.request("GET", "/v2/meta/endpoints", nil, "")
	var endpoints []struct {
		ID     int32  `json:"id"`
		Method string `json:"request_method"`
		Path   string `json:"path"`
		Tag    string `json:"tag"`
	}
	if status != 200 || json.Unmarshal(body, &endpoints) != nil {
		t.Fatalf("endpoints: %d %s", status, body)
	}
	var ids []int32
	for _, e := range endpoints {
		if (e.Method == "GET" && e.Tag != "company") || (e.Method == "POST" && e.Path == "/v2/project/{project_id}/mqttuser") {
			ids = append(ids, e.ID)
		}
	}
	status, body = srv.request("POST", "/v2/company/user", admin, fmt.Sprintf(`{"firstName":"R","lastName":"O","email":%q,"password":%q}`, email, password))
	var user struct {
		Resource struct{ ID int64 } `json:"resource"`
	}
	if status != 200 && status != 201 || json.Unmarshal(body, &user) != nil {
		t.Fatalf("user: %d %s", status, body)
	}
	idsJSON, _ := json.Marshal(ids)
	status, body = srv.request("POST", fmt.Sprintf("/v2/project/%d/role", pid), admin,
		`{"name":"reader","authed_endpoints":`+string(idsJSON)+`,"authed_tags":[{"key":"name","value":"*","read":true,"write":false}]}`)
	var role struct {
		Resource struct{ ID int64 } `json:"resource"`
	}
	if status != 200 && status != 201 || json.Unmarshal(body, &role) != nil {
		t.Fatalf("role: %d %s", status, body)
	}
	if status, body = srv.request("POST", fmt.Sprintf("/v2/project/%d/role/%d/user/%d", pid, role.Resource.ID, user.Resource.ID), admin, ""); status != 200 && status != 201 {
		t.Fatalf("assign: %d %s", status, body)
	}
}

// mapRoom maps the catalog's room into the project with its
// temperature_setpoint pin on dp and a schedule of 21.5 all week.
func mapRoom(t *testing.T, srv *server, admin func(*http.Request), pid int64, dp string) {
	t.Helper()
	get := func(path string, v any) {
		t.Helper()
		status, body := srv.request("GET", path, admin, "")
		if status != 200 || json.Unmarshal(body, v) != nil {
			t.Fatalf("%s: %d %s", path, status, body)
		}
	}
	var comps, pins []catalogEntry
	get("/v2/components", &comps)
	room := idByAlphanumeric(t, comps, "room")
	get(fmt.Sprintf("/v2/component/%d/pins", room), &pins)
	var cip struct {
		Resource struct{ ID int64 } `json:"resource"`
	}
	status, body := srv.request("POST", fmt.Sprintf("/v2/project/%d/componentInProject", pid), admin, fmt.Sprintf(`{"component_id":%d,"nameEN":"Office"}`, room))
	if status != 200 || json.Unmarshal(body, &cip) != nil {
		t.Fatalf("map the room: %d %s", status, body)
	}
	var days []string
	for _, d := range []string{"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"} {
		days = append(days, fmt.Sprintf(`{"day":%q,"start":"00:00","end":"24:00","value":21.5}`, d))
	}
	for path, body := range map[string]string{
		"pin/datapoint": fmt.Sprintf(`{"componentinproject_id":%d,"pin_id":%d,"dataPointID":%q}`, cip.Resource.ID, idByAlphanumeric(t, pins, "temperature_setpoint"), dp),
		"attribute":     fmt.Sprintf(`{"componentinproject_id":%d,"key":"setpoint_schedule","value":[%s]}`, cip.Resource.ID, strings.Join(days, ",")),
	} {
		if status, b := srv.request("POST", fmt.Sprintf("/v2/project/%d/componentInProject/%s", pid, path), admin, body); status != 200 {
			t.Fatalf("%s: %d %s", path, status, b)
		}
	}
}
