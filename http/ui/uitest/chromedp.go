//go:build unix

package uitest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// Browser is one headless Chromium driven through the DevTools protocol
// (chromedp), for tests that click, type and wait the way a person does.
type Browser struct {
	// Ctx runs chromedp actions in the browser's first tab.
	Ctx context.Context

	mu       sync.Mutex
	problems []string // uncaught exceptions and console errors, in order
}

// NewBrowser starts Debian's Chromium with a fresh profile for the test;
// it is stopped when the test ends. Every action on Ctx must finish within
// timeout.
func NewBrowser(t testing.TB, timeout time.Duration) *Browser {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Fatalf("no browser at %s (%v): install the Debian packages chromium and chromium-driver "+
			"(`make deps-test`, or `apt-get install chromium chromium-driver`)", chromiumPath, err)
	}
	profile, err := os.MkdirTemp("", "bdp-chromedp-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removeEventually(profile) })

	opts := append(chromedp.DefaultExecAllocatorOptions[:0:0],
		chromedp.ExecPath(chromiumPath),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(1400, 1000),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		// Timers of a page in the background are not slowed down: a
		// headless tab counts as one.
		chromedp.Flag("disable-background-timer-throttling", true),
		chromedp.Flag("disable-renderer-backgrounding", true),
		chromedp.Env("HOME="+profile),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(allocCtx)
	b := &Browser{}
	// The first call starts the browser.
	start := time.Now()
	err = chromedp.Listen(ctx, func(ev any) {
		switch ev := ev.(type) {
		case *runtime.EventExceptionThrown:
			d := ev.ExceptionDetails
			text := d.Text
			if d.Exception != nil {
				text += " " + d.Exception.Description
			}
			b.note(fmt.Sprintf("exception: %s (%s:%d)", text, d.URL, d.LineNumber))
		case *runtime.EventConsoleAPICalled:
			if ev.Type == "error" {
				var args []string
				for _, a := range ev.Args {
					args = append(args, strings.Trim(string(a.Value), `"`)+a.Description)
				}
				b.note("console.error: " + strings.Join(args, " "))
			}
		case *cdplog.EventEntryAdded:
			// The browser's own reports: failed loads, Content-Security-
			// Policy violations.
			if ev.Entry.Level == "error" || ev.Entry.Level == "warning" {
				b.note(fmt.Sprintf("log %s: %s %s", ev.Entry.Level, ev.Entry.Text, ev.Entry.URL))
			}
		}
	})
	if err == nil {
		_, err = chromedp.Call(ctx, cdplog.Enable, struct{}{})
	}
	if err != nil {
		cancelTab()
		cancelAlloc()
		t.Fatalf("starting chromium: %v", err)
	}
	t.Logf("chromium started in %s", time.Since(start).Round(time.Millisecond))
	timed, cancelTimeout := context.WithTimeout(ctx, timeout)
	b.Ctx = timed
	t.Cleanup(func() {
		cancelTimeout()
		cancelTab()
		cancelAlloc()
	})
	return b
}

func (b *Browser) note(s string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.problems = append(b.problems, s)
}

// Problems are the page's uncaught exceptions and console errors so far.
func (b *Browser) Problems() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.problems...)
}

// Do runs actions, failing the test with what the page reported when
// they fail.
func (b *Browser) Do(t testing.TB, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(b.Ctx, actions...); err != nil {
		t.Fatalf("%s: %v\npage problems: %q", what, err, b.Problems())
	}
}

// Eval evaluates a JavaScript expression (awaiting a promise) into T.
func Eval[T any](t testing.TB, b *Browser, expr string) T {
	t.Helper()
	v, err := chromedp.Run(b.Ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("evaluating %s: %v\npage problems: %q", expr, err, b.Problems())
	}
	return v
}

// WaitJS polls expr (a JavaScript expression) until it is true, for up
// to within.
func (b *Browser) WaitJS(t testing.TB, what, expr string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		ok, err := chromedp.Run(b.Ctx, chromedp.Evaluate[bool]("Boolean("+expr+")"))
		if err != nil {
			t.Fatalf("%s: evaluating %s: %v", what, expr, err)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			text, _ := chromedp.Run(b.Ctx, chromedp.Evaluate[string](`document.body.innerText`))
			t.Fatalf("%s: %s not true within %s\npage problems: %q\npage text:\n%s", what, expr, within, b.Problems(), Truncate(text))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Screenshot saves the page as name.png into the directory named by
// BDP_UI_SCREENSHOTS, when it is set (for looking at, and for docs).
func (b *Browser) Screenshot(t testing.TB, name string) {
	t.Helper()
	dir := os.Getenv("BDP_UI_SCREENSHOTS")
	if dir == "" {
		return
	}
	png, err := chromedp.Run(b.Ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Errorf("screenshot %s: %v", name, err)
		return
	}
	p := filepath.Join(dir, name+".png")
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Errorf("screenshot %s: %v", name, err)
		return
	}
	t.Logf("screenshot %s", p)
}

// AllowDownloads lets the page download files, saved into dir under the
// names the page suggests (headless Chromium refuses downloads otherwise).
func (b *Browser) AllowDownloads(t testing.TB, dir string) {
	t.Helper()
	_, err := chromedp.CallBrowser(b.Ctx, browser.SetDownloadBehavior, browser.SetDownloadBehaviorParams{
		Behavior:     browser.SetDownloadBehaviorBehaviorAllow,
		DownloadPath: dir,
	})
	if err != nil {
		t.Fatalf("allowing downloads: %v", err)
	}
}

// WaitDownload waits up to within for a file whose name ends in suffix
// to be complete in dir (Chromium writes it as .crdownload first), and
// returns its name and content.
func WaitDownload(t testing.TB, dir, suffix string, within time.Duration) (string, []byte) {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), suffix) {
				body, err := os.ReadFile(filepath.Join(dir, e.Name()))
				if err != nil {
					t.Fatal(err)
				}
				return e.Name(), body
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no download *%s in %s within %s", suffix, dir, within)
	return "", nil
}

// JSString quotes s as a JavaScript string literal.
func JSString(s string) string {
	return fmt.Sprintf("%q", s) // Go's quoting is valid JavaScript for the strings tests use
}
