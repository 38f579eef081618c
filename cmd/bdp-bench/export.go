package main

import (
	"context"
	"flag"
	"os"

	"github.com/openbdp/bdp/bench"
)

// exportScenario is `bdp-bench export`: GET /v2/datapoint/timeseries on a
// loaded table (bench/export.go).
func exportScenario() scenario {
	return scenario{
		doc: "timeseries export: newest 1000 and 30-day hourly means over 20M rows (p50/p99 ms)",
		run: func(ctx context.Context, args []string) (map[string]any, error) {
			fs := flag.NewFlagSet("export", flag.ContinueOnError)
			bin := binaryFlag(fs)
			dps := fs.Int("datapoints", 20, "datapoints to load")
			rows := fs.Int("rows", 1_000_000, "observations per datapoint, one a minute (at least 43320: 30 days and 2 hours)")
			reqs := fs.Int("requests", 200, "requests per measurement")
			if err := fs.Parse(args); err != nil {
				return nil, err
			}
			return bench.Export(ctx, bench.ExportOptions{Binary: *bin, Datapoints: *dps, Rows: *rows,
				Requests: *reqs, Progress: os.Stderr})
		},
	}
}
