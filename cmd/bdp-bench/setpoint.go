package main

import (
	"context"
	"flag"
	"os"
	"time"

	"github.com/openbdp/bdp/bench"
)

// setpointScenario is `bdp-bench setpoint`: acked setpoint writes through
// simulated edge devices (bench/setpoint.go).
func setpointScenario() scenario {
	return scenario{
		doc: "acked setpoint writes, HTTP request to written, through simulated edge devices over the embedded broker (goal at 200/s over 20 projects: ack_p50_ms <= 5, ack_p99_ms <= 20)",
		run: func(ctx context.Context, args []string) (map[string]any, error) {
			fs := flag.NewFlagSet("setpoint", flag.ContinueOnError)
			o := bench.SetpointOptions{Progress: os.Stderr}
			fs.StringVar(&o.Binary, "bdp", "bin/bdp", "path of the bdp binary to measure")
			fs.IntVar(&o.Projects, "projects", 20, "projects, one simulated edge device each")
			fs.IntVar(&o.Rate, "rate", 200, "acked writes per second")
			fs.DurationVar(&o.Duration, "duration", 10*time.Second, "how long writes are sent")
			if err := fs.Parse(args); err != nil {
				return nil, err
			}
			return bench.Setpoint(ctx, o)
		},
	}
}
