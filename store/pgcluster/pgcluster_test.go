package pgcluster

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	osexec "os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// shared is the cluster of this package's tests that need no cluster of
// their own, started the way other packages are expected to do it.
var shared *Cluster

func TestMain(m *testing.M) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	c, cleanup, err := StartForTests(ctx)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	shared = c
	code := m.Run()
	cleanup()
	os.Exit(code)
}

func TestStartForTestsServes(t *testing.T) {
	if got := queryString(t, shared.URL(), "SELECT 1::text"); got != "1" {
		t.Fatalf("select 1 = %q", got)
	}

	u, err := url.Parse(shared.URL())
	if err != nil {
		t.Fatal(err)
	}
	password, _ := u.User.Password()
	if u.Hostname() != "127.0.0.1" || u.User.Username() != "bdp" || u.Path != "/bdp" || u.Query().Get("sslmode") != "disable" {
		t.Errorf("URL %s: want bdp@127.0.0.1/bdp?sslmode=disable", shared.URL())
	}
	if !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(password) {
		t.Errorf("password %q: want 32 hex characters", password)
	}

	settings := []struct{ name, want string }{
		{"listen_addresses", "127.0.0.1"},
		{"unix_socket_directories", ""},
		{"max_connections", "200"},
		{"fsync", "off"},
		{"synchronous_commit", "off"},
		{"full_page_writes", "off"},
		{"password_encryption", "scram-sha-256"},
		{"server_encoding", "UTF8"},
	}
	for _, s := range settings {
		t.Run(s.name, func(t *testing.T) {
			if got := queryString(t, shared.URL(), "SHOW "+s.name); got != s.want {
				t.Errorf("%s = %q, want %q", s.name, got, s.want)
			}
		})
	}

	// A wrong password must be refused: scram auth, not trust.
	u.User = url.UserPassword("bdp", "wrong")
	if conn, err := pgx.Connect(context.Background(), u.String()); err == nil {
		conn.Close(context.Background())
		t.Error("connected with a wrong password")
	}
}

func TestDataDirPermissions(t *testing.T) {
	checks := []struct {
		path string
		mode os.FileMode
	}{
		{shared.dir, 0o700},
		{filepath.Join(shared.dir, passwordFile), 0o600},
	}
	for _, c := range checks {
		fi, err := os.Stat(c.path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != c.mode {
			t.Errorf("%s: mode %v, want %v", c.path, fi.Mode().Perm(), c.mode)
		}
		if shared.user != nil && int(fi.Sys().(*syscall.Stat_t).Uid) != shared.user.uid {
			t.Errorf("%s: not owned by %s", c.path, shared.user.name)
		}
	}
}

func TestCreateDatabase(t *testing.T) {
	tests := []struct {
		name    string
		wantErr string // empty: must succeed
	}{
		{"test_one", ""},
		{"_x9", ""},
		{strings.Repeat("a", 63), ""},
		{"", "invalid database name"},
		{strings.Repeat("a", 64), "invalid database name"},
		{"Upper", "invalid database name"},
		{"9lives", "invalid database name"},
		{`x"; DROP DATABASE bdp; --`, "invalid database name"},
		{"with-dash", "invalid database name"},
		{"bdp", "already exists"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dbURL, err := shared.CreateDatabase(context.Background(), tt.name)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("CreateDatabase(%q) error = %v, want one containing %q", tt.name, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := queryString(t, dbURL, "SELECT current_database()"); got != tt.name {
				t.Errorf("connected to %q, want %q", got, tt.name)
			}
		})
	}
}

func TestRestartReusesCluster(t *testing.T) {
	ctx := context.Background()
	// Parents that Start has to create, under a base the server user can
	// traverse; not Throwaway, to cover the settings bdp serve uses.
	dir := filepath.Join(traversableTempDir(t), "nested", "postgres")
	first := startCluster(t, Options{Dir: dir})
	execSQL(t, first.URL(), "CREATE TABLE kept (v text); INSERT INTO kept VALUES ('before restart')")
	if got := queryString(t, first.URL(), "SHOW fsync"); got != "on" {
		t.Errorf("fsync = %q on a persistent cluster", got)
	}
	if fi, err := os.Stat(filepath.Dir(dir)); err != nil {
		t.Error(err)
	} else if fi.Mode().Perm() != 0o755 {
		t.Errorf("created parent has mode %v, want 0755", fi.Mode().Perm())
	}
	for range 2 { // the second Stop must be a no-op
		if err := first.Stop(ctx); err != nil {
			t.Fatal(err)
		}
	}

	second := startCluster(t, Options{Dir: dir})
	if got := queryString(t, second.URL(), "SELECT v FROM kept"); got != "before restart" {
		t.Errorf("after restart: %q", got)
	}
	if second.password != first.password {
		t.Error("password changed across restarts")
	}
}

func TestStartReplacesServerLeftRunning(t *testing.T) {
	dir := traversableTempDir(t)
	// The first cluster stands for a bdp process killed before it could stop
	// its server.
	orphaned := startCluster(t, Options{Dir: dir, Throwaway: true})
	execSQL(t, orphaned.URL(), "CREATE TABLE kept (v text); INSERT INTO kept VALUES ('from first')")

	replacing := startCluster(t, Options{Dir: dir, Throwaway: true})
	if got := queryString(t, replacing.URL(), "SELECT v FROM kept"); got != "from first" {
		t.Errorf("second server reads %q", got)
	}
	// Stopping the old handle must not take down the server that replaced it.
	if err := orphaned.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := queryString(t, replacing.URL(), "SELECT 1::text"); got != "1" {
		t.Errorf("after stopping the old handle: %q", got)
	}
}

// TestStartAfterServerDied covers a postmaster.pid left behind by a server
// that no longer runs, which bdp's next Start must get past.
func TestStartAfterServerDied(t *testing.T) {
	tests := []struct {
		name string
		die  func(t *testing.T, c *Cluster)
	}{
		{"killed", func(t *testing.T, c *Cluster) {
			if err := syscall.Kill(c.pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			// Until init reaps it, the postmaster lingers as a zombie; both
			// states must work.
			for deadline := time.Now().Add(5 * time.Second); !exited(c.pid); {
				if time.Now().After(deadline) {
					t.Fatal("killed postmaster still running")
				}
				time.Sleep(10 * time.Millisecond)
			}
		}},
		{"lock file names a dead process", func(t *testing.T, c *Cluster) {
			lock := filepath.Join(c.dir, "postmaster.pid")
			content, err := os.ReadFile(lock)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Stop(context.Background()); err != nil {
				t.Fatal(err)
			}
			// A PID that has just exited and been reaped names no process.
			dead := osexec.Command("true")
			if err := dead.Run(); err != nil {
				t.Fatal(err)
			}
			_, rest, _ := strings.Cut(string(content), "\n")
			writeFile(t, lock, fmt.Sprintf("%d\n%s", dead.Process.Pid, rest), 0o600)
			if err := c.user.chown(lock); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := traversableTempDir(t)
			tt.die(t, startCluster(t, Options{Dir: dir, Throwaway: true, Logger: testLogger(t)}))
			if _, err := os.Stat(filepath.Join(dir, "postmaster.pid")); err != nil {
				t.Fatal(err)
			}
			restarted := startCluster(t, Options{Dir: dir, Throwaway: true, Logger: testLogger(t)})
			if got := queryString(t, restarted.URL(), "SELECT 1::text"); got != "1" {
				t.Errorf("select 1 = %q", got)
			}
		})
	}
}

func TestStartFailureShowsServerLog(t *testing.T) {
	dir := traversableTempDir(t)
	c := startCluster(t, Options{Dir: dir, Throwaway: true})
	if err := c.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	conf, err := os.OpenFile(filepath.Join(dir, "postgresql.conf"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = conf.WriteString("shared_buffers = 'plenty'\n")
	conf.Close()
	if err != nil {
		t.Fatal(err)
	}

	_, err = Start(context.Background(), Options{Dir: dir})
	if err == nil || !strings.Contains(err.Error(), `invalid value for parameter "shared_buffers"`) {
		t.Fatalf("error = %v, want the server's complaint from server.log", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "postmaster.pid")); err == nil {
		t.Error("a server is running after the failed start")
	}
}

func BenchmarkStartForTests(b *testing.B) {
	for b.Loop() {
		_, cleanup, err := StartForTests(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		cleanup()
		b.StartTimer()
	}
}

// startCluster starts a cluster that is stopped when the test ends.
func startCluster(t *testing.T, opts Options) *Cluster {
	t.Helper()
	c, err := Start(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Stop(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return c
}

// traversableTempDir returns a temporary directory that a server running
// as another user can use as, or create, a data directory in.
func traversableTempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "bdp-pgcluster-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), nil))
}

func queryString(t *testing.T, dbURL, sql string) string {
	t.Helper()
	var s string
	withConn(t, dbURL, func(conn *pgx.Conn) error {
		return conn.QueryRow(context.Background(), sql).Scan(&s)
	})
	return s
}

func execSQL(t *testing.T, dbURL, sql string) {
	t.Helper()
	withConn(t, dbURL, func(conn *pgx.Conn) error {
		_, err := conn.Exec(context.Background(), sql)
		return err
	})
}

func withConn(t *testing.T, dbURL string, fn func(*pgx.Conn) error) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if err := fn(conn); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}
