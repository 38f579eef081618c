package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/openbdp/bdp/bench"
)

// compareScenario is `bdp-bench compare -base REV SCENARIO [FLAGS]`: the
// scenario on the base revision and on this working tree, alternately
// (bench/compare.go). Run from the repository's root with bin/ built, as
// `make bench-compare` does.
func compareScenario() scenario {
	return scenario{
		doc: "side by side: -base REV [-rounds 3] SCENARIO [FLAGS], base revision and working tree alternately; medians and head/base",
		run: func(ctx context.Context, args []string) (map[string]any, error) {
			fs := flag.NewFlagSet("compare", flag.ContinueOnError)
			base := fs.String("base", "", "git revision to compare against (required)")
			rounds := fs.Int("rounds", 3, "runs of each side")
			if err := fs.Parse(args); err != nil {
				return nil, err
			}
			if *base == "" || fs.NArg() == 0 {
				return nil, errors.New("usage: bdp-bench compare -base REV [-rounds N] SCENARIO [FLAGS]")
			}
			name := fs.Arg(0)
			// Scenarios this tree knows; the base revision may know fewer,
			// which its first run says.
			if s, ok := scenarios()[name]; !ok || s.run == nil || name == "compare" || name == "compare-go" {
				return nil, fmt.Errorf("%q is no scenario to compare (bdp-bench without arguments lists them)", name)
			}
			return bench.Compare(ctx, bench.CompareOptions{Base: *base, Scenario: name, Args: fs.Args()[1:],
				Rounds: *rounds, Repo: ".", Progress: os.Stderr, Out: os.Stdout})
		},
	}
}

// compareGoScenario is `bdp-bench compare-go`: a package's Go benchmarks on
// the base revision and on this working tree, through benchstat
// (bench/compare_go.go).
func compareGoScenario() scenario {
	return scenario{
		doc: "Go benchmarks side by side: -base REV -pkg ./p [-bench re] [-count 6] [-benchtime d], benchstat of base and working tree",
		run: func(ctx context.Context, args []string) (map[string]any, error) {
			fs := flag.NewFlagSet("compare-go", flag.ContinueOnError)
			var o bench.CompareGoOptions
			fs.StringVar(&o.Base, "base", "", "git revision to compare against (required)")
			fs.StringVar(&o.Package, "pkg", "", "the package whose benchmarks run (required, one)")
			fs.StringVar(&o.Bench, "bench", ".", "which benchmarks (go test -bench)")
			fs.IntVar(&o.Count, "count", 6, "runs of each side (benchstat wants at least 6 for its confidence interval)")
			fs.StringVar(&o.Benchtime, "benchtime", "", "go test -benchtime of each run (default go test's 1s)")
			fs.StringVar(&o.Benchstat, "benchstat", "benchstat", "the benchstat command (go install golang.org/x/perf/cmd/benchstat@latest)")
			if err := fs.Parse(args); err != nil {
				return nil, err
			}
			if o.Base == "" || o.Package == "" || fs.NArg() > 0 {
				return nil, errors.New("usage: bdp-bench compare-go -base REV -pkg ./PKG [-bench RE] [-count N] [-benchtime D]")
			}
			o.Repo, o.Progress, o.Out = ".", os.Stderr, os.Stdout
			return bench.CompareGo(ctx, o)
		},
	}
}
