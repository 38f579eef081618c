//go:build unix

package ui_test

import (
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/openbdp/bdp/http/ui"
	"github.com/openbdp/bdp/http/ui/uitest"
)

// testOpenAPI is a small OpenAPI 3.1 document with two operations, served
// at /v2/openapi.json for Swagger UI to render.
const testOpenAPI = `{
  "openapi": "3.1.0",
  "info": {"title": "bdp browser test", "version": "0.0.0"},
  "paths": {
    "/v2/user": {
      "get": {
        "tags": ["user"],
        "operationId": "getUser",
        "summary": "Get the calling user",
        "responses": {
          "200": {
            "description": "The calling user",
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/User"}}}
          }
        }
      }
    },
    "/v2/company/project": {
      "post": {
        "tags": ["project"],
        "operationId": "createProject",
        "summary": "Create a project in the caller's company",
        "requestBody": {
          "required": true,
          "content": {"application/json": {"schema": {"$ref": "#/components/schemas/NewProject"}}}
        },
        "responses": {"201": {"description": "The project was created"}}
      }
    }
  },
  "components": {
    "schemas": {
      "User": {
        "type": "object",
        "required": ["id", "email"],
        "properties": {"id": {"type": "string", "format": "uuid"}, "email": {"type": "string"}}
      },
      "NewProject": {
        "type": "object",
        "required": ["name"],
        "properties": {"name": {"type": "string"}}
      }
    }
  }
}`

// TestSwaggerUIRendersInBrowser serves the Swagger UI and a small OpenAPI
// document, loads /ui/api/ in headless Chromium and checks that the rendered
// page shows both operations. It needs the assets from `make ui` and the
// Debian package chromium; without either it fails, it does not skip.
func TestSwaggerUIRendersInBrowser(t *testing.T) {
	if !ui.Available() {
		t.Fatal("the Swagger UI assets are not embedded: run `make ui` (it fetches swagger-ui-dist with npm into http/ui/dist), then rerun the tests")
	}
	base := startServer(t)

	dom := uitest.RenderedDOM(t, base+"/ui/api/")

	if strings.Contains(dom, "Failed to load API definition") {
		t.Fatalf("Swagger UI could not load /v2/openapi.json; rendered DOM:\n%s", uitest.Truncate(dom))
	}
	opblocks := regexp.MustCompile(`class="opblock opblock-(get|post)\b`).FindAllStringSubmatch(dom, -1)
	var methods []string
	for _, m := range opblocks {
		methods = append(methods, m[1])
	}
	if len(methods) != 2 {
		t.Fatalf("rendered DOM has %d operation blocks (methods %v), want 2 (get, post); rendered DOM:\n%s",
			len(methods), methods, uitest.Truncate(dom))
	}
	for _, want := range []string{
		`data-path="/v2/user"`,
		`data-path="/v2/company/project"`,
		"Get the calling user",
		"Create a project in the caller",
		"bdp browser test",
	} {
		if !strings.Contains(dom, want) {
			t.Errorf("rendered DOM lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("rendered DOM:\n%s", uitest.Truncate(dom))
	}
}

// startServer runs a fiber app with the UIs and testOpenAPI on a free
// loopback port until the test ends, and returns its base URL. extra
// registers more routes (a stand-in for parts of /v2).
func startServer(t *testing.T, extra ...func(*fiber.App)) string {
	t.Helper()
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	ui.Register(app)
	for _, f := range extra {
		f(app)
	}
	app.Get("/v2/openapi.json", func(c *fiber.Ctx) error {
		c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSONCharsetUTF8)
		return c.SendString(testOpenAPI)
	})

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	served := make(chan error, 1)
	go func() { served <- app.Listener(ln) }()
	t.Cleanup(func() {
		if err := app.ShutdownWithTimeout(5 * time.Second); err != nil {
			t.Errorf("shutting the server down: %v", err)
		}
		if err := <-served; err != nil {
			t.Errorf("server: %v", err)
		}
	})

	base := "http://" + ln.Addr().String()
	// The page and the document must be there before a browser is started
	// on them: this separates a server fault from a rendering one.
	for _, path := range []string{"/ui/", "/ui/api/", "/ui/api/swagger-ui-bundle.js", "/ui/lib/uPlot.iife.min.js", "/v2/openapi.json"} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: status %d, want 200", path, resp.StatusCode)
		}
	}
	return base
}
