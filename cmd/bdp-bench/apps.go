package main

import (
	"context"
	"flag"
	"os"
	"time"

	"github.com/openbdp/bdp/bench"
)

// appsScenario is `bdp-bench apps`: running schedule apps on bdp serve,
// with simulated edge devices in this process (bench/apps.go).
func appsScenario() scenario {
	return scenario{
		doc: "1,000 running schedule apps over 100 projects with simulated edge devices outside bdp (goals: heap_bytes_per_app <= 8 KiB, idle_cpu_percent <= 2 of one core)",
		run: func(ctx context.Context, args []string) (map[string]any, error) {
			fs := flag.NewFlagSet("apps", flag.ContinueOnError)
			o := bench.AppsOptions{Progress: os.Stderr}
			fs.StringVar(&o.Binary, "bdp", "bin/bdp", "path of the bdp binary to measure")
			fs.IntVar(&o.Projects, "projects", 100, "projects, one simulated edge device each")
			fs.IntVar(&o.Rooms, "rooms", 10, "rooms per project, one schedule app each")
			fs.DurationVar(&o.Idle, "idle", 30*time.Second, "the idle window over which bdp's CPU is measured")
			if err := fs.Parse(args); err != nil {
				return nil, err
			}
			return bench.Apps(ctx, o)
		},
	}
}
