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
// import by a constant, whatever its size. A formula of 30 MB, which took
// the process from 1 GB to 5 GB before, is refused whole at a small cost.
//
// streamBound follows from the import's design rather than from one
// measurement: at most importMemChunks (4) chunks of importChunk (50,000)
// observations of about 60 bytes are held, with the pipeline's batch of
// one chunk beside them, about 16 MiB live; the Go runtime lets the heap
// grow to twice its live size before it collects, and the parser's and
// COPY's buffers come on top. Measured: 11 to 30 MiB for an 82 MB file.
const (
	bodyMultiple = 5
	bodySlack    = 16 << 20
	streamBound  = 64 << 20
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
