//go:build unix

package ui_test

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/gofiber/fiber/v2"

	"github.com/openbdp/bdp/http/ui"
	"github.com/openbdp/bdp/http/ui/uitest"
)

// fakeAuth stands in for the parts of /v2 the sign-in uses, answering as
// bdp does (http/token.go, http/errors.go): the password grant, 401 and
// 429 with Retry-After in the failure envelope. The browser test of the
// whole UI against a real `bdp serve` is cmd/bdp's TestBrowserUI.
type fakeAuth struct {
	rejectTokens atomic.Bool  // answer 401 to every bearer token
	bearerCalls  atomic.Int64 // requests that carried the issued token
}

const fakeToken = "tok-123"

func (f *fakeAuth) register(app *fiber.App) {
	fail := func(c *fiber.Ctx, status int, msg string) error {
		return c.Status(status).JSON(fiber.Map{"success": false, "error": msg, "operation": ""})
	}
	app.Post("/v2/auth/token", func(c *fiber.Ctx) error {
		if c.FormValue("grant_type") != "password" {
			return fail(c, 400, "grant_type must be password")
		}
		switch c.FormValue("username") {
		case "slow@acme.test":
			c.Set("Retry-After", "2")
			return fail(c, 429, "too many failed logins; retry in 2 s")
		case "ada@acme.test":
			if c.FormValue("password") == "right-password" {
				return c.JSON(fiber.Map{"access_token": fakeToken, "token_type": "bearer", "expires_in": 3600})
			}
		}
		c.Set("WWW-Authenticate", `Basic realm="bdp"`)
		return fail(c, 401, "wrong email or password")
	})
	authed := func(h fiber.Handler) fiber.Handler {
		return func(c *fiber.Ctx) error {
			if c.Get("Authorization") != "Bearer "+fakeToken || f.rejectTokens.Load() {
				c.Set("WWW-Authenticate", `Basic realm="bdp"`)
				return fail(c, 401, "invalid or expired token")
			}
			f.bearerCalls.Add(1)
			return h(c)
		}
	}
	app.Get("/v2/user", authed(func(c *fiber.Ctx) error {
		return c.JSON(fiber.Map{"user": fiber.Map{"id": 1, "firstName": "Ada", "lastName": "Lovelace", "email": "ada@acme.test"}})
	}))
	app.Get("/v2/user/projects", authed(func(c *fiber.Ctx) error {
		return c.JSON([]fiber.Map{{"id": 7, "name": "Plant room", "description": "Boiler and pumps", "company_id": 1}})
	}))
}

// Sign-in as a person meets it: a wrong password is refused in the API's
// words, the throttle's 429 is a wait counted down, the right password
// shows the projects with the token kept in sessionStorage and never in
// the address, German can be chosen, the API explorer is one link away,
// and signing out (or a token the API no longer takes) leads back.
func TestSignInInBrowser(t *testing.T) {
	if !ui.Available() {
		t.Fatal("the UI assets are not embedded: run `make ui` (it fetches swagger-ui-dist and uplot with npm), then rerun the tests")
	}
	f := &fakeAuth{}
	base := startServer(t, f.register)
	b := uitest.NewBrowser(t, 90*time.Second)
	submit := chromedp.CSS("#signin-form button[type=submit]")
	signIn := func(email, password string) {
		t.Helper()
		b.Do(t, "sign in as "+email,
			chromedp.Evaluate[chromedp.Void](`document.getElementById("email").value = document.getElementById("password").value = ""`),
			chromedp.SendKeys(chromedp.ID("email"), email),
			chromedp.SendKeys(chromedp.ID("password"), password),
			chromedp.Click(submit),
		)
	}

	b.Do(t, "open /ui/", chromedp.Navigate(base+"/ui/"), chromedp.WaitVisible(chromedp.ID("signin-form")))
	if got := uitest.Eval[string](t, b, `document.activeElement.id`); got != "email" {
		t.Errorf("focus on %q after load, want the email field", got)
	}

	signIn("ada@acme.test", "wrong-password")
	b.WaitJS(t, "wrong password", `document.getElementById("signin-msg").textContent.includes("wrong email or password")`, 5*time.Second)

	signIn("slow@acme.test", "whatever-password")
	b.WaitJS(t, "throttled", `document.getElementById("signin-msg").textContent.includes("wait 2 s")`, 5*time.Second)
	if !uitest.Eval[bool](t, b, `document.querySelector("#signin-form button[type=submit]").disabled`) {
		t.Error("the sign-in button is enabled during the wait")
	}
	b.WaitJS(t, "wait counted down", `document.getElementById("signin-msg").textContent.includes("wait 1 s")`, 3*time.Second)
	b.WaitJS(t, "wait over", `!document.querySelector("#signin-form button[type=submit]").disabled`, 3*time.Second)
	b.Screenshot(t, "ui-signin")

	signIn("ada@acme.test", "right-password")
	b.WaitJS(t, "projects shown", `document.querySelector("#project-list button[data-project-id='7']")`, 5*time.Second)
	b.WaitJS(t, "user named", `document.getElementById("who").textContent.includes("Ada Lovelace")`, 5*time.Second)
	if href := uitest.Eval[string](t, b, `location.href`); strings.Contains(href, fakeToken) {
		t.Errorf("the token is in the address %s", href)
	}
	if !uitest.Eval[bool](t, b, `sessionStorage.getItem("bdp.token").includes(`+uitest.JSString(fakeToken)+`)`) {
		t.Error("the token is not kept in sessionStorage")
	}
	if !uitest.Eval[bool](t, b, `localStorage.getItem("bdp.token") === null && !document.cookie.includes(`+uitest.JSString(fakeToken)+`)`) {
		t.Error("the token is kept beyond the tab")
	}
	if f.bearerCalls.Load() < 2 {
		t.Errorf("%d requests with the bearer token, want GET /v2/user and /v2/user/projects", f.bearerCalls.Load())
	}

	// German: the static and the dynamic texts, and the page's language.
	b.Do(t, "switch to German", chromedp.Evaluate[chromedp.Void](`(() => { const s = document.getElementById("lang"); s.value = "de"; s.dispatchEvent(new Event("change")); })()`))
	b.WaitJS(t, "German", `document.getElementById("projects-heading").textContent === "Projekte"`, 2*time.Second)
	for expr, want := range map[string]string{
		`document.documentElement.lang`:                  "de",
		`document.getElementById("signout").textContent`: "Abmelden",
		`document.getElementById("who").textContent`:     "Angemeldet als Ada Lovelace",
		`document.getElementById("nav-api").textContent`: "API-Explorer",
	} {
		if got := uitest.Eval[string](t, b, expr); got != want {
			t.Errorf("%s = %q, want %q", expr, got, want)
		}
	}
	b.Do(t, "back to English", chromedp.Evaluate[chromedp.Void](`(() => { const s = document.getElementById("lang"); s.value = "en"; s.dispatchEvent(new Event("change")); })()`))

	// The API explorer, and back.
	b.Do(t, "open the API explorer", chromedp.Click(chromedp.ID("nav-api")))
	b.WaitJS(t, "Swagger UI", `location.pathname === "/ui/api/" && document.querySelector(".opblock")`, 20*time.Second)
	b.Do(t, "back to the UI", chromedp.Navigate(base+"/ui/#/projects"))
	b.WaitJS(t, "projects again, still signed in", `document.querySelector("#project-list button[data-project-id='7']")`, 5*time.Second)

	// Signing out forgets the token.
	b.Do(t, "sign out", chromedp.Click(chromedp.ID("signout")))
	b.WaitJS(t, "signed out", `!document.getElementById("view-signin").hidden && sessionStorage.getItem("bdp.token") === null`, 2*time.Second)
	if n := uitest.Eval[int](t, b, `document.querySelectorAll("#project-list li").length`); n != 0 {
		t.Errorf("%d projects of the signed-out user left in the page", n)
	}

	// A token the API stops taking ends the session with a reason.
	signIn("ada@acme.test", "right-password")
	b.WaitJS(t, "signed in again", `!document.getElementById("view-projects").hidden && document.querySelector("#project-list button")`, 5*time.Second)
	f.rejectTokens.Store(true)
	b.Do(t, "reload", chromedp.Reload())
	b.WaitJS(t, "session ended", `!document.getElementById("view-signin").hidden && document.getElementById("signin-msg").textContent.includes("session has ended")`, 5*time.Second)

	for _, p := range b.Problems() {
		// The refused requests above are logged by the browser as failed
		// loads; anything else is a fault of the page.
		if !strings.Contains(p, "Failed to load resource") {
			t.Errorf("page problem: %s", p)
		}
	}
}
