package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/segmentio/kafka-go"
)

// IngestOptions shape the Kafka ingestion scenario.
type IngestOptions struct {
	Brokers      []string
	Observations int // in all; default 2,000,000
	Datapoints   int // default 10,000
	Gateways     int // concurrent producers; default 4
	PerMessage   int // observations per Kafka message (a gateway's batch); default 100
}

// Ingest produces observations through Kafka as field gateways would,
// waits until bdp serve has stored all of them, then loads the same rows
// with a raw pgx CopyFrom into a fresh table of the same shape in the same
// database, and compares the two rates.
func Ingest(ctx context.Context, opts Options, in IngestOptions) (map[string]any, error) {
	fillIngestDefaults(&in)
	topic := fmt.Sprintf("bench.observations.%d", time.Now().UnixNano())
	if err := createTopic(ctx, in.Brokers[0], topic, 4); err != nil {
		return nil, err
	}
	opts.Env = append(opts.Env, "BDP_KAFKA_BROKERS="+strings.Join(in.Brokers, ","), "BDP_KAFKA_TOPIC="+topic,
		"BDP_KAFKA_GROUP="+topic)
	p, err := Start(ctx, opts)
	if err != nil {
		return nil, err
	}
	defer p.Close()

	start := time.Now()
	if err := produce(ctx, in, topic, p.ProjectID); err != nil {
		return nil, err
	}
	produced := time.Since(start)
	if err := p.waitStoredKafka(ctx, in.Observations, 10*time.Minute); err != nil {
		return nil, err
	}
	elapsed := time.Since(start)
	stored, err := p.countObservations(ctx)
	if err != nil {
		return nil, err
	}
	if stored != int64(in.Observations) {
		return nil, fmt.Errorf("stored %d observations, produced %d", stored, in.Observations)
	}
	copySeconds, err := p.rawCopy(ctx)
	if err != nil {
		return nil, err
	}
	obsPerS := float64(in.Observations) / elapsed.Seconds()
	copyPerS := float64(in.Observations) / copySeconds
	return map[string]any{
		"scenario": "ingest", "observations": in.Observations, "datapoints": in.Datapoints, "gateways": in.Gateways,
		"produce_seconds": round(produced.Seconds()), "seconds": round(elapsed.Seconds()),
		"obs_per_s": int(obsPerS), "copy_obs_per_s": int(copyPerS), "ratio_vs_copy": round(obsPerS / copyPerS),
	}, nil
}

func fillIngestDefaults(in *IngestOptions) {
	if in.Observations == 0 {
		in.Observations = 2_000_000
	}
	if in.Datapoints == 0 {
		in.Datapoints = 10_000
	}
	if in.Gateways == 0 {
		in.Gateways = 4
	}
	if in.PerMessage == 0 {
		in.PerMessage = 100
	}
}

func round(x float64) float64 { return float64(int(x*1000)) / 1000 }

func createTopic(ctx context.Context, broker, topic string, partitions int) error {
	conn, err := kafka.DialContext(ctx, "tcp", broker)
	if err != nil {
		return fmt.Errorf("dial kafka: %w", err)
	}
	defer conn.Close()
	ctrl, err := conn.Controller()
	if err != nil {
		return err
	}
	cc, err := kafka.DialContext(ctx, "tcp", net.JoinHostPort(ctrl.Host, strconv.Itoa(ctrl.Port)))
	if err != nil {
		return err
	}
	defer cc.Close()
	return cc.CreateTopics(kafka.TopicConfig{Topic: topic, NumPartitions: partitions, ReplicationFactor: 1})
}

// produce sends the observations from in.Gateways concurrent producers;
// gateway g owns every Gateways-th datapoint, and each message carries
// PerMessage consecutive observations of one datapoint, one a minute.
func produce(ctx context.Context, in IngestOptions, topic string, project int64) error {
	perDP := in.Observations / in.Datapoints
	base := time.Now().UTC().Truncate(24 * time.Hour).Add(-time.Duration(perDP) * time.Minute)
	var wg sync.WaitGroup
	errs := make(chan error, in.Gateways)
	for g := 0; g < in.Gateways; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			w := &kafka.Writer{Addr: kafka.TCP(in.Brokers...), Topic: topic, Balancer: &kafka.Hash{},
				RequiredAcks: kafka.RequireAll, BatchSize: 1000, BatchBytes: 900 << 10, BatchTimeout: 2 * time.Millisecond,
				Transport: &kafka.Transport{}}
			defer w.Close()
			var msgs []kafka.Message
			for dp := g; dp < in.Datapoints; dp += in.Gateways {
				name := fmt.Sprintf("gw%d/dp%05d", g, dp)
				for first := 0; first < perDP; first += in.PerMessage {
					msgs = append(msgs, message(project, name, base, first, min(in.PerMessage, perDP-first)))
				}
				if len(msgs) >= 2000 {
					if err := w.WriteMessages(ctx, msgs...); err != nil {
						errs <- err
						return
					}
					msgs = msgs[:0]
				}
			}
			if err := w.WriteMessages(ctx, msgs...); err != nil {
				errs <- err
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	return <-errs
}

func message(project int64, dp string, base time.Time, first, n int) kafka.Message {
	type obs struct {
		ProjectID   int64   `json:"project_id"`
		DataPointID string  `json:"dataPointID"`
		Time        string  `json:"time"`
		Value       float64 `json:"value"`
	}
	batch := make([]obs, n)
	for i := range batch {
		batch[i] = obs{project, dp, base.Add(time.Duration(first+i) * time.Minute).Format(time.RFC3339), float64(rand.IntN(10000)) / 100}
	}
	b, _ := json.Marshal(batch)
	return kafka.Message{Key: []byte(fmt.Sprintf("%d/%s", project, dp)), Value: b}
}

// waitStoredKafka polls bdp's own counter, which costs the database
// nothing, until n observations from Kafka are stored.
func (p *Platform) waitStoredKafka(ctx context.Context, n int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		got, err := p.metric(ctx, `bdp_pipeline_observations_stored_total{source="kafka"}`)
		if err == nil && got >= float64(n) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return fmt.Errorf("not all %d observations stored within %s:\n%s", n, timeout, p.log)
}

func (p *Platform) metric(ctx context.Context, series string) (float64, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", p.Base+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, series+" ") {
			return strconv.ParseFloat(strings.TrimSpace(strings.TrimPrefix(line, series)), 64)
		}
	}
	return 0, nil
}

func (p *Platform) countObservations(ctx context.Context) (int64, error) {
	conn, err := pgx.Connect(ctx, p.DBURL)
	if err != nil {
		return 0, err
	}
	defer conn.Close(ctx)
	var n int64
	err = conn.QueryRow(ctx, `SELECT count(*) FROM observations`).Scan(&n)
	return n, err
}

// rawCopy reads the stored rows and times loading them with one CopyFrom
// into a fresh partitioned table shaped like observations. The rows go in
// as live data arrives, minute by minute across all datapoints, not in
// the index's order, which would flatter the copy.
func (p *Platform) rawCopy(ctx context.Context) (float64, error) {
	conn, err := pgx.Connect(ctx, p.DBURL)
	if err != nil {
		return 0, err
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT datapoint, time, value FROM observations ORDER BY time, datapoint`)
	if err != nil {
		return 0, err
	}
	data, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) ([]any, error) {
		var dp int64
		var t time.Time
		var v float64
		err := r.Scan(&dp, &t, &v)
		return []any{dp, t, v}, err
	})
	if err != nil {
		return 0, err
	}
	var lo, hi time.Time
	if err := conn.QueryRow(ctx, `SELECT min(time), max(time) FROM observations`).Scan(&lo, &hi); err != nil {
		return 0, err
	}
	if _, err := conn.Exec(ctx, `CREATE TABLE copy_target (LIKE observations INCLUDING ALL) PARTITION BY RANGE (time)`); err != nil {
		return 0, err
	}
	for w := lo.UTC().Truncate(24*time.Hour).AddDate(0, 0, -7); !w.After(hi); w = w.AddDate(0, 0, 7) {
		if _, err := conn.Exec(ctx, fmt.Sprintf(`CREATE TABLE copy_target_%d PARTITION OF copy_target FOR VALUES FROM ('%s') TO ('%s')`,
			w.Unix(), w.Format(time.RFC3339), w.AddDate(0, 0, 7).Format(time.RFC3339))); err != nil {
			return 0, err
		}
	}
	start := time.Now()
	if _, err := conn.CopyFrom(ctx, pgx.Identifier{"copy_target"}, []string{"datapoint", "time", "value"}, pgx.CopyFromRows(data)); err != nil {
		return 0, err
	}
	return time.Since(start).Seconds(), nil
}
