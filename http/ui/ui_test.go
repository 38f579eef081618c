package ui

import (
	"compress/gzip"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
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

// fakeLib stands in for the libraries `make ui` fetches.
func fakeLib() fstest.MapFS {
	return fstest.MapFS{
		"uPlot.iife.min.js": {Data: []byte("var uPlot=function(){};")},
		"uPlot.min.css":     {Data: []byte(".uplot{}")},
		"VERSION":           {Data: []byte("uplot@0.0.0")},
		"README.md":         {Data: []byte("placeholder")},
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
	s := newSite(fakeDist(), fakeLib())
	if !s.available() {
		t.Fatal("site with all required files is not available")
	}
	app := newTestApp(s)

	tests := []struct {
		path, contentType, cacheControl, bodyHas string
	}{
		// The browser UI.
		{"/ui/", "text/html; charset=utf-8", cachePage, `id="signin-form"`},
		{"/ui/index.html", "text/html; charset=utf-8", cachePage, `src="js/main.js"`},
		{"/ui/js/main.js", "text/javascript; charset=utf-8", cachePage, "import"},
		{"/ui/js/api.js", "text/javascript; charset=utf-8", cachePage, "/v2/auth/token"},
		{"/ui/style.css", "text/css; charset=utf-8", cachePage, "focus-visible"},
		{"/ui/icon.svg", "image/svg+xml", cachePage, "<svg"},
		{"/ui/lib/uPlot.iife.min.js", "text/javascript; charset=utf-8", cacheDist, "uPlot"},
		{"/ui/lib/uPlot.min.css", "text/css; charset=utf-8", cacheDist, ".uplot"},
		// The Swagger UI, below api/.
		{"/ui/api/", "text/html; charset=utf-8", cachePage, `<div id="swagger-ui">`},
		{"/ui/api/index.html", "text/html; charset=utf-8", cachePage, `src="swagger-ui-bundle.js"`},
		{"/ui/api/swagger-initializer.js", "text/javascript; charset=utf-8", cachePage, `"/v2/openapi.json"`},
		{"/ui/api/swagger-ui-bundle.js", "text/javascript; charset=utf-8", cacheDist, "SwaggerUIBundle"},
		{"/ui/api/swagger-ui-standalone-preset.js", "text/javascript; charset=utf-8", cacheDist, "SwaggerUIStandalonePreset"},
		{"/ui/api/swagger-ui.css", "text/css; charset=utf-8", cacheDist, ".swagger-ui"},
		{"/ui/api/favicon-32x32.png", "image/png", cacheDist, "PNG"},
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

// The browser UI's page runs only its own scripts: a token in
// sessionStorage is only as safe as the page is from foreign ones.
func TestAppPageHasContentSecurityPolicy(t *testing.T) {
	app := newTestApp(newSite(fakeDist(), fakeLib()))
	resp, body := do(t, app, http.MethodGet, "/ui/", nil)
	csp := resp.Header.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'self'", "script-src 'self'", "frame-ancestors 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("Content-Security-Policy %q lacks %q", csp, want)
		}
	}
	if strings.Contains(csp, "unsafe-inline") || strings.Contains(body, "<script>") {
		t.Errorf("inline scripts allowed or used: CSP %q", csp)
	}
	if got := resp.Header.Get("Referrer-Policy"); got != "no-referrer" {
		t.Errorf("Referrer-Policy %q, want no-referrer", got)
	}
	// Nothing loads from elsewhere: every src and href is relative.
	for _, m := range regexp.MustCompile(`(?:src|href)="([^"]*)"`).FindAllStringSubmatch(body, -1) {
		if strings.Contains(m[1], "//") {
			t.Errorf("the page loads %s from another origin", m[1])
		}
	}
}

// Every text the UI shows in English has its German counterpart: the two
// dictionaries have the same keys.
func TestDictionariesHaveTheSameKeys(t *testing.T) {
	js, err := app.ReadFile("app/js/i18n.js")
	if err != nil {
		t.Fatal(err)
	}
	keys := func(block string) map[string]bool {
		m := map[string]bool{}
		for _, k := range regexp.MustCompile(`(?m)^    (\w+):`).FindAllStringSubmatch(block, -1) {
			m[k[1]] = true
		}
		return m
	}
	// dictionaries reads the en and de blocks of src from offset on.
	dictionaries := func(name, src string) (map[string]bool, map[string]bool) {
		en, de := strings.Index(src, "  en: {"), strings.Index(src, "  de: {")
		if en < 0 || de < en {
			t.Fatalf("%s: dictionaries en and de not found", name)
		}
		end := strings.Index(src[de:], "\n  },") + de
		if end < de {
			t.Fatalf("%s: the de dictionary does not end", name)
		}
		return keys(src[en:de]), keys(src[de:end])
	}
	enKeys, deKeys := dictionaries("i18n.js", string(js))
	if len(enKeys) < 40 {
		t.Fatalf("only %d English keys found", len(enKeys))
	}
	// Modules add their own texts with addStrings({en: {...}, de: {...}}).
	mods, _ := fs.Glob(app, "app/js/*.js")
	for _, name := range mods {
		src, _ := app.ReadFile(name)
		for _, part := range strings.Split(string(src), "addStrings({")[1:] {
			en, de := dictionaries(name, part)
			for k := range en {
				if !de[k] {
					t.Errorf("%s: German lacks %s", name, k)
				}
				enKeys[k], deKeys[k] = true, true
			}
			for k := range de {
				if !en[k] {
					t.Errorf("%s: English lacks %s", name, k)
				}
			}
		}
	}
	for k := range enKeys {
		if !deKeys[k] {
			t.Errorf("German lacks %s", k)
		}
	}
	for k := range deKeys {
		if !enKeys[k] {
			t.Errorf("English lacks %s", k)
		}
	}
	// And every data-i18n key of the page is in the dictionary.
	page, _ := app.ReadFile("app/index.html")
	for _, m := range regexp.MustCompile(`data-i18n(?:-label|-placeholder)?="(\w+)"`).FindAllStringSubmatch(string(page), -1) {
		if !enKeys[m[1]] {
			t.Errorf("index.html uses %s, which the dictionary lacks", m[1])
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
	app := newTestApp(newSite(fakeDist(), fakeLib()))
	for target, want := range map[string]string{
		"/ui":       "/ui/",
		"/ui?a=b&c": "/ui/?a=b&c",
		"/ui/api":   "/ui/api/",
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
	register(app.Group("/docs"), newSite(fakeDist(), fakeLib()))
	resp, _ := do(t, app, http.MethodGet, "/docs/ui", nil)
	if got := resp.Header.Get("Location"); resp.StatusCode != http.StatusMovedPermanently || got != "/docs/ui/" {
		t.Errorf("GET /docs/ui: status %d Location %q, want 301 /docs/ui/", resp.StatusCode, got)
	}
	resp, body := do(t, app, http.MethodGet, "/docs/ui/", nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `id="signin-form"`) {
		t.Errorf("GET /docs/ui/: status %d, want 200 with the browser UI's page", resp.StatusCode)
	}
	resp, _ = do(t, app, http.MethodGet, "/docs/ui/api", nil)
	if got := resp.Header.Get("Location"); resp.StatusCode != http.StatusMovedPermanently || got != "/docs/ui/api/" {
		t.Errorf("GET /docs/ui/api: status %d Location %q, want 301 /docs/ui/api/", resp.StatusCode, got)
	}
	resp, body = do(t, app, http.MethodGet, "/docs/ui/api/", nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `id="swagger-ui"`) {
		t.Errorf("GET /docs/ui/api/: status %d, want 200 with the Swagger UI page", resp.StatusCode)
	}
}

func TestUnknownFilesAreNotFound(t *testing.T) {
	app := newTestApp(newSite(fakeDist(), fakeLib()))
	for _, target := range []string{
		"/ui/README.md",
		"/ui/nope.js",
		"/ui/../ui.go",
		"/ui/dist/swagger-ui.css",
		"/ui/swagger-ui.css",
		"/ui/assets-missing.html",
		"/ui/lib/README.md",
		"/ui/lib/VERSION",
		"/ui/app/index.html",
		"/ui/api/README.md",
	} {
		resp, _ := do(t, app, http.MethodGet, target, nil)
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: status %d, want 404", target, resp.StatusCode)
		}
	}
}

func TestHeadAndConditionalGet(t *testing.T) {
	app := newTestApp(newSite(fakeDist(), fakeLib()))

	resp, body := do(t, app, http.MethodHead, "/ui/api/swagger-ui.css", nil)
	if resp.StatusCode != http.StatusOK || body != "" {
		t.Errorf("HEAD: status %d body %q, want 200 and no body", resp.StatusCode, body)
	}
	etag := resp.Header.Get("ETag")
	if etag == "" {
		t.Fatal("no ETag")
	}

	resp, body = do(t, app, http.MethodGet, "/ui/api/swagger-ui.css", map[string]string{"If-None-Match": etag})
	if resp.StatusCode != http.StatusNotModified || body != "" {
		t.Errorf("If-None-Match %s: status %d body %q, want 304 and no body", etag, resp.StatusCode, body)
	}
	resp, _ = do(t, app, http.MethodGet, "/ui/api/swagger-ui.css", map[string]string{"If-None-Match": `"other", W/` + etag})
	if resp.StatusCode != http.StatusNotModified {
		t.Errorf("If-None-Match list with weak match: status %d, want 304", resp.StatusCode)
	}
	resp, _ = do(t, app, http.MethodGet, "/ui/api/swagger-ui.css", map[string]string{"If-None-Match": `"other"`})
	if resp.StatusCode != http.StatusOK {
		t.Errorf("If-None-Match other: status %d, want 200", resp.StatusCode)
	}
}

func TestMissingAssetsPage(t *testing.T) {
	dist := fakeDist()
	delete(dist, "swagger-ui-bundle.js")
	lib := fakeLib()
	delete(lib, "uPlot.iife.min.js")

	for _, tc := range []struct {
		name           string
		s              *site
		missing, there []string
	}{
		{"no Swagger UI bundle", newSite(dist, fakeLib()), []string{"/ui/api/", "/ui/api/index.html"}, []string{"/ui/"}},
		{"no uPlot", newSite(fakeDist(), lib), []string{"/ui/", "/ui/index.html"}, []string{"/ui/api/"}},
	} {
		if tc.s.available() {
			t.Fatalf("%s: site is available", tc.name)
		}
		app := newTestApp(tc.s)
		for _, target := range tc.missing {
			resp, body := do(t, app, http.MethodGet, target, nil)
			if resp.StatusCode != http.StatusOK {
				t.Errorf("%s: GET %s: status %d, want 200", tc.name, target, resp.StatusCode)
			}
			if got := resp.Header.Get("Content-Type"); got != "text/html; charset=utf-8" {
				t.Errorf("%s: GET %s: Content-Type %q", tc.name, target, got)
			}
			if got := resp.Header.Get("Cache-Control"); got != "no-store" {
				t.Errorf("%s: GET %s: Cache-Control %q, want no-store", tc.name, target, got)
			}
			for _, want := range []string{"were not built", "make ui", `href="/v2/openapi.json"`} {
				if !strings.Contains(body, want) {
					t.Errorf("%s: GET %s: page lacks %q:\n%s", tc.name, target, want, body)
				}
			}
		}
		for _, target := range tc.there {
			if resp, body := do(t, app, http.MethodGet, target, nil); resp.StatusCode != http.StatusOK || strings.Contains(body, "were not built") {
				t.Errorf("%s: GET %s: status %d, want the page itself", tc.name, target, resp.StatusCode)
			}
		}
	}
	// The assets that exist are not served half: the pages never load them.
	for target, s := range map[string]*site{
		"/ui/api/swagger-ui.css": newSite(dist, fakeLib()),
		"/ui/js/main.js":         newSite(fakeDist(), lib),
		"/ui/lib/uPlot.min.css":  newSite(fakeDist(), lib),
	} {
		if resp, _ := do(t, newTestApp(s), http.MethodGet, target, nil); resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s with an asset missing: status %d, want 404", target, resp.StatusCode)
		}
	}
}

func TestEmbeddedPlaceholderOnly(t *testing.T) {
	// On a clean checkout dist/ and lib/ hold only README.md: that must
	// give the "not built" pages, not a panic.
	s := newSite(fstest.MapFS{"README.md": {Data: []byte("x")}}, fstest.MapFS{"README.md": {Data: []byte("x")}})
	if s.available() || s.swagger || s.libs {
		t.Fatal("placeholder-only dist and lib are available")
	}
}

// The browser UI's first load (its page, modules, styles and uPlot; not the
// Swagger UI) stays within issue 22's budget of 500 KiB compressed.
func TestFirstLoadWithinBudget(t *testing.T) {
	s := defaultSite()
	if !s.libs {
		t.Fatal("uPlot is not embedded: run `make ui`, then rerun the tests")
	}
	var raw, packed int
	for name, a := range s.assets {
		if name == "" || strings.HasPrefix(name, apiPrefix) {
			continue
		}
		var buf strings.Builder
		zw := gzip.NewWriter(&buf)
		_, _ = zw.Write(a.body)
		_ = zw.Close()
		raw += len(a.body)
		packed += buf.Len()
	}
	t.Logf("first load: %d KiB, %d KiB gzipped", raw/1024, packed/1024)
	if packed > 500*1024 {
		t.Errorf("first load is %d KiB gzipped, over 500 KiB", packed/1024)
	}
}

// Text assets go out gzipped to a browser that accepts gzip, with an ETag
// of their own and Vary: Accept-Encoding; a client that does not accept
// it, or refuses it with q=0, gets the file as it is; a file that would
// not shrink is never gzipped.
func TestServesGzipToClientsThatAcceptIt(t *testing.T) {
	app := newTestApp(newSite(fakeDist(), fakeLib()))
	_, plain := do(t, app, http.MethodGet, "/ui/js/plot.js", nil)
	if len(plain) < 1000 {
		t.Fatalf("js/plot.js is %d bytes: too small to show compression", len(plain))
	}
	cases := []struct {
		acceptEncoding string
		gzipped        bool
	}{
		{"gzip, deflate, br, zstd", true}, // Chromium's
		{"br;q=1.0, gzip;q=0.5", true},
		{"*", true},
		{"", false},
		{"identity", false},
		{"gzip;q=0", false},
		{"*, gzip;q=0", false},
		{"deflate, br", false},
	}
	var gzipETag string
	for _, tc := range cases {
		resp, body := do(t, app, http.MethodGet, "/ui/js/plot.js", map[string]string{"Accept-Encoding": tc.acceptEncoding})
		if got := resp.Header.Get("Vary"); !strings.Contains(got, "Accept-Encoding") {
			t.Errorf("Accept-Encoding %q: Vary %q, want Accept-Encoding", tc.acceptEncoding, got)
		}
		if got := resp.Header.Get("Content-Encoding") == "gzip"; got != tc.gzipped {
			t.Errorf("Accept-Encoding %q: gzipped %v, want %v", tc.acceptEncoding, got, tc.gzipped)
			continue
		}
		if !tc.gzipped {
			if body != plain {
				t.Errorf("Accept-Encoding %q: body differs from the file", tc.acceptEncoding)
			}
			continue
		}
		zr, err := gzip.NewReader(strings.NewReader(body))
		if err != nil {
			t.Fatalf("Accept-Encoding %q: %v", tc.acceptEncoding, err)
		}
		unpacked, err := io.ReadAll(zr)
		if err != nil || string(unpacked) != plain {
			t.Errorf("Accept-Encoding %q: gunzipped body differs from the file (%v)", tc.acceptEncoding, err)
		}
		if len(body) >= len(plain) {
			t.Errorf("gzipped %d bytes, the file %d", len(body), len(plain))
		}
		gzipETag = resp.Header.Get("ETag")
	}
	plainResp, _ := do(t, app, http.MethodGet, "/ui/js/plot.js", nil)
	if gzipETag == "" || gzipETag == plainResp.Header.Get("ETag") {
		t.Errorf("gzipped ETag %q, the file's %q: want two different", gzipETag, plainResp.Header.Get("ETag"))
	}
	resp, _ := do(t, app, http.MethodGet, "/ui/js/plot.js", map[string]string{"Accept-Encoding": "gzip", "If-None-Match": gzipETag})
	if resp.StatusCode != http.StatusNotModified {
		t.Errorf("If-None-Match with the gzipped ETag: status %d, want 304", resp.StatusCode)
	}
	resp, _ = do(t, app, http.MethodGet, "/ui/api/swagger-ui.css", map[string]string{"Accept-Encoding": "gzip"})
	if resp.Header.Get("Content-Encoding") != "" {
		t.Errorf("a 13-byte file was sent %s-encoded: gzip would make it larger", resp.Header.Get("Content-Encoding"))
	}
}
