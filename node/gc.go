package node

import (
	"bufio"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"time"
)

// bdp serve's garbage collector follows its live heap (GCTuner), unless
// the environment sets GOGC:
//
//   - GCPercent while the live heap is small. The routing of observations
//     and live MQTT delivery make garbage at every message; at Go's
//     default of 100, live MQTT out's p99 was 24.6 and 17.6 ms against
//     15.1 and 11.2 ms at 200 (10 QoS 1 subscribers under 20,000
//     observations/s, bdp-bench mqtt -parts live -raw-subscribers). And a
//     streamed CSV import of 82 MB raises the peak memory by 30 MiB at
//     200, by 186 MiB at 400: garbage may pile up to GOGC percent of the
//     live heap before a collection, so the import's bound (64 MiB,
//     TestLargestBodiesCostABoundedMultiple) holds only on a small one.
//   - GCPercentLargeHeap once it holds largeHeap or more: many running
//     virtual datapoints. Each collection then marks hundreds of MB, and
//     its mark phase takes the CPU that PostgreSQL, on the same machine,
//     needs for the commits every output waits for. At 200, 100,000
//     virtual datapoints under 100,000 observations/s (about 350 MB live)
//     collected every 10-20 s, and each 10 s of the feed holding a
//     collection had an output p99 of 60-85 ms against 12-14 ms for the
//     others (bdp-bench vdp -vdps 100000 -rate 100000,
//     latency_p99_ms_by_10s); at 400, two collections a minute, p99
//     21.7-46.6 ms over the whole feed (six runs). The heap may then grow
//     to five times its live size, about 1.9 GB at 100,000.
//
// Unless GOMEMLIMIT is set, a soft memory limit of half the machine's
// memory bounds either: past it, the collector runs more often instead.
const (
	GCPercent          = 200
	GCPercentLargeHeap = 400
	largeHeap          = 256 << 20
	// gcTuneEvery is how often the tuner reads the live heap: a node's
	// live heap changes as datapoints start and stop, not in a second.
	gcTuneEvery = 2 * time.Second
)

// GCTuner sets the collector's target from the live heap, in a goroutine
// of its own until Stop.
type GCTuner struct {
	env  string // GOGC from the environment: nothing to tune
	mu   sync.Mutex
	pct  int // what it set last
	stop chan struct{}
	done chan struct{}
	undo []func()
}

// TuneGC starts a GCTuner, sets the memory limit unless GOMEMLIMIT is set
// (when /proc/meminfo tells the machine's memory), and sets the target at
// once from the live heap now.
func TuneGC(getenv func(string) string) *GCTuner {
	t := &GCTuner{env: getenv("GOGC"), stop: make(chan struct{}), done: make(chan struct{})}
	if getenv("GOMEMLIMIT") == "" {
		if total, ok := memTotal("/proc/meminfo"); ok {
			prev := debug.SetMemoryLimit(total / 2)
			t.undo = append(t.undo, func() { debug.SetMemoryLimit(prev) })
		}
	}
	if t.env != "" {
		close(t.done)
		return t
	}
	prev := debug.SetGCPercent(GCPercent)
	t.pct = GCPercent
	t.undo = append(t.undo, func() { debug.SetGCPercent(prev) })
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	liveHeap := func() uint64 {
		metrics.Read(sample)
		if sample[0].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return sample[0].Value.Uint64()
	}
	t.adjust(liveHeap())
	go func() {
		defer close(t.done)
		tick := time.NewTicker(gcTuneEvery)
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
				t.adjust(liveHeap())
			case <-t.stop:
				return
			}
		}
	}()
	return t
}

// percentFor is the target for a live heap of live bytes.
func percentFor(live uint64) int {
	if live >= largeHeap {
		return GCPercentLargeHeap
	}
	return GCPercent
}

// adjust sets the target for a live heap of live bytes; never over the
// environment's GOGC.
func (t *GCTuner) adjust(live uint64) {
	if t.env != "" {
		return
	}
	want := percentFor(live)
	t.mu.Lock()
	defer t.mu.Unlock()
	if want != t.pct {
		debug.SetGCPercent(want)
		t.pct = want
	}
}

// Percent is the GOGC in effect: the environment's, or what the tuner set
// last.
func (t *GCTuner) Percent() string {
	if t.env != "" {
		return t.env
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return strconv.Itoa(t.pct)
}

// Stop ends the tuner and puts back the settings it found.
func (t *GCTuner) Stop() {
	if t.env == "" {
		close(t.stop)
	}
	<-t.done
	for i := len(t.undo) - 1; i >= 0; i-- {
		t.undo[i]()
	}
}

// memTotal reads MemTotal, in bytes, from a file in the format of
// /proc/meminfo.
func memTotal(path string) (int64, bool) {
	f, err := os.Open(path)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:")
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
		return kb * 1024, err == nil && kb > 0
	}
	return 0, false
}
