package pipeline

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// BenchmarkBatcherThroughput writes 10,000 datapoints' worth of new
// observations from 4 concurrent writers, 1,000 per request, and reports
// observations per second through the whole pipeline into PostgreSQL.
func BenchmarkBatcherThroughput(b *testing.B) {
	db := newTestDB(b)
	bt := startBatcherB(b, db)
	const writers, per = 4, 1000
	total := 0
	start := time.Now()
	for i := 0; b.Loop(); i++ {
		var wg sync.WaitGroup
		for w := 0; w < writers; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				obs := make([]Observation, per)
				for k := range obs {
					obs[k] = Observation{ProjectID: db.projectID, DataPointID: fmt.Sprintf("dp%d", (w*per+k)%10000),
						Time: t0.Add(time.Duration(i) * time.Second), Value: float64(k)}
				}
				if err := bt.Write(context.Background(), SourceKafka, obs); err != nil {
					b.Error(err)
				}
			}(w)
		}
		wg.Wait()
		total += writers * per
	}
	b.ReportMetric(float64(total)/time.Since(start).Seconds(), "obs/s")
}

func startBatcherB(b *testing.B, db *testDB) *Batcher {
	bt, err := NewBatcher(BatcherConfig{}, db.store, NewRouter(), prometheus.NewRegistry())
	if err != nil {
		b.Fatal(err)
	}
	go bt.Run()
	b.Cleanup(bt.Stop)
	return bt
}

// BenchmarkRoute routes a committed batch of 10,000 observations of 1,000
// datapoints, half of them subscribed, as the writer goroutine does after
// every commit (route and its run building, without the store).
func BenchmarkRoute(b *testing.B) {
	r := NewRouter()
	var sink discard
	const dps, per = 1000, 10
	for d := 0; d < dps; d += 2 {
		r.Attach(1, fmt.Sprintf("dp%d", d), &sink)
	}
	bt := keysOnlyBatcher()
	obs := make([]Observation, 0, dps*per)
	for i := 0; i < per; i++ {
		for d := 0; d < dps; d++ {
			obs = append(obs, Observation{ProjectID: 1, DataPointID: fmt.Sprintf("dp%d", d), Time: t0.Add(time.Duration(i) * time.Second)})
		}
	}
	for d := 0; d < dps; d++ {
		bt.ids[dpKey{1, fmt.Sprintf("dp%d", d)}] = int64(dps - d)
	}
	batch := []*writeRequest{{obs: obs}}
	keys := bt.inputs.sortKeys(batch)
	b.ReportAllocs()
	for b.Loop() {
		r.route(batch, keys, &runScratch{})
	}
}

type discard struct{}

func (*discard) Deliver([]Observation) {}
