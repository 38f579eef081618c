package main

import (
	"context"
	"testing"

	"github.com/openbdp/bdp/bench"
)

// The memory a request costs is bounded by its body, which is bounded by
// its route: measured on the real binary, each route's largest accepted
// body raises the peak resident memory of `bdp serve` (VmHWM) by at most
// bodyMultiple times its size, plus a fixed slack for the runtime (and the
// argon2id hash of the routes that hash a password); the streamed CSV
// import by a constant. A formula of 30 MB, which took the process from
// 1 GB to 5 GB before, is refused whole at a small cost.
const (
	bodyMultiple = 5
	bodySlack    = 16 << 20
	streamBound  = 32 << 20
)

func TestLargestBodiesCostABoundedMultiple(t *testing.T) {
	ctx := context.Background()
	costs, err := bench.Bodies(ctx, bench.Options{Binary: bdpBinary}, 64<<20)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range costs {
		t.Logf("%-58s body %9d B  peak +%6.1f MiB  %6.2f×", c.Route, c.BodyBytes, float64(c.PeakGrowth)/(1<<20), c.Multiple)
		bound := int64(bodyMultiple)*c.BodyBytes + bodySlack + c.Fixed
		if c.Streamed {
			bound = streamBound
		}
		if c.PeakGrowth > bound {
			t.Errorf("%s: a body of %d bytes raised the peak memory by %d bytes, over %d", c.Route, c.BodyBytes, c.PeakGrowth, bound)
		}
	}

	for _, chars := range []int{bench.FormulaLimit, 30_000_000} {
		r, err := bench.FormulaPeak(ctx, bench.Options{Binary: bdpBinary}, chars, chars > bench.FormulaLimit)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("formula of %d characters: HTTP %v, peak RSS %.1f MiB (%.1f MiB before the request)", chars, r["status"],
			r["peak_rss_mib"], float64(r["rss_before_bytes"].(int64))/(1<<20))
		want := 200
		if chars > bench.FormulaLimit {
			want = 413
		}
		if r["status"] != want {
			t.Errorf("formula of %d characters: HTTP %v, want %d", chars, r["status"], want)
		}
		if growth := r["peak_rss_bytes"].(int64) - r["rss_before_bytes"].(int64); growth > 64<<20 {
			t.Errorf("formula of %d characters: peak memory rose by %d bytes", chars, growth)
		}
	}
}
