package actors

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"sync"
	"testing"
)

// maxHeapPerIdleVDP bounds the heap of one running virtual datapoint
// beside what its windows hold (issue 18: at most 2 KiB in the end). The
// datapoints of heapPerRunningVDP have empty windows, so what it measures
// is the actor, its mailbox and registry entries, the calculator, the
// subscriptions and the definition. Measured: about 2,240 bytes (2,630
// with protoactor's unbounded mailbox and a handle per subscription;
// 3,130 with a VM per formula, its configuration kept as JSON and a
// mailbox subscriber per source; 3,800 when each running actor also kept
// a context of its own and its budget share in a map apart). At 5,000
// datapoints the engine's and the router's maps weigh more per datapoint
// than at 100,000.
const maxHeapPerIdleVDP = 2_400

// TestHeapPerRunningDatapoint guards the heap that running virtual
// datapoints cost beside their windows: a field or allocation added to
// every actor shows here, where bdp-bench vdp's figure needs minutes and
// a database of history.
func TestHeapPerRunningDatapoint(t *testing.T) {
	// 5,000: with fewer, the engine's and the router's maps, which grow
	// by doubling, weigh more per datapoint than in bdp-bench vdp's 10,000.
	per := heapPerRunningVDP(t, 5_000)
	t.Logf("%.0f bytes of heap per running virtual datapoint beside its windows", per)
	if per > maxHeapPerIdleVDP {
		t.Fatalf("%.0f bytes of heap per running virtual datapoint beside its windows, want at most %d", per, maxHeapPerIdleVDP)
	}
}

// heapPerRunningVDP starts n formula datapoints like bdp-bench vdp's (two
// count-10 pins, mean, every_value, one formula for all), whose sources
// hold nothing, and returns the live heap they added, per datapoint:
// their definitions, parsed as the engine gets them, and their actors.
func heapPerRunningVDP(t *testing.T, n int) float64 {
	e := newEnv(t)
	eng := e.engine(nil)
	ctx := context.Background()
	before := liveHeap()
	// A few at a time, as bdp-bench vdp and Resume start them: each start
	// reads its pins' history.
	const parallel = 8
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for w := range parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += parallel {
				def, err := eng.Definition(e.project, fmt.Sprintf("v%d", i), TypeFormula, marshalledConfig(t, TypeFormula, fmt.Sprintf(`{"pins": {
					"P1": {"dataPointID": "s%d", "data_range": {"count": 10}, "aggregate": "mean"},
					"P2": {"dataPointID": "s%d", "data_range": {"count": 10}, "aggregate": "mean"}},
					"parameters": {"formula": "(P1 + P2) / 2"}}`, 2*i, 2*i+1)))
				if err == nil {
					_, err = eng.Start(ctx, def)
				}
				if err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return float64(int64(liveHeap())-int64(before)) / float64(n)
}

// marshalledConfig is a configuration as the engine reads it from the store:
// parsed with its defaults filled in, marshalled. Errors are returned
// rather than fatal: it runs on the starting goroutines.
func marshalledConfig(t *testing.T, typ, body string) []byte {
	cfg, err := ParseConfig(typ, []byte(body))
	if err != nil {
		t.Error(err)
		return nil
	}
	raw, err := json.Marshal(cfg)
	if err != nil {
		t.Error(err)
	}
	return raw
}

// liveHeap is the heap in use after two collections (the second frees
// what finalizers of the first released).
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
