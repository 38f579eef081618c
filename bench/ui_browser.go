package bench

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// chromiumPath is Debian's Chromium, as the browser tests use it
// (http/ui/uitest).
const chromiumPath = "/usr/bin/chromium"

// uiBrowser is one headless Chromium for `bdp-bench ui`, with what its
// first tab loaded over the network and what its pages reported.
type uiBrowser struct {
	ctx    context.Context
	cancel func()

	mu       sync.Mutex
	urls     map[network.RequestID]string
	bytes    map[string]float64 // URL -> bytes transferred (encoded, with headers)
	problems []string
}

func startBrowser(ctx context.Context) (*uiBrowser, error) {
	if _, err := os.Stat(chromiumPath); err != nil {
		return nil, fmt.Errorf("no browser at %s (%w): install the Debian packages chromium and chromium-driver (make deps-test)", chromiumPath, err)
	}
	profile, err := os.MkdirTemp("", "bdp-bench-chromium-")
	if err != nil {
		return nil, err
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:0:0],
		chromedp.ExecPath(chromiumPath), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(profile), chromedp.WindowSize(1400, 1000),
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-background-timer-throttling", true), chromedp.Flag("disable-renderer-backgrounding", true),
		chromedp.Env("HOME="+profile))
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	tab, cancelTab := chromedp.NewContext(allocCtx)
	b := &uiBrowser{ctx: tab, urls: map[network.RequestID]string{}, bytes: map[string]float64{}}
	b.cancel = func() {
		cancelTab()
		cancelAlloc()
		os.RemoveAll(profile)
	}
	err = chromedp.Listen(tab, func(ev any) {
		b.mu.Lock()
		defer b.mu.Unlock()
		switch ev := ev.(type) {
		case *network.EventRequestWillBeSent:
			b.urls[ev.RequestID] = ev.Request.URL
		case *network.EventLoadingFinished:
			if u, ok := b.urls[ev.RequestID]; ok {
				b.bytes[u] += ev.EncodedDataLength
			}
		case *runtime.EventExceptionThrown:
			b.problems = append(b.problems, "exception: "+ev.ExceptionDetails.Text)
		}
	})
	if err == nil {
		_, err = chromedp.Call(tab, network.Enable, network.EnableParams{})
	}
	if err != nil {
		b.cancel()
		return nil, fmt.Errorf("start chromium: %w", err)
	}
	return b, nil
}

// transferred sums the bytes of the URLs loaded so far for which keep
// is true, and forgets them all.
func (b *uiBrowser) transferred(keep func(url string) bool) (float64, []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var n float64
	var urls []string
	for u, v := range b.bytes {
		if keep(u) {
			n += v
			urls = append(urls, u)
		}
	}
	b.bytes = map[string]float64{}
	return n, urls
}

func (b *uiBrowser) do(what string, actions ...chromedp.Action[chromedp.Void]) error {
	if err := chromedp.Do(b.ctx, actions...); err != nil {
		return fmt.Errorf("%s: %w (page problems: %q)", what, err, b.problems)
	}
	return nil
}

func uiEval[T any](b *uiBrowser, expr string) (T, error) {
	return chromedp.Run(b.ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
}

// wait polls expr until it is true, for up to within.
func (b *uiBrowser) wait(what, expr string, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		ok, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool]("Boolean("+expr+")"))
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			text, _ := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.body.innerText`))
			return fmt.Errorf("%s: %s not true within %s (page problems: %q)\n%s", what, expr, within, b.problems, clip(text, 2000))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return strings.TrimSpace(s)
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x2028 || r == 0x2029:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
