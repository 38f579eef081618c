package ui

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/gofiber/fiber/v2"
)

// fakeDist stands in for the files `make ui` fetches, so that these tests
// do not depend on whether it ran.
func fakeDist() fstest.MapFS {
	return fstest.MapFS{
		"swagger-ui-bundle.js":            {Data: []byte("var SwaggerUIBundle;")},
		"swagger-ui-standalone-preset.js": {Data: []byte("var SwaggerUIStandalonePreset;")},
		"swagger-ui.css":                  {Data: []byte(".swagger-ui{}")},
		"favicon-32x32.png":               {Data: []byte("\x89PNG\r\n\x1a\n")},
		"README.md":                       {Data: []byte("placeholder")},
	}
}

func newTestApp(s *site) *fiber.App {
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	register(app, s)
	return app
}

func do(t *testing.T, app *fiber.App, method, target string, header map[string]string) (*http.Response, string) {
	t.Helper()
	req := httptest.NewRequest(method, target, nil)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := app.Test(req, -1)
	if err != nil {
		t.Fatalf("%s %s: %v", method, target, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading body: %v", method, target, err)
	}
	return resp, string(body)
}

func TestServesAssets(t *testing.T) {
	s := newSite(fakeDist(), page)
	if !s.available {
		t.Fatal("site with all required files is not available")
	}
	app := newTestApp(s)

	tests := []struct {
		path, contentType, cacheControl, bodyHas string
	}{
		{"/ui/", "text/html; charset=utf-8", cachePage, `<div id="swagger-ui">`},
		{"/ui/index.html", "text/html; charset=utf-8", cachePage, `src="swagger-ui-bundle.js"`},
		{"/ui/swagger-initializer.js", "text/javascript; charset=utf-8", cachePage, `"/v2/openapi.json"`},
		{"/ui/swagger-ui-bundle.js", "text/javascript; charset=utf-8", cacheDist, "SwaggerUIBundle"},
		{"/ui/swagger-ui-standalone-preset.js", "text/javascript; charset=utf-8", cacheDist, "SwaggerUIStandalonePreset"},
		{"/ui/swagger-ui.css", "text/css; charset=utf-8", cacheDist, ".swagger-ui"},
		{"/ui/favicon-32x32.png", "image/png", cacheDist, "PNG"},
	}
	for _, tc := range tests {
		resp, body := do(t, app, http.MethodGet, tc.path, nil)
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s: status %d, want 200", tc.path, resp.StatusCode)
			continue
		}
		if got := resp.Header.Get("Content-Type"); got != tc.contentType {
			t.Errorf("GET %s: Content-Type %q, want %q", tc.path, got, tc.contentType)
		}
		if got := resp.Header.Get("Cache-Control"); got != tc.cacheControl {
			t.Errorf("GET %s: Cache-Control %q, want %q", tc.path, got, tc.cacheControl)
		}
		if got := resp.Header.Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("GET %s: X-Content-Type-Options %q, want nosniff", tc.path, got)
		}
		if !strings.Contains(body, tc.bodyHas) {
			t.Errorf("GET %s: body lacks %q", tc.path, tc.bodyHas)
		}
	}
}

func TestIndexConfiguresSwaggerUI(t *testing.T) {
	js, err := page.ReadFile("swagger-initializer.js")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`url: "/v2/openapi.json"`, `dom_id: "#swagger-ui"`, `deepLinking: true`} {
		if !strings.Contains(string(js), want) {
			t.Errorf("swagger-initializer.js lacks %s", want)
		}
	}
}

func TestRedirectsToTrailingSlash(t *testing.T) {
	app := newTestApp(newSite(fakeDist(), page))
	for target, want := range map[string]string{
		"/ui":       "/ui/",
		"/ui?a=b&c": "/ui/?a=b&c",
	} {
		resp, _ := do(t, app, http.MethodGet, target, nil)
		if resp.StatusCode != http.StatusMovedPermanently {
			t.Errorf("GET %s: status %d, want 301", target, resp.StatusCode)
		}
		if got := resp.Header.Get("Location"); got != want {
			t.Errorf("GET %s: Location %q, want %q", target, got, want)
		}
	}
}

func TestRedirectKeepsGroupPrefix(t *testing.T) {
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	register(app.Group("/docs"), newSite(fakeDist(), page))
	resp, _ := do(t, app, http.MethodGet, "/docs/ui", nil)
	if got := resp.Header.Get("Location"); resp.StatusCode != http.StatusMovedPermanently || got != "/docs/ui/" {
		t.Errorf("GET /docs/ui: status %d Location %q, want 301 /docs/ui/", resp.StatusCode, got)
	}
	resp, body := do(t, app, http.MethodGet, "/docs/ui/", nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `id="swagger-ui"`) {
		t.Errorf("GET /docs/ui/: status %d, want 200 with the Swagger UI page", resp.StatusCode)
	}
}

func TestUnknownFilesAreNotFound(t *testing.T) {
	app := newTestApp(newSite(fakeDist(), page))
	for _, target := range []string{
		"/ui/README.md",
		"/ui/nope.js",
		"/ui/../ui.go",
		"/ui/dist/swagger-ui.css",
		"/ui/assets-missing.html",
	} {
		resp, _ := do(t, app, http.MethodGet, target, nil)
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: status %d, want 404", target, resp.StatusCode)
		}
	}
}

func TestHeadAndConditionalGet(t *testing.T) {
	app := newTestApp(newSite(fakeDist(), page))

	resp, body := do(t, app, http.MethodHead, "/ui/swagger-ui.css", nil)
	if resp.StatusCode != http.StatusOK || body != "" {
		t.Errorf("HEAD: status %d body %q, want 200 and no body", resp.StatusCode, body)
	}
	etag := resp.Header.Get("ETag")
	if etag == "" {
		t.Fatal("no ETag")
	}

	resp, body = do(t, app, http.MethodGet, "/ui/swagger-ui.css", map[string]string{"If-None-Match": etag})
	if resp.StatusCode != http.StatusNotModified || body != "" {
		t.Errorf("If-None-Match %s: status %d body %q, want 304 and no body", etag, resp.StatusCode, body)
	}
	resp, _ = do(t, app, http.MethodGet, "/ui/swagger-ui.css", map[string]string{"If-None-Match": `"other", W/` + etag})
	if resp.StatusCode != http.StatusNotModified {
		t.Errorf("If-None-Match list with weak match: status %d, want 304", resp.StatusCode)
	}
	resp, _ = do(t, app, http.MethodGet, "/ui/swagger-ui.css", map[string]string{"If-None-Match": `"other"`})
	if resp.StatusCode != http.StatusOK {
		t.Errorf("If-None-Match other: status %d, want 200", resp.StatusCode)
	}
}

func TestMissingAssetsPage(t *testing.T) {
	dist := fakeDist()
	delete(dist, "swagger-ui-bundle.js")
	s := newSite(dist, page)
	if s.available {
		t.Fatal("site without swagger-ui-bundle.js is available")
	}
	app := newTestApp(s)

	for _, target := range []string{"/ui/", "/ui/index.html"} {
		resp, body := do(t, app, http.MethodGet, target, nil)
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s: status %d, want 200", target, resp.StatusCode)
		}
		if got := resp.Header.Get("Content-Type"); got != "text/html; charset=utf-8" {
			t.Errorf("GET %s: Content-Type %q", target, got)
		}
		if got := resp.Header.Get("Cache-Control"); got != "no-store" {
			t.Errorf("GET %s: Cache-Control %q, want no-store", target, got)
		}
		for _, want := range []string{"were not built", "make ui", `href="/v2/openapi.json"`} {
			if !strings.Contains(body, want) {
				t.Errorf("GET %s: page lacks %q:\n%s", target, want, body)
			}
		}
	}
	// The assets that exist are not served half: the page never loads them.
	resp, _ := do(t, app, http.MethodGet, "/ui/swagger-ui.css", nil)
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /ui/swagger-ui.css without the bundle: status %d, want 404", resp.StatusCode)
	}
}

func TestEmbeddedPlaceholderOnly(t *testing.T) {
	// On a clean checkout dist/ holds only README.md: that must give the
	// "not built" page, not a panic.
	s := newSite(fstest.MapFS{"README.md": {Data: []byte("x")}}, page)
	if s.available {
		t.Fatal("placeholder-only dist is available")
	}
}
