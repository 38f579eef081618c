//go:build unix

// Package uitest drives headless Chromium for tests that must see a page
// the way a person would. It is imported only by tests.
package uitest

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// chromiumPath is where Debian's package chromium installs the browser.
const chromiumPath = "/usr/bin/chromium"

// RenderedDOM loads url in headless Chromium, lets its scripts run (for up
// to 10 s of virtual time) and returns the DOM serialised as HTML.
func RenderedDOM(t testing.TB, url string) string {
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
		t.Fatalf("chromium did not finish within 2 minutes; stderr:\n%s", Truncate(stderr.String()))
	}
	if err != nil {
		t.Fatalf("chromium --dump-dom %s: %v; stderr:\n%s", url, err, Truncate(stderr.String()))
	}
	t.Logf("chromium rendered %s in %s (%d bytes of DOM)", url, time.Since(start).Round(time.Millisecond), stdout.Len())
	if stdout.Len() == 0 {
		t.Fatalf("chromium printed no DOM; stderr:\n%s", Truncate(stderr.String()))
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

// Truncate shortens a DOM or log for a failure message.
func Truncate(s string) string {
	const limit = 20000
	if len(s) <= limit {
		return s
	}
	return s[:limit] + "\n... (truncated)"
}
