package main

import (
	"context"
	"flag"
	"os"

	"github.com/openbdp/bdp/bench"
)

// resumeScenario is `bdp-bench resume`: restarts of bdp serve with running
// virtual datapoints over long histories (bench/resume.go).
func resumeScenario() scenario {
	return scenario{
		doc: "restart with 10 running virtual datapoints over 500,000 stored points each (seconds until HTTP answers, until all Running)",
		run: func(ctx context.Context, args []string) (map[string]any, error) {
			fs := flag.NewFlagSet("resume", flag.ContinueOnError)
			bin := binaryFlag(fs)
			vdps := fs.Int("vdps", 10, "running virtual datapoints, one source each")
			rows := fs.Int("rows", 500_000, "stored observations per source, one a minute")
			runs := fs.Int("runs", 3, "restarts measured")
			if err := fs.Parse(args); err != nil {
				return nil, err
			}
			return bench.Resume(ctx, bench.ResumeOptions{Binary: *bin, VDPs: *vdps, Rows: *rows, Runs: *runs, Progress: os.Stderr})
		},
	}
}
