//go:build unix

package main

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/openbdp/bdp/http/ui"
	"github.com/openbdp/bdp/http/ui/uitest"
)

// The browser UI's project pages against a real `bdp serve`: a saved plot
// view reopened by its link and a favorite (ui_views_test.go), an analysis
// run and its result with its charts (ui_analytics_test.go), files
// uploaded by dropping them, downloaded and deleted (ui_files_test.go),
// each also in German. One server and one browser for all of them.

// uiEnv is what the steps share.
type uiEnv struct {
	srv  *server
	b    *uitest.Browser
	pid  int64
	auth func(*http.Request)
}

func (e *uiEnv) api(t *testing.T, method, path, body string, out any) {
	t.Helper()
	status, b := e.srv.request(method, path, e.auth, body)
	if status/100 != 2 {
		t.Fatalf("%s %s: %d %s", method, path, status, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, b)
		}
	}
}

func (e *uiEnv) setLang(t *testing.T, l string) {
	t.Helper()
	e.b.Do(t, "language "+l, chromedp.Evaluate[chromedp.Void](`(() => { const s = document.getElementById("lang"); s.value = `+
		uitest.JSString(l)+`; s.dispatchEvent(new Event("change")); })()`))
	e.b.WaitJS(t, "language "+l, `document.documentElement.lang === `+uitest.JSString(l), 2*time.Second)
}

// text is the trimmed text of the first element matching css.
func (e *uiEnv) text(t *testing.T, css string) string {
	t.Helper()
	return strings.TrimSpace(uitest.Eval[string](t, e.b, `(document.querySelector(`+uitest.JSString(css)+`) || {textContent: ""}).textContent`))
}

func (e *uiEnv) goTo(t *testing.T, hash string) {
	t.Helper()
	e.b.Do(t, "go to "+hash, chromedp.Evaluate[chromedp.Void](`location.hash = `+uitest.JSString(hash)))
}

func TestBrowserUIProjectPages(t *testing.T) {
	if !ui.Available() {
		t.Fatal("the UI assets are not embedded: run `make ui`, then rerun the tests")
	}
	srv := startServe(t, newDataDir(t), "BDP_ANALYSIS_WORKERS=1")
	const email, password = "ada@acme.test", "ada-password-1"
	pid := companyProject(t, srv, "acme", email, password)
	e := &uiEnv{srv: srv, pid: pid, auth: basicAuth(email, password)}

	end := time.Now().UTC().Truncate(time.Minute).Add(-time.Minute)
	uiSeries{id: "boiler.supply_temp", unit: "celsius", n: 300, step: 2 * time.Minute,
		f: func(i int) float64 { return 60 + 10*math.Sin(float64(i)/40) }}.upload(t, srv, pid, e.auth, end)
	uiSeries{id: "boiler.return_temp", unit: "celsius", n: 300, step: 2 * time.Minute,
		f: func(i int) float64 { return 45 + 5*math.Sin(float64(i)/40) }}.upload(t, srv, pid, e.auth, end)

	e.b = uitest.NewBrowser(t, 4*time.Minute)
	e.b.Do(t, "sign in",
		chromedp.Navigate(srv.base+"/ui/"),
		chromedp.WaitVisible(chromedp.ID("signin-form")),
		chromedp.SendKeys(chromedp.ID("email"), email),
		chromedp.SendKeys(chromedp.ID("password"), password),
		chromedp.Click(chromedp.CSS("#signin-form button[type=submit]")),
	)
	e.b.WaitJS(t, "signed in", `!document.getElementById("view-projects").hidden`, 10*time.Second)
	// The Swagger UI stays one link away.
	if href := uitest.Eval[string](t, e.b, `document.getElementById("nav-api").href`); !strings.HasSuffix(href, "/ui/api/") {
		t.Errorf("API explorer link %q", href)
	}

	t.Run("views", func(t *testing.T) { uiViews(t, e) })
	t.Run("analytics", func(t *testing.T) { uiAnalytics(t, e) })
	t.Run("files", func(t *testing.T) { uiFiles(t, e) })

	for _, p := range e.b.Problems() {
		t.Errorf("page problem: %s", p)
	}
}

func pidHash(pid int64, rest string) string { return fmt.Sprintf("#/project/%d%s", pid, rest) }
