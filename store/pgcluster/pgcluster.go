// Package pgcluster runs a private PostgreSQL server from the server binaries
// installed on the machine, so that bdp works without an external database
// and tests run against a real server instead of mocks.
//
// The server listens on 127.0.0.1 only, on a port picked afresh at every
// start, and has no Unix socket. Logins need the password kept inside the
// data directory, so other local users can reach the port but cannot log in.
//
// A data directory is meant to be used by one process at a time: Start
// assumes a server already running on it was left behind by a process that
// died, and replaces it.
package pgcluster

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/url"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

// Options configures Start.
type Options struct {
	// Dir is the cluster data directory. Start creates it and runs initdb if
	// it holds no cluster yet; otherwise it reuses the cluster in it.
	Dir string

	// Throwaway turns off fsync, synchronous_commit and full_page_writes,
	// which makes a test cluster start and run faster but lets a machine crash
	// corrupt it. It only takes effect when Start creates the cluster.
	Throwaway bool

	// Logger receives progress and warnings; nil discards them.
	Logger *slog.Logger

	// binDirs, when non-nil, replaces the binary search path so tests can
	// simulate a machine without PostgreSQL.
	binDirs []string
}

// Cluster is a running PostgreSQL server started by Start.
type Cluster struct {
	testDBs  atomic.Int64 // databases made by TestDatabase, for their names
	dir      string
	bin      binaries
	user     *serverUser // nil: the server runs as the current user
	password string
	port     int
	pid      int // postmaster PID, so Stop never stops a server it did not start
	log      *slog.Logger

	mu      sync.Mutex // serializes Stop
	stopped bool
	// attached: the server belongs to another process (Attach), which
	// Stop leaves running.
	attached bool
}

const (
	superuser    = "bdp"
	mainDatabase = "bdp"
	// maintenanceDatabase always exists, so the server can be administered
	// even when the database being created or checked does not exist yet.
	maintenanceDatabase = "postgres"

	// startAttempts bounds the retries when another process grabs the free
	// port between our probe and the server binding it.
	startAttempts = 3
	logTailLines  = 20

	// cleanupTimeout bounds stopping a half-started server after Start has
	// failed, when the caller's context may already be cancelled.
	cleanupTimeout = 30 * time.Second
)

// Start finds initdb and pg_ctl (PATH first, then /usr/lib/postgresql/*/bin,
// highest version first), runs initdb if Dir holds no PG_VERSION yet, stops a
// server left running on Dir by a previous process, then starts the server on
// 127.0.0.1 on a free TCP port and returns once it accepts connections.
//
// When the binaries are missing, the error names the Debian package to
// install. As root, the server runs as the "postgres" system user, because
// PostgreSQL refuses to run as root.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	if opts.Dir == "" {
		return nil, errors.New("pgcluster: Options.Dir is empty")
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("pgcluster: %w", err)
	}
	c := &Cluster{dir: dir, log: opts.Logger}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	version, err := clusterVersion(dir)
	if err != nil {
		return nil, err
	}
	if c.bin, err = findBinaries(ctx, opts.binDirs, version); err != nil {
		return nil, err
	}
	if c.user, err = lookupServerUser(); err != nil {
		return nil, err
	}
	if version == "" {
		if err := c.prepareDir(); err != nil {
			return nil, err
		}
		if err := c.initdb(ctx, opts.Throwaway); err != nil {
			// initdb cleans up after itself unless it is killed, as by a
			// cancelled context, and the steps after it do not; emptying the
			// directory, which prepareDir found empty, lets the next Start
			// begin again instead of finding half a cluster.
			c.emptyDir()
			return nil, err
		}
	} else if err := c.user.checkTraversable(filepath.Dir(dir)); err != nil {
		return nil, err
	}
	if c.password, err = readPassword(dir); err != nil {
		return nil, err
	}

	if err := c.stopStale(ctx); err != nil {
		return nil, err
	}
	if err := c.startServer(ctx); err != nil {
		c.stopAfterFailedStart(ctx)
		return nil, err
	}
	// Checked on every start rather than only after initdb, so that a
	// process killed between initdb and this point is repaired next time.
	if err := c.ensureDatabase(ctx, mainDatabase); err != nil {
		c.stopAfterFailedStart(ctx)
		return nil, err
	}
	c.log.Info("PostgreSQL server started", "dir", dir, "port", c.port, "pid", c.pid)
	return c, nil
}

// ErrNotRunning is Attach's answer when no server runs on the directory.
var ErrNotRunning = errors.New("pgcluster: no server running")

// Attach connects to the server another process (bdp serve, or a server it
// left behind) runs on opts.Dir, without taking it over: Stop on the
// result leaves it running. It returns ErrNotRunning when no server runs
// there, and then the caller may Start one of its own.
func Attach(ctx context.Context, opts Options) (*Cluster, error) {
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("pgcluster: %w", err)
	}
	c := &Cluster{dir: dir, log: opts.Logger, attached: true}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	pid, port, err := readPIDFile(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNotRunning
	}
	if err != nil {
		return nil, err
	}
	if exited(pid) {
		return nil, ErrNotRunning
	}
	if c.password, err = readPassword(dir); err != nil {
		return nil, err
	}
	c.pid, c.port = pid, port
	if err := c.withMaintenanceConn(ctx, func(*pgx.Conn) error { return nil }); err != nil {
		return nil, fmt.Errorf("pgcluster: the server running on %s (pid %d) does not answer on port %d: %w", dir, pid, port, err)
	}
	return c, nil
}

// URL returns the connection URL of the bdp database. It stays valid only
// while the server runs; the port may differ after the next Start.
func (c *Cluster) URL() string {
	return c.urlFor(mainDatabase)
}

// Stop shuts the server down (pg_ctl stop -m fast) and waits until it has
// exited. Stopping twice is harmless. If another Start has since taken over
// the data directory, Stop leaves that server alone and returns nil.
func (c *Cluster) Stop(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped || c.attached {
		return nil
	}
	pid, err := readPID(c.dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		c.stopped = true
		return nil
	case err != nil:
		return err
	case pid != c.pid:
		c.log.Info("PostgreSQL server was taken over by another Start; leaving it running", "dir", c.dir, "pid", pid)
		c.stopped = true
		return nil
	case exited(pid):
		// It died (and was not restarted yet): nothing to stop; the next
		// Start removes its lock file.
		c.stopped = true
		return nil
	}
	if err := c.stopServer(ctx); err != nil {
		return err
	}
	c.stopped = true
	c.log.Info("PostgreSQL server stopped", "dir", c.dir)
	return nil
}

// CreateDatabase creates an empty database and returns its connection URL,
// so tests can each work in a database of their own. Names are limited to
// lowercase letters, digits and underscores, which PostgreSQL never needs
// quoted, so the URL and any hand-written SQL agree on the name.
func (c *Cluster) CreateDatabase(ctx context.Context, name string) (string, error) {
	if err := validateDatabaseName(name); err != nil {
		return "", err
	}
	err := c.withMaintenanceConn(ctx, func(conn *pgx.Conn) error {
		_, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
		return err
	})
	if err != nil {
		return "", fmt.Errorf("pgcluster: create database %q: %w", name, err)
	}
	return c.urlFor(name), nil
}

func validateDatabaseName(name string) error {
	const maxLen = 63 // NAMEDATALEN-1: PostgreSQL would silently truncate longer names
	if name == "" || len(name) > maxLen {
		return fmt.Errorf("pgcluster: invalid database name %q: need 1 to %d characters", name, maxLen)
	}
	for i, r := range name {
		lower := r >= 'a' && r <= 'z' || r == '_'
		if !lower && (i == 0 || r < '0' || r > '9') {
			return fmt.Errorf("pgcluster: invalid database name %q: use lowercase letters, digits and underscores, not starting with a digit", name)
		}
	}
	return nil
}

func (c *Cluster) urlFor(database string) string {
	u := url.URL{
		Scheme:   "postgres",
		User:     url.UserPassword(superuser, c.password),
		Host:     net.JoinHostPort("127.0.0.1", strconv.Itoa(c.port)),
		Path:     "/" + database,
		RawQuery: "sslmode=disable", // loopback only; the server has no certificate
	}
	return u.String()
}

func (c *Cluster) withMaintenanceConn(ctx context.Context, fn func(*pgx.Conn) error) error {
	conn, err := pgx.Connect(ctx, c.urlFor(maintenanceDatabase))
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	return fn(conn)
}

func (c *Cluster) ensureDatabase(ctx context.Context, name string) error {
	err := c.withMaintenanceConn(ctx, func(conn *pgx.Conn) error {
		var exists bool
		err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists)
		if err != nil || exists {
			return err
		}
		_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
		return err
	})
	if err != nil {
		return fmt.Errorf("pgcluster: ensure database %q exists: %w", name, err)
	}
	return nil
}
