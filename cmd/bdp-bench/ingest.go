package main

import (
	"context"
	"errors"
	"flag"
	"os"
	"strings"

	"github.com/openbdp/bdp/bench"
)

// runIngest is `bdp-bench ingest`: gateways produce through Kafka into
// bdp serve, compared with a raw COPY (bench/ingest.go).
func runIngest(ctx context.Context, args []string) (map[string]any, error) {
	fs := flag.NewFlagSet("ingest", flag.ContinueOnError)
	bin := binaryFlag(fs)
	brokers := fs.String("brokers", os.Getenv("BDP_TEST_KAFKA_BROKERS"), "Kafka bootstrap addresses (default $BDP_TEST_KAFKA_BROKERS)")
	obs := fs.Int("observations", 2_000_000, "observations to produce")
	dps := fs.Int("datapoints", 10_000, "datapoints they spread over")
	gateways := fs.Int("gateways", 4, "concurrent producers")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if *brokers == "" {
		return nil, errors.New("no Kafka broker: run `make bench-ingest`, or pass -brokers")
	}
	return bench.Ingest(ctx, bench.Options{Binary: *bin}, bench.IngestOptions{
		Brokers: strings.Split(*brokers, ","), Observations: *obs, Datapoints: *dps, Gateways: *gateways})
}
