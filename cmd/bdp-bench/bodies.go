package main

import (
	"context"
	"flag"

	"github.com/openbdp/bdp/bench"
)

// runBodies is `bdp-bench bodies`: the peak memory of each route's largest
// accepted body (bench/bodies.go).
func runBodies(ctx context.Context, args []string) (map[string]any, error) {
	fs := flag.NewFlagSet("bodies", flag.ContinueOnError)
	bin := binaryFlag(fs)
	csvBytes := fs.Int64("csv-bytes", 64<<20, "size of the streamed CSV import")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	costs, err := bench.Bodies(ctx, bench.Options{Binary: *bin}, *csvBytes)
	if err != nil {
		return nil, err
	}
	worst := 0.0
	for _, c := range costs {
		if c.Fixed == 0 && !c.Streamed && c.Multiple > worst {
			worst = c.Multiple
		}
	}
	return map[string]any{"scenario": "bodies", "routes": costs, "largest_multiple": worst}, nil
}

// runFormula is `bdp-bench formula`: peak memory after creating a virtual
// datapoint with a formula of -chars characters.
func runFormula(ctx context.Context, args []string) (map[string]any, error) {
	fs := flag.NewFlagSet("formula", flag.ContinueOnError)
	bin := binaryFlag(fs)
	chars := fs.Int("chars", bench.FormulaLimit, "characters of the formula (30000000 for issue 8's 30 MB)")
	terms := fs.Bool("terms", false, "a formula of terms, P1+1+1..., instead of P1 + 1 padded with spaces")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	return bench.FormulaPeak(ctx, bench.Options{Binary: *bin}, *chars, *terms)
}
