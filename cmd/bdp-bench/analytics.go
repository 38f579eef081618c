package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/openbdp/bdp/bench"
)

// analyticsScenario is `bdp-bench analytics`: issue 10's figures
// (bench/analytics*.go).
func analyticsScenario() scenario {
	return scenario{
		doc: "analytics: each function run by hand over 4 weeks of 1-minute data (p50 <= 100 ms each), a weekly batch of 1,000 instances beside a 20,000 obs/s HTTP ingest (<= 60 s, ingest loss <= 10 %)",
		run: runAnalytics,
	}
}

func runAnalytics(ctx context.Context, args []string) (map[string]any, error) {
	fs := flag.NewFlagSet("analytics", flag.ContinueOnError)
	o := bench.AnalyticsOptions{Progress: os.Stderr}
	fs.StringVar(&o.Binary, "bdp", "bin/bdp", "path of the bdp binary to measure")
	parts := fs.String("parts", "functions,weekly", "which parts to run, comma-separated")
	fs.IntVar(&o.Runs, "runs", 9, "functions: manual runs of each function")
	fs.IntVar(&o.Weeks, "weeks", 4, "functions: weeks of 1-minute data a run reads")
	fs.BoolVar(&o.PreviousData, "previous-data", false, "functions: the weeks before the period hold data too, so the summary KPI's previous period, which a run computes, reads as much as the period")
	fs.DurationVar(&o.Poll, "poll", 2*time.Millisecond, "functions: how often a run's result is polled")
	fs.IntVar(&o.Instances, "instances", 1_000, "weekly: enabled instances, each on a component and datapoints of its own")
	fs.IntVar(&o.Projects, "projects", 100, "weekly: projects the instances spread over")
	fs.IntVar(&o.IngestRate, "rate", 20_000, "weekly: observations uploaded per second beside the batch")
	fs.IntVar(&o.IngestDatapoints, "datapoints", 1_000, "weekly: datapoints the uploads spread over")
	fs.DurationVar(&o.BatchLimit, "batch-limit", 10*time.Minute, "weekly: longest wait for the batch")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	for _, p := range strings.Split(*parts, ",") {
		switch p {
		case "functions":
			o.Functions = true
		case "weekly":
			o.Weekly = true
		default:
			return nil, fmt.Errorf("-parts: unknown part %q (functions, weekly)", p)
		}
	}
	return bench.Analytics(ctx, o)
}
