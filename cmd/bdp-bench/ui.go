package main

import (
	"context"
	"flag"
	"os"

	"github.com/openbdp/bdp/bench"
)

// uiScenario is `bdp-bench ui`: the browser UI in headless Chromium
// (bench/ui.go).
func uiScenario() scenario {
	return scenario{
		doc: "browser UI in Chromium: 30-day plot of minute data, click to drawn (goal first_plot_ms <= 1000), live value stored -> drawn p99 (goal <= 1000), first load's assets (goal <= 500 KiB)",
		run: func(ctx context.Context, args []string) (map[string]any, error) {
			fs := flag.NewFlagSet("ui", flag.ContinueOnError)
			o := bench.UIOptions{Progress: os.Stderr}
			fs.StringVar(&o.Binary, "bdp", "bin/bdp", "path of the bdp binary to measure")
			fs.IntVar(&o.Runs, "runs", 7, "timed 30-day plots of each kind")
			fs.IntVar(&o.LiveValues, "live", 100, "live values timed")
			if err := fs.Parse(args); err != nil {
				return nil, err
			}
			return bench.UI(ctx, o)
		},
	}
}
