package main

import (
	"context"
	"flag"

	"github.com/openbdp/bdp/bench"
)

// runCSV is `bdp-bench csv`: a streamed CSV import (bench/csv.go).
func runCSV(ctx context.Context, args []string) (map[string]any, error) {
	fs := flag.NewFlagSet("csv", flag.ContinueOnError)
	bin := binaryFlag(fs)
	lines := fs.Int("lines", 1_000_000, "lines of the generated file (10,000 datapoints)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	return bench.CSV(ctx, bench.Options{Binary: *bin}, *lines)
}
