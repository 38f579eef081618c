package bench

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
)

// liveTick is how often the live part uploads: 20,000 obs/s become 100
// uploads of 200 observations a second, each a few kilobytes.
const liveTick = 10 * time.Millisecond

// live connects o.Subscribers QoS 1 subscribers to project/{p}/#, uploads
// o.LiveRate observations/s over HTTP for o.Duration and reports how many
// of them every subscriber received, and how late.
//
// Latency: every observation's value is the moment its upload was sent,
// in microseconds since the run began (one clock, this process's
// monotonic one). A subscriber keeps, per message, that value and the
// moment the message arrived. live_p50_ms and live_p99_ms are stored ->
// received, the figure: arrival minus the moment the upload's
// answer came back, which bdp sends once the observations are committed
// (a message that arrives before the answer counts 0). They leave out the
// upload's own time; live_from_send_p99_ms, beside them, counts from
// before the upload was sent and includes it (upload_p99_ms is that
// part).
func (b *mqttBench) live(ctx context.Context, result map[string]any) error {
	epoch := time.Now()
	subs := make([]*liveSubscriber, b.o.Subscribers)
	for i := range subs {
		s, err := b.subscribe(ctx, i, epoch)
		if err != nil {
			return err
		}
		defer s.close()
		subs[i] = s
	}
	before, err := b.metrics(ctx, liveDropSeries...)
	if err != nil {
		return err
	}
	b.progress("live: %d subscribers, uploading %d obs/s over %d datapoints for %s", len(subs), b.o.LiveRate, b.o.LiveDatapoints, b.o.Duration)
	up, err := b.uploadLive(ctx, epoch)
	if err != nil {
		return err
	}
	want := up.observations * int64(len(subs))
	received := b.drainLive(ctx, subs, want)
	after, err := b.metrics(ctx, liveDropSeries...)
	if err != nil {
		return err
	}
	var fromSend, fromStored latencies
	var bad int64
	for _, s := range subs {
		s.mu.Lock()
		for _, m := range s.samples {
			fromSend.add(m.received - m.sent)
			if acked, ok := up.acked[m.sent]; ok {
				fromStored.add(max(0, m.received-acked))
			}
		}
		s.mu.Unlock()
		bad += s.malformed.Load()
	}
	result["subscribers"] = len(subs)
	result["live_rate_asked"] = b.o.LiveRate
	result["live_rate_uploaded"] = int(float64(up.observations) / up.seconds)
	result["live_uploaded"] = up.observations
	result["live_received"] = received
	result["live_malformed"] = bad
	result["delivered_ratio"] = float64(int(float64(received)/float64(want)*10000)) / 10000
	result["live_p50_ms"] = fromStored.percentile(0.50)
	result["live_p99_ms"] = fromStored.percentile(0.99)
	result["live_max_ms"] = fromStored.percentile(1)
	result["live_from_send_p50_ms"] = fromSend.percentile(0.50)
	result["live_from_send_p99_ms"] = fromSend.percentile(0.99)
	result["upload_p99_ms"] = up.latencies.percentile(0.99)
	for _, s := range liveDropSeries {
		result[s] = after[s] - before[s]
	}
	b.progress("live: delivered %d of %d, p50 %.2f ms, p99 %.2f ms", received, want, result["live_p50_ms"], result["live_p99_ms"])
	return nil
}

// liveDropSeries are bdp's counters of live messages it gave up on.
var liveDropSeries = []string{"bdp_mqtt_live_dropped_total", "bdp_mqtt_live_failed_total",
	"bdp_mqtt_messages_dropped_total", "bdp_mqtt_inflight_dropped_total"}

type liveSubscriber struct {
	close     func()
	epoch     time.Time
	received  atomic.Int64
	malformed atomic.Int64
	mu        sync.Mutex
	samples   []liveSample
}

// liveSample is one message: when its upload was sent and when it
// arrived, in microseconds since the run began.
type liveSample struct{ sent, received int64 }

// receive records one live message.
func (s *liveSubscriber) receive(payload []byte) {
	now := time.Since(s.epoch).Microseconds()
	sent, ok := liveValue(payload)
	if !ok {
		s.malformed.Add(1)
		return
	}
	s.mu.Lock()
	s.samples = append(s.samples, liveSample{sent: sent, received: now})
	s.mu.Unlock()
	s.received.Add(1)
}

// subscribe connects subscriber i, a paho client or, with
// o.RawSubscribers, the bench's own minimal one (mqtt_rawsub.go).
func (b *mqttBench) subscribe(ctx context.Context, i int, epoch time.Time) (*liveSubscriber, error) {
	s := &liveSubscriber{epoch: epoch}
	id := "live-sub-" + strconv.Itoa(i)
	filter := "project/" + strconv.FormatInt(b.ProjectID, 10) + "/#"
	if b.o.RawSubscribers {
		close, err := b.rawSubscribe(ctx, id, filter, s.receive)
		if err != nil {
			return nil, fmt.Errorf("subscriber %d: %w", i, err)
		}
		s.close = close
		return s, nil
	}
	client := b.pahoClient(id, b.reader, func(err error) {
		b.progress("live: subscriber %d lost its connection: %v", i, err)
	})
	if err := wait(ctx, client.Connect()); err != nil {
		return nil, fmt.Errorf("subscriber %d: connect: %w", i, err)
	}
	s.close = func() { client.Disconnect(100) }
	if err := wait(ctx, client.Subscribe(filter, 1, func(_ paho.Client, m paho.Message) { s.receive(m.Payload()) })); err != nil {
		s.close()
		return nil, fmt.Errorf("subscriber %d: subscribe: %w", i, err)
	}
	return s, nil
}

// liveValue reads the value of a live message {"time": ..., "value": v}
// without decoding all of it: this process must keep up with 10 times
// the upload rate.
func liveValue(payload []byte) (int64, bool) {
	i := bytes.Index(payload, []byte(`"value":`))
	if i < 0 {
		return 0, false
	}
	v := bytes.TrimRight(bytes.TrimSpace(payload[i+len(`"value":`):]), "}")
	f, err := strconv.ParseFloat(string(bytes.TrimSpace(v)), 64)
	return int64(f), err == nil
}

func wait(ctx context.Context, t paho.Token) error {
	select {
	case <-t.Done():
		return t.Error()
	case <-ctx.Done():
		return ctx.Err()
	}
}

type liveUploads struct {
	observations int64
	seconds      float64
	latencies    latencies
	acked        map[int64]int64 // an upload's value (its send time) -> when its answer came, µs since the run began
}

// uploadLive uploads every liveTick the observations due, each request
// on a goroutine of its own (at most 64 at once), until o.Duration has
// passed. Datapoint k%n gets observation k at second k/n of a day ago:
// times are distinct per datapoint and in order.
func (b *mqttBench) uploadLive(ctx context.Context, epoch time.Time) (liveUploads, error) {
	perTick := max(1, int(float64(b.o.LiveRate)*liveTick.Seconds()))
	base := time.Now().UTC().Truncate(time.Hour).Add(-24 * time.Hour)
	path := b.Base + "/v2/project/" + strconv.FormatInt(b.ProjectID, 10) + "/timeseries"
	var (
		up       = liveUploads{acked: map[int64]int64{}}
		mu       sync.Mutex
		firstErr error
		wg       sync.WaitGroup
		slots    = make(chan struct{}, 64)
		k        int64
	)
	start := time.Now()
	for tick := 0; time.Since(start) < b.o.Duration; tick++ {
		if d := time.Until(start.Add(time.Duration(tick) * liveTick)); d > 0 {
			time.Sleep(d)
		}
		mu.Lock()
		failed := firstErr
		mu.Unlock()
		if failed != nil || ctx.Err() != nil {
			break
		}
		slots <- struct{}{}
		sentValue := time.Since(epoch).Microseconds()
		body := liveBody(k, perTick, b.o.LiveDatapoints, base, sentValue)
		k += int64(perTick)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			sent := time.Now()
			err := b.upload(ctx, b.http, path, body)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				firstErr = cmpErr(firstErr, err)
				return
			}
			up.observations += int64(perTick)
			up.latencies.add(time.Since(sent).Microseconds())
			up.acked[sentValue] = time.Since(epoch).Microseconds()
		}()
	}
	wg.Wait()
	up.seconds = time.Since(start).Seconds()
	if firstErr == nil {
		firstErr = ctx.Err()
	}
	return up, firstErr
}

func cmpErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

// liveBody is one upload: observations first..first+n-1, grouped by
// datapoint as the upload's object wants them, all with value sent.
func liveBody(first int64, n, datapoints int, base time.Time, sent int64) []byte {
	groups := map[int64][]int64{}
	var order []int64
	for k := first; k < first+int64(n); k++ {
		dp := k % int64(datapoints)
		if groups[dp] == nil {
			order = append(order, dp)
		}
		groups[dp] = append(groups[dp], k/int64(datapoints))
	}
	value := strconv.FormatInt(sent, 10)
	buf := make([]byte, 0, n*64)
	buf = append(buf, '{')
	for i, dp := range order {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = fmt.Appendf(buf, `"live-%04d":[`, dp)
		for j, sec := range groups[dp] {
			if j > 0 {
				buf = append(buf, ',')
			}
			buf = append(buf, `{"time":"`...)
			buf = base.Add(time.Duration(sec)*time.Second).AppendFormat(buf, time.RFC3339)
			buf = append(buf, `","value":`...)
			buf = append(buf, value...)
			buf = append(buf, '}')
		}
		buf = append(buf, ']')
	}
	return append(buf, '}')
}

// upload POSTs one body to the upload route as the admin, on client.
func (b *mqttBench) upload(ctx context.Context, client *http.Client, url string, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, "POST", url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.SetBasicAuth(b.Email, b.Password)
	res, err := client.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	var answer bytes.Buffer
	_, _ = answer.ReadFrom(res.Body)
	if res.StatusCode != 200 {
		return fmt.Errorf("upload: HTTP %d: %.300s", res.StatusCode, answer.Bytes())
	}
	return nil
}

// drainLive waits until the subscribers have received want messages in
// all, or nothing arrived for 2 s, or o.Drain has passed, and returns
// what they received.
func (b *mqttBench) drainLive(ctx context.Context, subs []*liveSubscriber, want int64) int64 {
	total := func() (n int64) {
		for _, s := range subs {
			n += s.received.Load()
		}
		return n
	}
	deadline := time.Now().Add(b.o.Drain)
	last, lastChange := total(), time.Now()
	for time.Now().Before(deadline) && ctx.Err() == nil {
		n := total()
		if n >= want {
			return n
		}
		if n != last {
			last, lastChange = n, time.Now()
		} else if time.Since(lastChange) > 2*time.Second {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	return total()
}

// latencies is a histogram of microseconds: 10 µs buckets up to 100 ms,
// then 1 ms buckets up to 60 s, where the last bucket takes the rest.
type latencies struct {
	buckets [10_000 + 60_000]uint32
	n       int64
}

func (l *latencies) add(us int64) {
	i := us / 10
	if us >= 100_000 {
		i = 10_000 + (us-100_000)/1000
	}
	l.buckets[min(max(i, 0), int64(len(l.buckets)-1))]++
	l.n++
}

// percentile in milliseconds, the upper bound of the bucket holding it.
func (l *latencies) percentile(p float64) float64 {
	if l.n == 0 {
		return 0
	}
	rank := int64(p*float64(l.n-1)) + 1
	var seen int64
	for i, c := range l.buckets {
		if seen += int64(c); seen >= rank {
			us := int64(i+1) * 10
			if i >= 10_000 {
				us = 100_000 + int64(i-10_000+1)*1000
			}
			return float64(us) / 1000
		}
	}
	return 0
}
