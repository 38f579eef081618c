package pipeline

import (
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
)

func TestPartitionLagsSumOverPartitions(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var p partitionLags
	steps := []struct {
		part         int
		offset, hwm  int64
		at           time.Duration
		wantTotalNow int64
	}{
		{part: 0, offset: 9, hwm: 100, at: 0, wantTotalNow: 90},               // 10..99 to go
		{part: 1, offset: 4, hwm: 10, at: time.Second, wantTotalNow: 95},      // plus 5
		{part: 0, offset: 99, hwm: 100, at: 2 * time.Second, wantTotalNow: 5}, // partition 0 caught up
		{part: 1, offset: 9, hwm: 9, at: 3 * time.Second, wantTotalNow: 0},    // a stale mark never goes negative
		{part: 2, offset: 0, hwm: 51, at: 40 * time.Second, wantTotalNow: 50}, // 0 and 1 expired
		{part: 2, offset: 50, hwm: 51, at: 41 * time.Second, wantTotalNow: 0}, //
		{part: 3, offset: 0, hwm: 8, at: 100 * time.Second, wantTotalNow: 7},  // 2 expired
	}
	for i, s := range steps {
		now := t0.Add(s.at)
		p.fetched(kafka.Message{Partition: s.part, Offset: s.offset, HighWaterMark: s.hwm}, now)
		if got := p.total(now); got != s.wantTotalNow {
			t.Fatalf("step %d: lag %d, want %d", i, got, s.wantTotalNow)
		}
	}
}
