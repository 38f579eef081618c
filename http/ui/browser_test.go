//go:build unix

package ui_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/openbdp/bdp/http/ui"
)

// chromiumPath is where Debian's package chromium installs the browser.
const chromiumPath = "/usr/bin/chromium"

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
// document, loads /ui/ in headless Chromium and checks that the rendered
// page shows both operations. It needs the assets from `make ui` and the
// Debian package chromium; without either it fails, it does not skip.
func TestSwaggerUIRendersInBrowser(t *testing.T) {
	if !ui.Available() {
		t.Fatal("the Swagger UI assets are not embedded: run `make ui` (it fetches swagger-ui-dist with npm into http/ui/dist), then rerun the tests")
	}
	base := startServer(t)

	dom := renderedDOM(t, base+"/ui/")

	if strings.Contains(dom, "Failed to load API definition") {
		t.Fatalf("Swagger UI could not load /v2/openapi.json; rendered DOM:\n%s", truncate(dom))
	}
	opblocks := regexp.MustCompile(`class="opblock opblock-(get|post)\b`).FindAllStringSubmatch(dom, -1)
	var methods []string
	for _, m := range opblocks {
		methods = append(methods, m[1])
	}
	if len(methods) != 2 {
		t.Fatalf("rendered DOM has %d operation blocks (methods %v), want 2 (get, post); rendered DOM:\n%s",
			len(methods), methods, truncate(dom))
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
		t.Logf("rendered DOM:\n%s", truncate(dom))
	}
}

// startServer runs a fiber app with the Swagger UI and testOpenAPI on a
// free loopback port until the test ends, and returns its base URL.
func startServer(t *testing.T) string {
	t.Helper()
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	ui.Register(app)
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
	for _, path := range []string{"/ui/", "/ui/swagger-ui-bundle.js", "/v2/openapi.json"} {
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

// renderedDOM loads url in headless Chromium, lets its scripts run (for up
// to 10 s of virtual time) and returns the DOM serialised as HTML.
func renderedDOM(t *testing.T, url string) string {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Fatalf("no browser at %s (%v): install the Debian packages chromium and chromium-driver "+
			"(`make deps-test`, or `apt-get install chromium chromium-driver`)", chromiumPath, err)
	}

	// A fresh profile per run; removed by hand rather than with t.TempDir,
	// whose cleanup fails the test if a browser helper process still
	// writes there.
	profile, err := os.MkdirTemp("", "bdp-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removeEventually(profile) })

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, chromiumPath,
		"--headless",
		"--no-sandbox",
		"--disable-gpu",
		"--disable-dev-shm-usage",
		"--disable-quic",
		"--no-first-run",
		"--disable-background-networking",
		"--disable-component-update",
		"--disable-sync",
		"--user-data-dir="+profile,
		"--virtual-time-budget=10000",
		"--dump-dom",
		url,
	)
	// Its own process group, so that Chromium's helper processes end with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	cmd.Env = append(os.Environ(), "HOME="+profile)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr

	start := time.Now()
	err = cmd.Run()
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // leftover helpers, if any
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatalf("chromium did not finish within 2 minutes; stderr:\n%s", truncate(stderr.String()))
	}
	if err != nil {
		t.Fatalf("chromium --dump-dom %s: %v; stderr:\n%s", url, err, truncate(stderr.String()))
	}
	t.Logf("chromium rendered %s in %s (%d bytes of DOM)", url, time.Since(start).Round(time.Millisecond), stdout.Len())
	if stdout.Len() == 0 {
		t.Fatalf("chromium printed no DOM; stderr:\n%s", truncate(stderr.String()))
	}
	return stdout.String()
}

// removeEventually removes dir, retrying briefly while processes that are
// going away may still write into it.
func removeEventually(dir string) {
	for i := 0; i < 10; i++ {
		if os.RemoveAll(dir) == nil {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func truncate(s string) string {
	const limit = 20000
	if len(s) <= limit {
		return s
	}
	return s[:limit] + "\n... (truncated)"
}
