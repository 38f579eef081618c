package bench

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/chromedp/chromedp"
)

// UIOptions configure `bdp-bench ui`: the browser UI's figures (issue 22).
type UIOptions struct {
	Binary     string
	Runs       int // timed plots of each kind
	LiveValues int // live values timed
	Progress   io.Writer
}

// uiDatapoint holds 30 days of minute data.
const uiDatapoint = "room.temp"

// UI measures the browser UI in Debian's headless Chromium against a
// fresh bdp serve on loopback, as a person uses it:
//
//   - assets_kib: the bytes the browser transferred for the first load of
//     /ui/ (every file below /ui/ but the Swagger UI's /ui/api/, with
//     their headers) until the sign-in form shows, gzipped by bdp for
//     the browser; assets_gzip_kib the same files' bodies gzipped here,
//     headers not counted, as a check on it;
//   - first_plot_ms: a month of minute data (43,200 observations) plotted:
//     the median over Runs of the click on "Last month" (after "Last day")
//     to the plot drawn (the page's data-state ready), as the browser
//     test times it; first_plot_cold_ms: a saved view of the month opened
//     by its link in a fresh page, navigation to drawn, median over Runs;
//   - live_p99_ms: a value uploaded (POST .../timeseries sent) to its
//     point drawn on the open plot (the page's data-live-drawn, stamped
//     with the page's clock when uPlot drew it), p99 over LiveValues;
//     null, with live_note, when the UI shows no live values.
//
// BDP_BENCH_UI_TRACE=1 prints each cold open's API requests (start and
// end, ms since the navigation) and when the page's modules had run.
func UI(ctx context.Context, o UIOptions) (map[string]any, error) {
	progress := func(format string, args ...any) {
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, "ui: "+format+"\n", args...)
		}
	}
	if o.Runs < 1 || o.LiveValues < 1 {
		return nil, fmt.Errorf("ui: want at least one run and one live value, have %d and %d", o.Runs, o.LiveValues)
	}
	p, err := Start(ctx, Options{Binary: o.Binary})
	if err != nil {
		return nil, err
	}
	defer p.Close()
	end := time.Now().UTC().Truncate(time.Minute).Add(-time.Minute)
	if err := uploadMonth(ctx, p, end); err != nil {
		return nil, err
	}
	progress("uploaded 43,200 observations of %s", uiDatapoint)

	b, err := startBrowser(ctx)
	if err != nil {
		return nil, err
	}
	defer b.cancel()
	out := map[string]any{"key_order": []string{"first_plot_ms", "live_p99_ms", "assets_kib"}}

	// First load.
	if err := b.do("first load", chromedp.Navigate(p.Base+"/ui/")); err != nil {
		return nil, err
	}
	if err := b.wait("sign-in form", `!document.getElementById("view-signin").hidden`, 10*time.Second); err != nil {
		return nil, err
	}
	time.Sleep(300 * time.Millisecond) // the icon and anything late
	isAsset := func(u string) bool {
		return strings.HasPrefix(u, p.Base+"/ui/") && !strings.HasPrefix(u, p.Base+"/ui/api/")
	}
	sent, urls := b.transferred(isAsset)
	packed, err := gzipSize(ctx, urls)
	if err != nil {
		return nil, err
	}
	out["assets_kib"] = round1(sent / 1024)
	out["assets_gzip_kib"] = round1(float64(packed) / 1024)
	out["assets_files"] = len(urls)
	progress("first load: %d files, %.1f KiB transferred, %.1f KiB gzipped", len(urls), sent/1024, float64(packed)/1024)

	// Sign in, open the project, plot the month.
	if err := b.do("sign in",
		chromedp.SendKeys(chromedp.ID("email"), p.Email), chromedp.SendKeys(chromedp.ID("password"), p.Password),
		chromedp.Click(chromedp.CSS("#signin-form button[type=submit]"))); err != nil {
		return nil, err
	}
	if err := b.wait("signed in", `!document.getElementById("view-projects").hidden`, 10*time.Second); err != nil {
		return nil, err
	}
	row := `#dp-table tr[data-dp="` + uiDatapoint + `"]`
	if err := b.do("project", chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`location.hash = "#/project/%d"`, p.ProjectID))); err != nil {
		return nil, err
	}
	if err := b.wait("datapoint listed", `document.querySelector(`+jsString(row)+`)`, 10*time.Second); err != nil {
		return nil, err
	}
	if err := b.do("plot", chromedp.Click(chromedp.CSS(row+" input[type=checkbox]"))); err != nil {
		return nil, err
	}
	ready := `document.getElementById("plot").dataset.state === "ready"`
	if err := b.wait("a day plotted", ready, 20*time.Second); err != nil {
		return nil, err
	}
	var warm []time.Duration
	for range o.Runs {
		if err := b.do("last day", chromedp.Click(chromedp.CSS(`[data-range="1d"]`))); err != nil {
			return nil, err
		}
		if err := b.wait("a day", ready+` && document.querySelector('[data-range="1d"]').getAttribute("aria-pressed") === "true"`, 20*time.Second); err != nil {
			return nil, err
		}
		t0 := time.Now()
		if err := b.do("last month", chromedp.Click(chromedp.CSS(`[data-range="30d"]`))); err != nil {
			return nil, err
		}
		if err := b.wait("a month", ready+` && document.querySelector('[data-range="30d"]').getAttribute("aria-pressed") === "true"`, 20*time.Second); err != nil {
			return nil, err
		}
		warm = append(warm, time.Since(t0))
	}
	points, _ := uiEval[string](b, `document.getElementById("plot").dataset.points`)
	out["first_plot_ms"] = ms(percentile(warm, 50))
	out["first_plot_max_ms"] = ms(slices.Max(warm))
	out["first_plot_points"] = points
	progress("30-day plot, click to drawn: median %s, max %s (%s points)", percentile(warm, 50), slices.Max(warm), points)

	cold, err := coldPlots(ctx, p, b, end, o.Runs)
	if err != nil {
		return nil, err
	}
	out["first_plot_cold_ms"] = ms(percentile(cold, 50))
	progress("30-day saved view opened by its link, navigation to drawn: median %s, max %s", percentile(cold, 50), slices.Max(cold))

	live, note, err := livePlots(ctx, p, b, o.LiveValues)
	if err != nil {
		return nil, err
	}
	if live == nil {
		out["live_p99_ms"] = nil
		out["live_note"] = note
		progress("live values: %s", note)
	} else {
		out["live_p99_ms"] = ms(percentile(live, 99))
		out["live_median_ms"] = ms(percentile(live, 50))
		out["live_values"] = len(live)
		progress("live value sent -> drawn: median %s, p99 %s, max %s", percentile(live, 50), percentile(live, 99), slices.Max(live))
	}
	out["load_avg"] = loadAverage()
	return out, nil
}

// uploadMonth stores 30 days of minute data of uiDatapoint, ending at end,
// with its unit.
func uploadMonth(ctx context.Context, p *Platform, end time.Time) error {
	const n = 30 * 24 * 60
	start := end.Add(-(n - 1) * time.Minute)
	for i := 0; i < n; i += 10000 {
		obs := make([]map[string]any, 0, 10000)
		for j := i; j < min(n, i+10000); j++ {
			obs = append(obs, map[string]any{"time": start.Add(time.Duration(j) * time.Minute).Format(time.RFC3339),
				"value": math.Round((21+2*math.Sin(float64(j)/720))*100) / 100})
		}
		if err := p.Do(ctx, "POST", fmt.Sprintf("/v2/project/%d/timeseries", p.ProjectID), map[string]any{uiDatapoint: obs}, nil, false); err != nil {
			return err
		}
	}
	return p.Do(ctx, "PUT", fmt.Sprintf("/operator/projects/%d/datapoints/%s/tags", p.ProjectID, uiDatapoint),
		[]map[string]string{{"key": "units", "value": "celsius"}}, nil, true)
}

// coldPlots saves the month as a plot view and opens its link in a fresh
// page, runs times.
func coldPlots(ctx context.Context, p *Platform, b *uiBrowser, end time.Time, runs int) ([]time.Duration, error) {
	var view struct {
		ID string `json:"id"`
	}
	if err := p.Do(ctx, "POST", fmt.Sprintf("/v2/project/%d/plot-view", p.ProjectID), map[string]any{"name": "month",
		"start": end.Add(-30 * 24 * time.Hour).Format(time.RFC3339), "end": end.Format(time.RFC3339), "samplerate": "auto",
		"datapoints": []string{uiDatapoint}}, &view, false); err != nil {
		return nil, err
	}
	link := fmt.Sprintf("%s/ui/#/project/%d/view/%s", p.Base, p.ProjectID, view.ID)
	var out []time.Duration
	for range runs {
		if err := b.do("blank", chromedp.Navigate("about:blank")); err != nil {
			return nil, err
		}
		t0 := time.Now()
		if err := b.do("open the view", chromedp.Navigate(link)); err != nil {
			return nil, err
		}
		if err := b.wait("the view drawn", `document.getElementById("plot").dataset.state === "ready" && document.getElementById("plot").dataset.points !== "" && document.getElementById("view-status").textContent !== ""`, 20*time.Second); err != nil {
			return nil, err
		}
		out = append(out, time.Since(t0))
		if trace, err := uiEval[string](b, `JSON.stringify([Math.round(performance.getEntriesByType("navigation")[0].domContentLoadedEventEnd),
			...performance.getEntriesByType("resource").filter(r => r.name.includes("/v2/")).map(r => [r.name.replace(/^.*\/v2\//, "").slice(0, 40), Math.round(r.startTime), Math.round(r.responseEnd)])])`); err == nil && os.Getenv("BDP_BENCH_UI_TRACE") != "" {
			fmt.Fprintln(os.Stderr, "ui: cold open trace (ms since navigation):", trace)
		}
	}
	return out, nil
}

// livePlots uploads values one at a time and times each until drawn.
func livePlots(ctx context.Context, p *Platform, b *uiBrowser, n int) ([]time.Duration, string, error) {
	if err := b.do("last day", chromedp.Click(chromedp.CSS(`[data-range="1d"]`))); err != nil {
		return nil, "", err
	}
	if err := b.wait("a day", `document.getElementById("plot").dataset.state === "ready"`, 20*time.Second); err != nil {
		return nil, "", err
	}
	on := `(document.getElementById("live-status") || {dataset: {}}).dataset.state === "liveOn"`
	if err := b.wait("live values on", on, 15*time.Second); err != nil {
		state, _ := uiEval[string](b, `(() => { const s = document.getElementById("live-status"); return s ? s.dataset.state + ": " + s.textContent : "no live values in this UI"; })()`)
		return nil, "the UI shows no live values (" + state + ")", nil
	}
	var out []time.Duration
	for i := range n {
		v := 1000 + float64(i)/4
		t0 := time.Now()
		obs := []map[string]any{{"time": t0.UTC().Format(time.RFC3339Nano), "value": v}}
		if err := p.Do(ctx, "POST", fmt.Sprintf("/v2/project/%d/timeseries", p.ProjectID), map[string]any{uiDatapoint: obs}, nil, false); err != nil {
			return nil, "", err
		}
		if err := b.wait(fmt.Sprintf("live value %g drawn", v), `(() => { const d = document.getElementById("plot").dataset.liveDrawn;
			return d && JSON.parse(d).value === `+fmt.Sprint(v)+`; })()`, 10*time.Second); err != nil {
			return nil, "", err
		}
		raw, err := uiEval[string](b, `document.getElementById("plot").dataset.liveDrawn`)
		if err != nil {
			return nil, "", err
		}
		var drawn struct {
			At int64 `json:"at"`
		}
		if err := json.Unmarshal([]byte(raw), &drawn); err != nil {
			return nil, "", fmt.Errorf("data-live-drawn %q: %w", raw, err)
		}
		out = append(out, time.UnixMilli(drawn.At).Sub(t0))
		time.Sleep(20 * time.Millisecond)
	}
	return out, "", nil
}

// gzipSize fetches each URL and sums its gzipped size.
func gzipSize(ctx context.Context, urls []string) (int, error) {
	total := 0
	for _, u := range urls {
		req, err := http.NewRequestWithContext(ctx, "GET", u, nil)
		if err != nil {
			return 0, err
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err
		}
		body, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil {
			return 0, err
		}
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		_, _ = zw.Write(body)
		_ = zw.Close()
		total += buf.Len()
	}
	return total, nil
}

func round1(v float64) float64 { return math.Round(v*10) / 10 }
