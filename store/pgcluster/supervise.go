package pgcluster

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"time"
)

// SuperviseOptions tunes Supervise; zero fields take the defaults.
type SuperviseOptions struct {
	// Poll is how often the postmaster is checked. Default 200 ms.
	Poll time.Duration
	// MinBackoff is the wait before the first restart attempt, doubled
	// after each failed one up to MaxBackoff. Defaults 250 ms and 15 s.
	MinBackoff, MaxBackoff time.Duration
	// OnChange, when set, is told when the server dies (false) and when it
	// runs again (true).
	OnChange func(up bool)
}

// Supervise restarts the server whenever its postmaster dies (a kill -9,
// the OOM killer), until ctx ends. The restart uses the same port, so the
// URL and the pools made from it stay valid; the server runs crash
// recovery as it starts. Between failed attempts (such as the dead
// server's backends still holding its shared memory) the wait doubles
// from MinBackoff to MaxBackoff.
//
// Run it in a goroutine of its own, at most once per Cluster, and cancel
// ctx and wait for it to return before Stop. A Cluster from Attach is not
// this process's to restart: Supervise returns at once.
func (c *Cluster) Supervise(ctx context.Context, opts SuperviseOptions) {
	if c.attached {
		return
	}
	if opts.Poll <= 0 {
		opts.Poll = 200 * time.Millisecond
	}
	if opts.MinBackoff <= 0 {
		opts.MinBackoff = 250 * time.Millisecond
	}
	if opts.MaxBackoff < opts.MinBackoff {
		opts.MaxBackoff = max(15*time.Second, opts.MinBackoff)
	}
	if opts.OnChange == nil {
		opts.OnChange = func(bool) {}
	}
	tick := time.NewTicker(opts.Poll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		c.mu.Lock()
		dead, pid := !c.stopped && exited(c.pid), c.pid
		c.mu.Unlock()
		if !dead {
			continue
		}
		c.log.Error("PostgreSQL server died; restarting it", "dir", c.dir, "pid", pid)
		opts.OnChange(false)
		died := time.Now()
		for wait := opts.MinBackoff; ; wait = min(2*wait, opts.MaxBackoff) {
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
			err := c.restart(ctx)
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				return
			}
			c.log.Warn("PostgreSQL restart failed; trying again", "dir", c.dir, "error", err, "next_in", min(2*wait, opts.MaxBackoff))
		}
		c.log.Info("PostgreSQL server restarted", "dir", c.dir, "pid", c.currentPID(), "port", c.port, "down_for", time.Since(died))
		opts.OnChange(true)
	}
}

// restart starts the server again on its port after its postmaster died.
// A failed or cancelled attempt leaves no server behind.
func (c *Cluster) restart(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return nil
	}
	// The dead postmaster's lock file: postgres replaces it by itself
	// unless its PID still looks alive (a zombie), which stopStale handles.
	if err := c.stopStale(ctx); err != nil {
		return err
	}
	logPath := filepath.Join(c.dir, logFile)
	if err := rotateLog(logPath); err != nil {
		return err
	}
	offset := fileSize(logPath)
	if err := c.pgCtl(ctx, "start", "-w", "-D", c.dir, "-l", logPath, "-o", "-p "+strconv.Itoa(c.port)); err != nil {
		c.stopAfterFailedStart(ctx)
		return fmt.Errorf("pgcluster: restart server in %s: %w\nlast lines of %s:\n%s", c.dir, err, logPath, logTail(logPath, offset, logTailLines))
	}
	pid, err := readPID(c.dir)
	if err != nil {
		c.stopAfterFailedStart(ctx)
		return err
	}
	c.pid = pid
	return nil
}

func (c *Cluster) currentPID() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pid
}
