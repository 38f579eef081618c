package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/openbdp/bdp/store"
)

// The export scenario: GET /v2/datapoint/timeseries against a loaded
// observations table, the two reads a dashboard makes all day.
//
//   - last1000: no start, end or max: the newest 1000 observations of a
//     random datapoint.
//   - hourly30d: 30 days of a random datapoint with minute data, sampled to
//     hourly means: 43,200 observations in, 720 means out.
//
// The data goes in with COPY (through the store, as ingestion writes it),
// not through HTTP: loading is not what is measured. The default is 20
// datapoints with 1,000,000 minutes each, about two years of weekly
// partitions, so the newest-1000 read plans over ~100 partitions as a
// long-lived installation would.

// ExportOptions configure the export scenario.
type ExportOptions struct {
	Binary     string
	Datapoints int       // default 20
	Rows       int       // observations per datapoint; default 1,000,000
	Requests   int       // per measurement; default 200
	Progress   io.Writer // progress lines; nil for none
}

// exportEnd is where the loaded data ends: a fixed time, so runs compare.
var exportEnd = time.Date(2025, 1, 6, 0, 0, 0, 0, time.UTC)

// Export runs the scenario and returns its figures.
// minExportRows is the fewest rows per datapoint the hourly query can use.
const minExportRows = (30*24 + 2) * 60

func Export(ctx context.Context, o ExportOptions) (map[string]any, error) {
	if o.Datapoints <= 0 {
		o.Datapoints = 20
	}
	if o.Rows <= 0 {
		o.Rows = 1_000_000
	}
	if o.Requests <= 0 {
		o.Requests = 200
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	// The hourly query reads 30 days starting on a whole hour after the
	// first row: the rows must reach past 30 days by two hours to leave
	// it a start to choose.
	if o.Rows < minExportRows {
		return nil, fmt.Errorf("rows per datapoint must cover 30 days and 2 hours of minutes (%d), got %d", minExportRows, o.Rows)
	}
	p, err := Start(ctx, Options{Binary: o.Binary})
	if err != nil {
		return nil, err
	}
	defer p.Close()

	began := time.Now()
	names, err := loadExport(ctx, p, o)
	if err != nil {
		return nil, err
	}
	loadTook := time.Since(began)
	fmt.Fprintf(o.Progress, "loaded %d rows in %s\n", o.Datapoints*o.Rows, loadTook.Round(time.Second))

	c := newExportClient(p)
	first := exportEnd.Add(-time.Duration(o.Rows) * time.Minute)
	rng := rand.New(rand.NewPCG(1, 2))
	last1000 := func() (string, int) {
		return exportQuery(p.ProjectID, names[rng.IntN(len(names))]), 1000
	}
	hourly := func() (string, int) {
		hours := int(exportEnd.Sub(first)/time.Hour) - 30*24
		start := first.Truncate(time.Hour).Add(time.Duration(1+rng.IntN(hours-1)) * time.Hour)
		return exportQuery(p.ProjectID, names[rng.IntN(len(names))], "start", start.Format(time.RFC3339),
			"end", start.Add(30*24*time.Hour).Format(time.RFC3339), "samplerate", "1h"), 720
	}
	// Warm up: credentials cache, connection, plan caches, pages.
	for range 50 {
		for _, q := range []func() (string, int){last1000, hourly} {
			if _, err := c.get(ctx, q); err != nil {
				return nil, err
			}
		}
	}
	l, err := c.measure(ctx, o.Requests, last1000)
	if err != nil {
		return nil, err
	}
	h, err := c.measure(ctx, o.Requests, hourly)
	if err != nil {
		return nil, err
	}
	return map[string]any{
		"scenario": "export", "rows": o.Datapoints * o.Rows, "datapoints": o.Datapoints, "requests": o.Requests,
		"load_s":          math.Round(loadTook.Seconds()),
		"last1000_p50_ms": ms(percentile(l, 50)), "last1000_p99_ms": ms(percentile(l, 99)),
		"hourly30d_p50_ms": ms(percentile(h, 50)), "hourly30d_p99_ms": ms(percentile(h, 99)),
	}, nil
}

// loadExport creates the datapoints through the operator API, copies the
// observations in, and vacuums, so that reads are index-only as on a
// platform whose autovacuum has caught up.
func loadExport(ctx context.Context, p *Platform, o ExportOptions) ([]string, error) {
	names := make([]string, o.Datapoints)
	for i := range names {
		names[i] = fmt.Sprintf("building/ahu-%02d/supply-temp", i+1)
		err := p.Do(ctx, "PUT", fmt.Sprintf("/operator/projects/%d/datapoints/%s/tags", p.ProjectID, url.PathEscape(names[i])),
			[]map[string]string{{"key": "units", "value": "celsius"}}, nil, true)
		if err != nil {
			return nil, err
		}
	}
	st, err := store.Open(ctx, p.DBURL)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	ids, err := st.EnsureDatapoints(ctx, p.ProjectID, names)
	if err != nil {
		return nil, err
	}
	first := exportEnd.Add(-time.Duration(o.Rows) * time.Minute)
	if err := st.EnsurePartitions(ctx, first, exportEnd); err != nil {
		return nil, err
	}
	// Two writers: the COPY of one datapoint keeps a core busy with index
	// maintenance, the other builds the next batch.
	work := make(chan string)
	errs := make(chan error, 2)
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for name := range work {
				if err := copyMinutes(ctx, st, ids[name], first, o.Rows); err != nil {
					errs <- fmt.Errorf("load %s: %w", name, err)
					return
				}
				fmt.Fprintf(o.Progress, "loaded %s\n", name)
			}
		}()
	}
	for _, n := range names {
		select {
		case work <- n:
		case err := <-errs:
			close(work)
			wg.Wait()
			return nil, err
		}
	}
	close(work)
	wg.Wait()
	select {
	case err := <-errs:
		return nil, err
	default:
	}
	conn, err := pgx.Connect(ctx, p.DBURL)
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	// The throwaway cluster commits asynchronously, and VACUUM marks a page
	// all-visible only once its rows' commits are flushed: CHECKPOINT
	// flushes them first.
	for _, sql := range []string{`CHECKPOINT`, `VACUUM (ANALYZE) observations`} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			return nil, fmt.Errorf("%s: %w", sql, err)
		}
	}
	return names, nil
}

// copyMinutes writes rows observations of one datapoint, one a minute
// from first, in batches of a week's worth.
func copyMinutes(ctx context.Context, st *store.Store, dp int64, first time.Time, rows int) error {
	const batch = 7 * 24 * 60
	buf := make([]store.Row, 0, batch)
	for i := 0; i < rows; i++ {
		t := first.Add(time.Duration(i) * time.Minute)
		// A daily temperature curve with a little noise.
		v := 20 + 3*math.Sin(2*math.Pi*float64(i%1440)/1440) + float64(i%7)*0.1
		buf = append(buf, store.Row{Datapoint: dp, Time: t, Value: math.Round(v*100) / 100})
		if len(buf) == batch || i == rows-1 {
			if err := st.WriteObservations(ctx, buf); err != nil {
				return err
			}
			buf = buf[:0]
		}
	}
	return nil
}

func exportQuery(projectID int64, dp string, kv ...string) string {
	q := url.Values{"project_id": {strconv.FormatInt(projectID, 10)}, "dataPointID": {dp}}
	for i := 0; i+1 < len(kv); i += 2 {
		q.Set(kv[i], kv[i+1])
	}
	return "/v2/datapoint/timeseries?" + q.Encode()
}

// exportClient sends GETs as the platform's admin over one kept-alive
// connection, as a dashboard backend would.
type exportClient struct {
	p  *Platform
	hc *http.Client
}

func newExportClient(p *Platform) *exportClient {
	return &exportClient{p: p, hc: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}, Timeout: time.Minute}}
}

// get sends one request, checks the answer holds want points and returns
// how long it took, up to the last byte of the body.
func (c *exportClient) get(ctx context.Context, next func() (string, int)) (time.Duration, error) {
	path, want := next()
	req, err := http.NewRequestWithContext(ctx, "GET", c.p.Base+path, nil)
	if err != nil {
		return 0, err
	}
	req.SetBasicAuth(c.p.Email, c.p.Password)
	began := time.Now()
	res, err := c.hc.Do(req)
	if err != nil {
		return 0, err
	}
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	took := time.Since(began)
	if err != nil {
		return 0, err
	}
	if res.StatusCode != 200 {
		return 0, fmt.Errorf("GET %s: HTTP %d: %.300s", path, res.StatusCode, body)
	}
	var a struct {
		Data []json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &a); err != nil || len(a.Data) != want {
		return 0, fmt.Errorf("GET %s: want %d points, got %d (%v)", path, want, len(a.Data), err)
	}
	return took, nil
}

func (c *exportClient) measure(ctx context.Context, n int, next func() (string, int)) ([]time.Duration, error) {
	out := make([]time.Duration, 0, n)
	for range n {
		d, err := c.get(ctx, next)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// percentile by the nearest-rank method; 0 of none.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(math.Ceil(p/100*float64(len(s)))) - 1
	return s[max(i, 0)]
}

func ms(d time.Duration) float64 { return math.Round(float64(d)/1e4) / 100 }
