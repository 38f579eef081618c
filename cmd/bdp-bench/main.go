// Command bdp-bench measures bdp: `bdp-bench SCENARIO [flags]` starts the
// platform, loads it and prints one JSON object as its last line.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// scenario is one measurement; each lives in a file of its own.
type scenario struct {
	doc string
	run func(ctx context.Context, args []string) (map[string]any, error)
}

func scenarios() map[string]scenario {
	return map[string]scenario{
		"export":     exportScenario(),
		"ingest":     {doc: "Kafka ingestion: 2M observations, 10,000 datapoints, 4 gateways, vs raw COPY (goal ratio >= 0.8, >= 200,000 obs/s)", run: runIngest},
		"vdp":        vdpScenario(),
		"resume":     resumeScenario(),
		"csv":        {doc: "CSV import: 1M lines, 10,000 datapoints, on_error=abort, streamed (lines/s; goal >= 300,000)", run: runCSV},
		"bodies":     {doc: "peak memory of each route's largest accepted body, as a multiple of its size", run: runBodies},
		"mqtt":       mqttScenario(),
		"analytics":  analyticsScenario(),
		"setpoint":   setpointScenario(),
		"apps":       appsScenario(),
		"files":      filesScenario(),
		"compare":    compareScenario(),
		"compare-go": compareGoScenario(),
		"cluster":    clusterScenario(),
		"cluster-up": clusterUpScenario(),
		"load":       loadScenario(),
		"storage":    storageScenario(),
		"ui":         uiScenario(),
		"formula":    {doc: "peak memory of bdp serve after a virtual datapoint create with a formula of -chars characters", run: runFormula},
	}
}

func main() {
	all := scenarios()
	if len(os.Args) < 2 || all[os.Args[1]].run == nil {
		fmt.Fprintln(os.Stderr, "usage: bdp-bench SCENARIO [flags]\n\nscenarios:")
		for name, s := range all {
			fmt.Fprintf(os.Stderr, "  %-8s %s\n", name, s.doc)
		}
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	result, err := all[os.Args[1]].run(ctx, os.Args[2:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "bdp-bench:", err)
		os.Exit(1)
	}
	if err := printJSON(result); err != nil {
		fmt.Fprintln(os.Stderr, "bdp-bench:", err)
		os.Exit(1)
	}
}

// binaryFlag is the -bdp flag every scenario takes.
func binaryFlag(fs *flag.FlagSet) *string {
	return fs.String("bdp", "bin/bdp", "path of the bdp binary to measure")
}
