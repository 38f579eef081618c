package bench

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
	"github.com/jackc/pgx/v5"
)

// ingestDatapoints is how many datapoints each publisher (uploader)
// writes to, one message (request) at a time.
const ingestDatapoints = 100

// ingest measures QoS 1 ingestion: o.Publishers write-user clients, each
// keeping o.Window publishes of o.PerMessage observations unacknowledged,
// for o.IngestDuration; then the same load, request for publish, over
// HTTP uploads. Each rate counts only acknowledged observations (PUBACK,
// HTTP 200), over the time until the last acknowledgement, and is checked
// against the rows PostgreSQL holds for its datapoints.
func (b *mqttBench) ingest(ctx context.Context, result map[string]any) error {
	base := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, -7)
	b.progress("ingest: %d MQTT publishers, %d publishes of %d observations in flight each, for %s",
		b.o.Publishers, b.o.Window, b.o.PerMessage, b.o.IngestDuration)
	mqttRate, mqttStored, err := b.ingestLeg(ctx, "mqtt", base, b.publishMQTT)
	if err != nil {
		return err
	}
	b.progress("ingest: %d obs/s over MQTT; now %d HTTP uploaders, %d requests in flight each", int(mqttRate), b.o.Publishers, b.o.Window)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: b.o.Publishers * b.o.Window}}
	defer client.CloseIdleConnections()
	httpRate, httpStored, err := b.ingestLeg(ctx, "http", base, func(ctx context.Context, g int, next func() (string, []byte), acked *atomic.Int64) error {
		return b.uploadIngest(ctx, client, g, next, acked)
	})
	if err != nil {
		return err
	}
	result["publishers"] = b.o.Publishers
	result["per_message"] = b.o.PerMessage
	result["window"] = b.o.Window
	result["mqtt_ingest_obs_per_s"] = int(mqttRate)
	result["mqtt_ingest_stored"] = mqttStored
	result["http_upload_stored"] = httpStored
	result["http_upload_obs_per_s"] = int(httpRate)
	b.progress("ingest: MQTT %d obs/s, HTTP %d obs/s", int(mqttRate), int(httpRate))
	return nil
}

// sender sends what next gives until next returns an empty topic, adding
// each acknowledged message's observations to acked.
type sender func(ctx context.Context, g int, next func() (topic string, payload []byte), acked *atomic.Int64) error

// ingestLeg runs one sender per publisher until o.IngestDuration has
// passed and everything sent is acknowledged, verifies the stored rows
// and returns the acknowledged observations per second and the rows
// stored (as many as were acknowledged, or an error).
func (b *mqttBench) ingestLeg(ctx context.Context, leg string, base time.Time, send sender) (float64, int64, error) {
	var acked atomic.Int64
	errs := make(chan error, b.o.Publishers)
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(b.o.IngestDuration)
	for g := 0; g < b.o.Publishers; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := 0
			next := func() (string, []byte) {
				if time.Now().After(deadline) || ctx.Err() != nil {
					return "", nil
				}
				dp := fmt.Sprintf("%s-%02d-%03d", leg, g, m%ingestDatapoints)
				payload := ingestPayload(base, (m/ingestDatapoints)*b.o.PerMessage, b.o.PerMessage)
				m++
				return dp, payload
			}
			if err := send(ctx, g, next, &acked); err != nil {
				errs <- fmt.Errorf("%s %d: %w", leg, g, err)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start).Seconds()
	close(errs)
	if err := <-errs; err != nil {
		return 0, 0, err
	}
	stored, err := b.storedOf(ctx, leg+"-%")
	if err != nil {
		return 0, 0, err
	}
	if stored != acked.Load() {
		return 0, 0, fmt.Errorf("%s: %d observations acknowledged, %d stored", leg, acked.Load(), stored)
	}
	return float64(acked.Load()) / elapsed, stored, nil
}

// ingestPayload is one message: n observations, a second apart from
// second first after base.
func ingestPayload(base time.Time, first, n int) []byte {
	buf := make([]byte, 0, n*52)
	buf = append(buf, '[')
	for i := 0; i < n; i++ {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, `{"time":"`...)
		buf = base.Add(time.Duration(first+i)*time.Second).AppendFormat(buf, time.RFC3339)
		buf = append(buf, `","value":`...)
		buf = strconv.AppendInt(buf, int64(i), 10)
		buf = append(buf, '}')
	}
	return append(buf, ']')
}

// publishMQTT publishes through one paho client with o.Window publishes
// in flight: tokens queue in the order sent, and one goroutine waits for
// them in that order (the broker acknowledges in about that order).
func (b *mqttBench) publishMQTT(ctx context.Context, g int, next func() (string, []byte), acked *atomic.Int64) error {
	client := b.pahoClient("ingest-pub-"+strconv.Itoa(g), b.writer, func(err error) {
		b.progress("ingest: publisher %d lost its connection: %v", g, err)
	})
	if err := wait(ctx, client.Connect()); err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer client.Disconnect(250)
	prefix := "project/" + strconv.FormatInt(b.ProjectID, 10) + "/datapoint/"
	inflight := make(chan paho.Token, b.o.Window)
	var waitErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		for t := range inflight {
			if err := wait(ctx, t); err != nil {
				waitErr = cmpErr(waitErr, err)
				continue
			}
			acked.Add(int64(b.o.PerMessage))
		}
	}()
	for {
		dp, payload := next()
		if dp == "" {
			break
		}
		inflight <- client.Publish(prefix+dp, 1, false, payload)
	}
	close(inflight)
	<-done
	return waitErr
}

// uploadIngest is publishMQTT's counterpart over HTTP: o.Window requests
// of one datapoint's o.PerMessage observations in flight at once.
func (b *mqttBench) uploadIngest(ctx context.Context, client *http.Client, g int, next func() (string, []byte), acked *atomic.Int64) error {
	path := b.Base + "/v2/project/" + strconv.FormatInt(b.ProjectID, 10) + "/timeseries"
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
		slots    = make(chan struct{}, b.o.Window)
	)
	for {
		dp, payload := next()
		if dp == "" {
			break
		}
		body := make([]byte, 0, len(payload)+len(dp)+8)
		body = append(append(append(append(body, `{"`...), dp...), `":`...), payload...)
		body = append(body, '}')
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			if err := b.upload(ctx, client, path, body); err != nil {
				mu.Lock()
				firstErr = cmpErr(firstErr, err)
				mu.Unlock()
				return
			}
			acked.Add(int64(b.o.PerMessage))
		}()
	}
	wg.Wait()
	return firstErr
}

// storedOf counts the stored observations of the bench project's
// datapoints whose dataPointID is LIKE pattern.
func (b *mqttBench) storedOf(ctx context.Context, pattern string) (int64, error) {
	conn, err := pgx.Connect(ctx, b.DBURL)
	if err != nil {
		return 0, err
	}
	defer conn.Close(ctx)
	var n int64
	err = conn.QueryRow(ctx, `SELECT count(*) FROM observations o JOIN datapoints d ON d.id = o.datapoint
		WHERE d.project_id = $1 AND d.datapoint_id LIKE $2`, b.ProjectID, pattern).Scan(&n)
	return n, err
}
