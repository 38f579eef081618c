package pgcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

const (
	logFile = "server.log"
	// maxLogSize bounds server.log, which the server appends to for as long
	// as the cluster exists; at start, a larger one is moved to server.log.old.
	maxLogSize = 16 << 20
)

// startServer runs pg_ctl start on a free port, retrying with another port
// when the one picked was taken before the server could bind it.
func (c *Cluster) startServer(ctx context.Context) error {
	logPath := filepath.Join(c.dir, logFile)
	if err := rotateLog(logPath); err != nil {
		return err
	}
	for attempt := 1; ; attempt++ {
		port, err := freePort()
		if err != nil {
			return err
		}
		// Only this attempt's lines belong in an error message.
		offset := fileSize(logPath)
		err = c.pgCtl(ctx, "start", "-w", "-D", c.dir, "-l", logPath, "-o", "-p "+strconv.Itoa(port))
		if err == nil {
			c.port = port
			if c.pid, err = readPID(c.dir); err != nil {
				return err
			}
			return nil
		}
		tail := logTail(logPath, offset, logTailLines)
		if attempt == startAttempts || ctx.Err() != nil || !strings.Contains(tail, "Address already in use") {
			return fmt.Errorf("pgcluster: start server in %s: %w\nlast lines of %s:\n%s", c.dir, err, logPath, tail)
		}
		c.log.Info("port taken before PostgreSQL could bind it; retrying with another", "port", port)
	}
}

// stopStale stops a server that a previous process started on this data
// directory and could not stop because it was killed.
func (c *Cluster) stopStale(ctx context.Context) error {
	running, err := c.serverRunning(ctx)
	if err != nil || !running {
		return err
	}
	pid, err := readPID(c.dir)
	if err != nil {
		return err
	}
	// An exited postmaster that is not reaped yet (some container inits
	// reap orphans late or never) still passes the kill(pid, 0) liveness
	// test of pg_ctl and postgres, so they would never treat its lock file
	// as stale.
	if !isZombie(pid) {
		c.log.Warn("stopping PostgreSQL server left running by a previous process", "dir", c.dir, "pid", pid)
		err := c.stopServer(ctx)
		if err == nil || !exited(pid) {
			return err
		}
		// It died on its own while pg_ctl waited, leaving its lock file.
	}
	c.log.Warn("removing lock file of an exited PostgreSQL server", "dir", c.dir, "pid", pid)
	if err := os.Remove(filepath.Join(c.dir, "postmaster.pid")); err != nil {
		return fmt.Errorf("pgcluster: remove stale lock file: %w", err)
	}
	return nil
}

// stopAfterFailedStart makes sure a failed or cancelled Start leaves no
// server behind: pg_ctl may have launched it before being killed.
func (c *Cluster) stopAfterFailedStart(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if running, err := c.serverRunning(ctx); err == nil && running {
		if err := c.stopServer(ctx); err != nil {
			c.log.Warn("could not stop PostgreSQL server after failed start", "dir", c.dir, "err", err)
		}
	}
}

func (c *Cluster) stopServer(ctx context.Context) error {
	if err := c.pgCtl(ctx, "stop", "-w", "-m", "fast", "-D", c.dir); err != nil {
		return fmt.Errorf("pgcluster: stop server in %s: %w", c.dir, err)
	}
	return nil
}

// serverRunning asks pg_ctl status, whose exit status 3 means "no server".
func (c *Cluster) serverRunning(ctx context.Context) (bool, error) {
	err := c.pgCtl(ctx, "status", "-D", c.dir)
	var exitErr *exec.ExitError
	switch {
	case err == nil:
		return true, nil
	case errors.As(err, &exitErr) && exitErr.ExitCode() == 3:
		return false, nil
	default:
		return false, fmt.Errorf("pgcluster: server status in %s: %w", c.dir, err)
	}
}

func (c *Cluster) pgCtl(ctx context.Context, args ...string) error {
	return c.run(ctx, c.bin.pgCtl, args...)
}

// run runs a PostgreSQL program as the server user and puts its output into
// the error, since that output is where the programs explain failures.
func (c *Cluster) run(ctx context.Context, path string, args ...string) error {
	out, err := c.command(ctx, path, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w: %s", filepath.Base(path), args[0], err, bytes.TrimSpace(out))
	}
	return nil
}

// freePort asks the kernel for a free port. Another process may take it
// before the server binds it; startServer retries in that case.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pgcluster: find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// readPID returns the postmaster PID from the first line of postmaster.pid.
func readPID(dir string) (int, error) {
	pid, _, err := readPIDFile(dir)
	return pid, err
}

// readPIDFile returns the postmaster PID and port from postmaster.pid
// (lines 1 and 4); the port is 0 while the server is still starting.
func readPIDFile(dir string) (pid, port int, err error) {
	data, err := os.ReadFile(filepath.Join(dir, "postmaster.pid"))
	if err != nil {
		return 0, 0, fmt.Errorf("pgcluster: %w", err)
	}
	lines := strings.Split(string(data), "\n")
	if pid, err = strconv.Atoi(strings.TrimSpace(lines[0])); err != nil {
		return 0, 0, fmt.Errorf("pgcluster: malformed postmaster.pid in %s: %w", dir, err)
	}
	if len(lines) > 3 {
		port, _ = strconv.Atoi(strings.TrimSpace(lines[3]))
	}
	return pid, port, nil
}

// exited reports whether pid is gone or a zombie.
func exited(pid int) bool {
	return isZombie(pid) || errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// isZombie reports whether pid has exited but was not reaped. It reads
// /proc, so elsewhere than Linux it always reports false.
func isZombie(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The command name in parentheses may itself contain ") ".
	i := bytes.LastIndexByte(stat, ')')
	return i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z'
}

func rotateLog(path string) error {
	if fileSize(path) <= maxLogSize {
		return nil
	}
	if err := os.Rename(path, path+".old"); err != nil {
		return fmt.Errorf("pgcluster: rotate server log: %w", err)
	}
	return nil
}

func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// logTail returns at most n last lines written to the log after offset.
func logTail(path string, offset int64, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(cannot read log: %v)", err)
	}
	defer f.Close()
	// n lines fit in far less than this; it keeps the read small if the
	// server logged a lot since offset.
	const window = 64 << 10
	if _, err := f.Seek(max(offset, fileSize(path)-window), io.SeekStart); err != nil {
		return fmt.Sprintf("(cannot read log: %v)", err)
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return fmt.Sprintf("(cannot read log: %v)", err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
