package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/openbdp/bdp/bench"
	"github.com/openbdp/bdp/http/ui"
	"github.com/openbdp/bdp/http/ui/uitest"
)

// These tests run the real binary the way a user does: `bdp serve` with
// its managed PostgreSQL, driven over HTTP and stopped with signals.

var bdpBinary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "bdp-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bdpBinary = filepath.Join(dir, "bdp")
	out, err := exec.Command("go", "build", "-o", bdpBinary, ".").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "build bdp: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

const operatorToken = "operator-token-for-serve-tests"

// server is one `bdp serve` process.
type server struct {
	t       *testing.T
	cmd     *exec.Cmd
	dataDir string
	base    string
	log     *syncBuffer
	exited  chan error
}

// syncBuffer is the output of a bdp process, read while it writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// dataDir makes a state directory the postgres system user can traverse,
// as a user's would be (MkdirTemp makes it 0700).
func newDataDir(t *testing.T) string {
	dir, err := os.MkdirTemp("", "bdp-serve-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func startServe(t *testing.T, dataDir string, env ...string) *server {
	t.Helper()
	os.Remove(filepath.Join(dataDir, "addresses.json"))
	s := &server{t: t, dataDir: dataDir, log: &syncBuffer{}, exited: make(chan error, 1)}
	s.cmd = exec.Command(bdpBinary, "serve")
	s.cmd.Env = append(os.Environ(), append([]string{"BDP_HTTP_ADDR=127.0.0.1:0", "BDP_MQTT_ADDR=127.0.0.1:0", "BDP_S3_ADDR=127.0.0.1:0", "BDP_DATA_DIR=" + dataDir,
		"BDP_OPERATOR_TOKEN=" + operatorToken, "BDP_LOG_LEVEL=warn"}, env...)...)
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.exited <- s.cmd.Wait() }()
	t.Cleanup(func() {
		if s.cmd.ProcessState == nil {
			_ = s.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-s.exited:
			case <-time.After(30 * time.Second):
				_ = s.cmd.Process.Kill()
			}
		}
	})
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-s.exited:
			t.Fatalf("bdp serve exited early (%v):\n%s", err, s.log)
		default:
		}
		if base, ok := bench.Ready(dataDir); ok {
			s.base = base
			return s
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("bdp serve not ready within 90 s:\n%s", s.log)
	return nil
}

// stop sends sig and waits for the exit.
func (s *server) stop(sig syscall.Signal) error {
	s.t.Helper()
	if err := s.cmd.Process.Signal(sig); err != nil {
		s.t.Fatal(err)
	}
	select {
	case err := <-s.exited:
		return err
	case <-time.After(60 * time.Second):
		s.t.Fatalf("bdp serve did not exit within 60 s after %v:\n%s", sig, s.log)
	}
	return nil
}

func (s *server) request(method, path string, auth func(*http.Request), body string) (int, []byte) {
	s.t.Helper()
	req, err := http.NewRequest(method, s.base+path, strings.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if auth != nil {
		auth(req)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, b
}

func operator(r *http.Request) { r.Header.Set("Authorization", "Bearer "+operatorToken) }

func basicAuth(email, pw string) func(*http.Request) {
	return func(r *http.Request) { r.SetBasicAuth(email, pw) }
}

// companyProject creates a company named name through the operator API,
// its admin with email and password, and one project, and returns the
// project's id.
func companyProject(t *testing.T, s *server, name, email, password string) int64 {
	t.Helper()
	status, body := s.request("POST", "/operator/companies", operator,
		`{"name":"`+name+`","admin":{"firstName":"A","lastName":"D","email":"`+email+`","password":"`+password+`"}}`)
	if status != 201 {
		t.Fatalf("company: %d %s", status, body)
	}
	status, body = s.request("POST", "/v2/company/project", basicAuth(email, password), `{"name":"p"}`)
	var created struct {
		Resource struct {
			Project struct{ ID int64 } `json:"project"`
		} `json:"resource"`
	}
	if status != 200 || json.Unmarshal(body, &created) != nil {
		t.Fatalf("project: %d %s", status, body)
	}
	return created.Resource.Project.ID
}

// postmasterRunning tells whether the managed cluster's server is up.
func postmasterRunning(dataDir string) bool {
	_, err := os.Stat(filepath.Join(dataDir, "postgres", "postmaster.pid"))
	return err == nil
}

func TestServeLifecycle(t *testing.T) {
	dir := newDataDir(t)
	s := startServe(t, dir)

	status, body := s.request("POST", "/operator/companies", operator,
		`{"name":"acme","admin":{"firstName":"Ada","lastName":"L","email":"ada@acme.test","password":"secret-pw-1"}}`)
	if status != 201 {
		t.Fatalf("create company: %d %s", status, body)
	}
	ada := basicAuth("ada@acme.test", "secret-pw-1")
	if status, body := s.request("GET", "/v2/user", ada, ""); status != 200 {
		t.Fatalf("GET /v2/user: %d %s", status, body)
	}

	// SIGTERM: a clean exit that stops the managed database too.
	if err := s.stop(syscall.SIGTERM); err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, s.log)
	}
	if postmasterRunning(dir) {
		t.Fatal("managed PostgreSQL still running after bdp serve exited")
	}

	// A restart reuses the cluster: the company is still there.
	s = startServe(t, dir)
	if status, body := s.request("GET", "/v2/company", ada, ""); status != 200 || !strings.Contains(string(body), "acme") {
		t.Fatalf("after restart: %d %s", status, body)
	}

	// SIGKILL leaves PostgreSQL behind; the next start takes over anyway.
	_ = s.stop(syscall.SIGKILL)
	if !postmasterRunning(dir) {
		t.Fatal("expected the orphaned PostgreSQL of a killed bdp to be running")
	}
	s = startServe(t, dir)
	if status, body := s.request("GET", "/v2/user", ada, ""); status != 200 {
		t.Fatalf("after SIGKILL and restart: %d %s", status, body)
	}
	if err := s.stop(syscall.SIGINT); err != nil {
		t.Fatalf("exit after SIGINT: %v", err)
	}
}

// A person opening the API explorer, /ui/api/, sees every operation of the
// OpenAPI document.
func TestSwaggerUIShowsEveryOperation(t *testing.T) {
	if !ui.Available() {
		t.Fatal("the Swagger UI assets are not embedded: run `make ui`, then rerun the tests")
	}
	s := startServe(t, newDataDir(t))
	status, body := s.request("GET", "/v2/openapi.json", nil, "")
	if status != 200 {
		t.Fatalf("GET /v2/openapi.json: %d", status)
	}
	var doc struct {
		Paths map[string]map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatal(err)
	}
	want := 0
	for _, ops := range doc.Paths {
		want += len(ops)
	}
	dom := uitest.RenderedDOM(t, s.base+"/ui/api/")
	blocks := regexp.MustCompile(`class="opblock opblock-(get|post|put|delete)\b`).FindAllString(dom, -1)
	if len(blocks) != want {
		t.Fatalf("the UI shows %d operations, the document has %d:\n%s", len(blocks), want, uitest.Truncate(dom))
	}
	for _, p := range []string{`data-path="/v2/company/project"`, `data-path="/operator/companies"`, `data-path="/v2/meta/endpoints"`} {
		if !strings.Contains(dom, p) {
			t.Errorf("the UI lacks %s", p)
		}
	}
}

func TestBadConfigurationExitsNamingTheVariable(t *testing.T) {
	cmd := exec.Command(bdpBinary, "serve")
	cmd.Env = append(os.Environ(), "BDP_HTTP_ADDR=8080", "BDP_BODY_LIMIT=huge", "BDP_DATA_DIR="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("want exit code 1, got %v:\n%s", err, out)
	}
	for _, name := range []string{"BDP_HTTP_ADDR", "BDP_BODY_LIMIT"} {
		if !strings.Contains(string(out), name) {
			t.Errorf("message does not name %s:\n%s", name, out)
		}
	}
}

func TestVersionAndUsage(t *testing.T) {
	out, err := exec.Command(bdpBinary, "version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "bdp ") {
		t.Fatalf("bdp version: %v %q", err, out)
	}
	out, err = exec.Command(bdpBinary, "frobnicate").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "unknown command") || !strings.Contains(string(out), "BDP_DATABASE_URL") {
		t.Fatalf("unknown command: %v %q", err, out)
	}
}

func TestMigrateAppliesAndStops(t *testing.T) {
	dir := newDataDir(t)
	cmd := exec.Command(bdpBinary, "migrate")
	cmd.Env = append(os.Environ(), "BDP_DATA_DIR="+dir, "BDP_LOG_LEVEL=info")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("bdp migrate: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), `"schema_version"`) {
		t.Fatalf("migrate did not report the schema version:\n%s", out)
	}
	if postmasterRunning(dir) {
		t.Fatal("managed PostgreSQL left running after bdp migrate")
	}
}
