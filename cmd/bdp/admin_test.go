package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// admin runs `bdp admin args...` on dataDir with stdin, and returns its
// standard output, standard error and exit code.
func admin(t *testing.T, dataDir, stdin string, args ...string) (string, string, int) {
	t.Helper()
	return adminEnv(t, []string{"BDP_DATA_DIR=" + dataDir}, stdin, args...)
}

// adminEnv runs `bdp admin args...` with env added to the environment.
func adminEnv(t *testing.T, env []string, stdin string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(bdpBinary, append([]string{"admin"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errOut.String(), code
}

var printedPassword = regexp.MustCompile(`(?m)^password: (\S+)$`)

func wantPassword(t *testing.T, out string) string {
	t.Helper()
	m := printedPassword.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no generated password printed:\n%s", out)
	}
	return m[1]
}

// A new user's first minutes: bdp serve on an empty database says how to
// create the first company; bdp admin does it while the server runs, and
// its admin logs in at once, without an operator token or a restart. A
// reset password works at once too, and both commands work as well when
// no server runs (they start the managed cluster and stop it again).
func TestAdminCommandsOnTheManagedDatabase(t *testing.T) {
	dir := newDataDir(t)
	s := startServe(t, dir, "BDP_LOG_LEVEL=info")
	waitFor(t, s, func() bool { return strings.Contains(s.log.String(), firstCompanyHint) })

	out, errOut, code := admin(t, dir, "", "create-company", "--name", "acme", "--admin-email", "ada@acme.test")
	if code != 0 {
		t.Fatalf("create-company while serving: exit %d\n%s%s", code, out, errOut)
	}
	pw := wantPassword(t, out)
	if status, body := s.request("GET", "/v2/company", basicAuth("ada@acme.test", pw), ""); status != 200 || !strings.Contains(string(body), "acme") {
		t.Fatalf("the new admin cannot log in at once: %d %s", status, body)
	}
	// The company admin holds every route: creating a project works.
	if status, body := s.request("POST", "/v2/company/project", basicAuth("ada@acme.test", pw), `{"name":"plant"}`); status != 200 {
		t.Fatalf("the new admin cannot create a project: %d %s", status, body)
	}

	out, errOut, code = admin(t, dir, "a-new-long-password\n", "reset-password", "--email", "ADA@acme.test", "--password-stdin")
	if code != 0 || strings.Contains(out, "password: ") {
		t.Fatalf("reset-password from stdin: exit %d\n%s%s", code, out, errOut)
	}
	if status, body := s.request("GET", "/v2/user", basicAuth("ada@acme.test", "a-new-long-password"), ""); status != 200 {
		t.Fatalf("the reset password does not work at once: %d %s", status, body)
	}
	// The old password was cached by the server; it is forgotten at once.
	waitFor(t, s, func() bool {
		status, _ := s.request("GET", "/v2/user", basicAuth("ada@acme.test", pw), "")
		return status == 401
	})

	// On a database given by BDP_DATABASE_URL (here the server's own) the
	// commands work the same, and touch no managed cluster.
	elsewhere := t.TempDir()
	out, errOut, code = adminEnv(t, []string{"BDP_DATA_DIR=" + elsewhere, "BDP_DATABASE_URL=" + managedURL(t, dir)}, "",
		"create-company", "--name", "globex", "--admin-email", "hank@globex.test")
	if code != 0 {
		t.Fatalf("create-company on BDP_DATABASE_URL: exit %d\n%s%s", code, out, errOut)
	}
	if status, body := s.request("GET", "/v2/company", basicAuth("hank@globex.test", wantPassword(t, out)), ""); status != 200 ||
		!strings.Contains(string(body), "globex") {
		t.Fatalf("the admin made through BDP_DATABASE_URL cannot log in: %d %s", status, body)
	}
	if _, err := os.Stat(filepath.Join(elsewhere, "postgres")); err == nil {
		t.Fatal("bdp admin with BDP_DATABASE_URL created a managed cluster")
	}

	// Refusals are clear and change nothing.
	refusals := []struct {
		stdin string
		args  []string
		code  int
		say   string
	}{
		{"", []string{"create-company", "--name", "acme", "--admin-email", "bob@acme.test"}, 1, "exists"},
		{"", []string{"create-company", "--name", "other", "--admin-email", "ada@acme.test"}, 1, "exists"},
		{"", []string{"create-company", "--name", "other", "--admin-email", "not-an-email"}, 1, "email"},
		{"short\n", []string{"create-company", "--name", "other", "--admin-email", "eve@other.test", "--password-stdin"}, 1, "password"},
		{"", []string{"reset-password", "--email", "nobody@acme.test"}, 1, "not found"},
		{"", []string{"create-company", "--name", "other"}, 2, "--admin-email"},
		{"", []string{"frobnicate"}, 2, "unknown admin command"},
	}
	for _, r := range refusals {
		out, errOut, code := admin(t, dir, r.stdin, r.args...)
		if code != r.code || !strings.Contains(strings.ToLower(errOut), r.say) || printedPassword.MatchString(out) {
			t.Errorf("bdp admin %v: exit %d, want %d saying %q:\n%s%s", r.args, code, r.code, r.say, out, errOut)
		}
	}

	if err := s.stop(syscall.SIGTERM); err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, s.log)
	}
	out, errOut, code = admin(t, dir, "", "reset-password", "--email", "ada@acme.test")
	if code != 0 {
		t.Fatalf("reset-password without a server: exit %d\n%s%s", code, out, errOut)
	}
	pw = wantPassword(t, out)
	if postmasterRunning(dir) {
		t.Fatal("bdp admin left the managed PostgreSQL running")
	}
	s = startServe(t, dir, "BDP_LOG_LEVEL=info")
	if status, body := s.request("GET", "/v2/user", basicAuth("ada@acme.test", pw), ""); status != 200 {
		t.Fatalf("password reset without a server: %d %s", status, body)
	}
	if strings.Contains(s.log.String(), firstCompanyHint) {
		t.Fatalf("the first-company hint is logged although a company exists:\n%s", s.log)
	}
}

// managedURL is the connection URL of the running managed cluster under
// dataDir, from its lock file (port) and password file.
func managedURL(t *testing.T, dataDir string) string {
	t.Helper()
	pgDir := filepath.Join(dataDir, "postgres")
	pid, err := os.ReadFile(filepath.Join(pgDir, "postmaster.pid"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(pid), "\n")
	pw, err := os.ReadFile(filepath.Join(pgDir, "bdp_password"))
	if err != nil || len(lines) < 4 {
		t.Fatalf("read the managed cluster's lock and password files: %v", err)
	}
	return fmt.Sprintf("postgres://bdp:%s@127.0.0.1:%s/bdp?sslmode=disable", strings.TrimSpace(string(pw)), strings.TrimSpace(lines[3]))
}

// waitFor polls cond for up to 2 s.
func waitFor(t *testing.T, s *server, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("condition not met within 2 s; log:\n%s", s.log.String())
}
