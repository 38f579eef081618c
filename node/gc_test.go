package node

import (
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"testing"
)

func TestMemTotal(t *testing.T) {
	cases := []struct {
		name, file string
		want       int64
		ok         bool
	}{
		{"meminfo", "MemTotal:       24576000 kB\nMemFree:        1000 kB\n", 24576000 * 1024, true},
		{"not first", "Other: 1 kB\nMemTotal: 2048 kB\n", 2048 * 1024, true},
		{"missing", "MemFree: 1000 kB\n", 0, false},
		{"garbled", "MemTotal: lots\n", 0, false},
		{"zero", "MemTotal: 0 kB\n", 0, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "meminfo")
			if err := os.WriteFile(path, []byte(c.file), 0o600); err != nil {
				t.Fatal(err)
			}
			got, ok := memTotal(path)
			if ok != c.ok || (ok && got != c.want) {
				t.Fatalf("memTotal = %d, %v; want %d, %v", got, ok, c.want, c.ok)
			}
		})
	}
	if _, ok := memTotal(filepath.Join(t.TempDir(), "absent")); ok {
		t.Fatal("a missing file gave a total")
	}
}

// The target follows the live heap: a small heap keeps its garbage
// small (a streamed import's memory bound), a large one collects less
// often (the latency of 100,000 running datapoints).
func TestPercentFollowsTheLiveHeap(t *testing.T) {
	cases := []struct {
		live uint64
		want int
	}{
		{0, GCPercent},
		{40 << 20, GCPercent},
		{largeHeap - 1, GCPercent},
		{largeHeap, GCPercentLargeHeap},
		{2 << 30, GCPercentLargeHeap},
	}
	for _, c := range cases {
		if got := percentFor(c.live); got != c.want {
			t.Errorf("percentFor(%d) = %d, want %d", c.live, got, c.want)
		}
	}
}

// TuneGC sets GOGC and a memory limit of half the machine unless the
// environment sets them, and Stop puts back what was there.
func TestTuneGCLeavesTheEnvironmentsChoice(t *testing.T) {
	total, ok := memTotal("/proc/meminfo")
	if !ok {
		t.Fatal("no MemTotal in /proc/meminfo on this machine")
	}
	env := func(vars map[string]string) func(string) string {
		return func(k string) string { return vars[k] }
	}
	before, beforeLimit := debug.SetGCPercent(100), debug.SetMemoryLimit(math.MaxInt64)
	defer debug.SetGCPercent(before)
	defer debug.SetMemoryLimit(beforeLimit)

	tuner := TuneGC(env(nil))
	// This test's heap is far below largeHeap.
	if got := tuner.Percent(); got != strconv.Itoa(GCPercent) || debug.SetGCPercent(GCPercent) != GCPercent {
		t.Errorf("GOGC unset: ran at %s", got)
	}
	if got := debug.SetMemoryLimit(-1); got != total/2 {
		t.Errorf("GOMEMLIMIT unset: limit %d, want half of %d", got, total)
	}
	tuner.adjust(largeHeap)
	if got := tuner.Percent(); got != strconv.Itoa(GCPercentLargeHeap) || debug.SetGCPercent(GCPercentLargeHeap) != GCPercentLargeHeap {
		t.Errorf("a large live heap: ran at %s", got)
	}
	tuner.Stop()
	if debug.SetGCPercent(100) != 100 || debug.SetMemoryLimit(-1) != math.MaxInt64 {
		t.Error("Stop did not put back GOGC 100 and no limit")
	}

	tuner = TuneGC(env(map[string]string{"GOGC": "150", "GOMEMLIMIT": "1GiB"}))
	defer tuner.Stop()
	tuner.adjust(largeHeap)
	if got := tuner.Percent(); got != "150" || debug.SetGCPercent(100) != 100 || debug.SetMemoryLimit(-1) != math.MaxInt64 {
		t.Errorf("GOGC and GOMEMLIMIT set: TuneGC changed the collector (reported %s)", got)
	}
}
