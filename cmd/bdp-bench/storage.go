package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/openbdp/bdp/bench"
)

// storageScenario is `bdp-bench storage`: issue 21's compact storage of
// closed weeks, measured on a month of real one-minute measurements
// stretched into a building's mix (bench/storage*.go).
func storageScenario() scenario {
	return scenario{
		doc: "compact storage (issue 21): a measured month (pvlib's BSRN Payerne file) stretched to 20M+ observations of a building's mix, sealed (goals: <= 1.37 B/obs sealed; fixed cadence <= 0.6, jittered <= 3, full precision <= 6; export sealed/rows <= 1.0; Kafka ingest/COPY with the sealer >= 0.8; >= 1M obs per sealer CPU-s; nothing lost or duplicated under late writes)",
		run: runStorage,
	}
}

func runStorage(ctx context.Context, args []string) (map[string]any, error) {
	fs := flag.NewFlagSet("storage", flag.ContinueOnError)
	var o bench.StorageOptions
	bin := binaryFlag(fs)
	brokers := fs.String("brokers", os.Getenv("BDP_TEST_KAFKA_BROKERS"), "Kafka bootstrap addresses (default $BDP_TEST_KAFKA_BROKERS)")
	fs.StringVar(&o.Data, "data", bench.DefaultStorageData(), "the BSRN file scripts/fetch-pvlib-data.sh fetches and prints")
	fs.Uint64Var(&o.Seed, "seed", 1, "seed of the series derived from the data")
	fs.Float64Var(&o.Scale, "scale", 1, "scales every default below (0.01: a run of seconds)")
	fs.IntVar(&o.Datapoints, "datapoints", 0, "datapoints of the mix, a multiple of 12 (default 48 × scale)")
	fs.IntVar(&o.Weeks, "weeks", 0, "weeks of one-minute data each (default 52 × scale, at least 2)")
	fs.IntVar(&o.Reads, "reads", 0, "reads of each export query on each side (default 101 × scale)")
	fs.IntVar(&o.IngestObservations, "ingest-observations", 0, "observations through Kafka beside the sealer (default 2,000,000 × scale)")
	fs.IntVar(&o.IngestDatapoints, "ingest-datapoints", 0, "datapoints they spread over (default 10,000 × scale)")
	fs.IntVar(&o.LateDatapoints, "late-datapoints", 0, "datapoints of the late-write test (default -datapoints)")
	fs.DurationVar(&o.LateDuration, "late-duration", 0, "how long late writes, reads and passes run (default 60s × scale)")
	fs.StringVar(&o.SealProfile, "seal-profile", "", "write a CPU profile of the full-duty seal pass to this file")
	fs.StringVar(&o.ReadProfile, "read-profile", "", "write a CPU profile of the export reads to this file")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if *brokers != "" {
		o.Brokers = strings.Split(*brokers, ",")
	}
	o.Binary = *bin
	o.Progress = func(format string, a ...any) { fmt.Fprintf(os.Stderr, "storage: "+format+"\n", a...) }
	return bench.Storage(ctx, o)
}
