package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// pacedIngest uploads rate observations a second over HTTP beside the
// weekly batch, the way gateways do: every ingestTick one upload of the
// observations due, each on a goroutine of its own, at most
// ingestInFlight at once. A tick that finds every slot taken is skipped,
// not made up later: bdp serve that cannot keep up shows as throughput
// below the rate in the window where it happened, not as a burst in the
// next one. Every answered upload is kept with when it was answered, so
// the throughput and latency of any window can be read afterwards.
//
// The uploads carry a bearer token, as a gateway does once logged in.
// With Basic credentials every upload would depend on bdp's credentials
// cache, whose entry expires a minute after the password was verified:
// the uploads in flight then wait for one argon2id verification on a busy
// machine, a stall of 0.2 to 0.9 s once a minute, which would land in the
// batch's window or in the baseline's by chance.
type pacedIngest struct {
	url, authorization string
	rate, datapoints   int
	client             *http.Client

	mu      sync.Mutex
	uploads []ingestUpload
	skipped int
	failed  int
	lastErr error
}

// ingestUpload is one answered upload: when it was sent and answered
// (since the ingest began) and how many observations it carried.
type ingestUpload struct {
	sent, answered time.Duration
	n              int
}

const (
	ingestTick     = 10 * time.Millisecond
	ingestInFlight = 64
)

func newPacedIngest(ctx context.Context, p *Platform, project int64, rate, datapoints int) (*pacedIngest, error) {
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	if err := p.Do(ctx, "POST", "/v2/auth/token", nil, &tok, false); err != nil {
		return nil, err
	}
	if tok.AccessToken == "" {
		return nil, fmt.Errorf("POST /v2/auth/token: no access_token")
	}
	return &pacedIngest{url: fmt.Sprintf("%s/v2/project/%d/timeseries", p.Base, project),
		authorization: "Bearer " + tok.AccessToken, rate: rate, datapoints: datapoints,
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: ingestInFlight}}}, nil
}

// run uploads until ctx ends, then waits for the uploads under way. began
// is the moment the windows are measured from. Observation k goes to
// datapoint live-(k mod datapoints) at second k/datapoints after a day
// ago (liveBody): times are distinct per datapoint and in order.
func (g *pacedIngest) run(ctx context.Context, began time.Time) {
	perTick := max(1, int(float64(g.rate)*ingestTick.Seconds()))
	base := began.UTC().Truncate(time.Hour).Add(-24 * time.Hour)
	slots := make(chan struct{}, ingestInFlight)
	var wg sync.WaitGroup
	var k int64
	for tick := 1; ctx.Err() == nil; tick++ {
		if d := time.Until(began.Add(time.Duration(tick) * ingestTick)); d > 0 {
			select {
			case <-time.After(d):
			case <-ctx.Done():
			}
		}
		select {
		case slots <- struct{}{}:
		default:
			g.mu.Lock()
			g.skipped++
			g.mu.Unlock()
			continue
		}
		body := liveBody(k, perTick, g.datapoints, base, 21)
		k += int64(perTick)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			sent := time.Since(began)
			// Uploads under way when ctx ends finish: the windows count them.
			err := g.upload(context.WithoutCancel(ctx), body)
			done := time.Since(began)
			g.mu.Lock()
			defer g.mu.Unlock()
			if err != nil {
				g.failed++
				g.lastErr = err
				return
			}
			g.uploads = append(g.uploads, ingestUpload{sent: sent, answered: done, n: perTick})
		}()
	}
	wg.Wait()
}

func (g *pacedIngest) upload(ctx context.Context, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, "POST", g.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", g.authorization)
	res, err := g.client.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	answer, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 {
		return fmt.Errorf("upload: HTTP %d: %.300s", res.StatusCode, answer)
	}
	return nil
}

// ingestWindow is the ingest's figures over [from, to): observations
// answered per second, and the latency of the uploads sent in it.
type ingestWindow struct {
	obsPerS      float64
	p50MS, p99MS float64
	uploads      int // sent in the window
}

func (g *pacedIngest) window(from, to time.Duration) ingestWindow {
	g.mu.Lock()
	defer g.mu.Unlock()
	var w ingestWindow
	var obs int
	var lat []float64
	for _, u := range g.uploads {
		if u.answered >= from && u.answered < to {
			obs += u.n
		}
		if u.sent >= from && u.sent < to {
			lat = append(lat, float64((u.answered-u.sent).Microseconds())/1000)
		}
	}
	if to > from {
		w.obsPerS = float64(int(float64(obs) / (to - from).Seconds()))
	}
	w.uploads = len(lat)
	w.p50MS, w.p99MS = percentileMS(lat, 0.5), percentileMS(lat, 0.99)
	return w
}

// err is the last failed upload's error with how many failed, nil if none.
func (g *pacedIngest) err() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.failed == 0 {
		return nil
	}
	return fmt.Errorf("%d uploads failed; the last: %w", g.failed, g.lastErr)
}

// timeline is the slowest upload sent in each second from the start, in
// ms: where a window's p99 comes from.
func (g *pacedIngest) timeline() []int {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []int
	for _, u := range g.uploads {
		s := int(u.sent / time.Second)
		for len(out) <= s {
			out = append(out, 0)
		}
		out[s] = max(out[s], int((u.answered - u.sent).Milliseconds()))
	}
	return out
}
