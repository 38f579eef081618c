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
