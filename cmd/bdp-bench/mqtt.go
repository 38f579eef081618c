package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"github.com/openbdp/bdp/bench"
)

// mqttScenario is `bdp-bench mqtt`: the embedded broker's figures of
// issue 9 (bench/mqtt*.go).
func mqttScenario() scenario {
	return scenario{
		doc: "MQTT: 10,000 idle connections (<= 20 KiB heap each, connected in <= 5 s), live out to 10 QoS 1 subscribers under 20,000 obs/s uploads (delivered 1.0, p99 <= 20 ms), QoS 1 ingestion by 10 publishers (>= 200,000 obs/s) beside HTTP",
		run: runMQTT,
	}
}

func runMQTT(ctx context.Context, args []string) (_ map[string]any, err error) {
	fs := flag.NewFlagSet("mqtt", flag.ContinueOnError)
	o := bench.MQTTOptions{Progress: os.Stderr}
	fs.StringVar(&o.Binary, "bdp", "bin/bdp", "path of the bdp binary to measure")
	parts := fs.String("parts", "idle,live,ingest", "which parts to run, comma-separated")
	fs.IntVar(&o.IdleConns, "conns", 10_000, "idle: authenticated connections")
	fs.IntVar(&o.ConnectWorkers, "connect-workers", 64, "idle: connections opened at once")
	fs.IntVar(&o.Subscribers, "subscribers", 10, "live: QoS 1 subscribers of project/{p}/#")
	fs.IntVar(&o.LiveRate, "rate", 20_000, "live: observations uploaded per second")
	fs.IntVar(&o.LiveDatapoints, "datapoints", 1_000, "live: datapoints the uploads spread over")
	fs.DurationVar(&o.Duration, "duration", time.Minute, "live: how long the uploads run")
	fs.BoolVar(&o.RawSubscribers, "raw-subscribers", false, "live: the bench's own minimal MQTT subscribers instead of paho (less of this process's CPU per message)")
	fs.DurationVar(&o.Drain, "drain", 10*time.Second, "live: longest wait for messages still on their way")
	fs.IntVar(&o.Publishers, "publishers", 10, "ingest: MQTT publishers (and HTTP uploaders)")
	fs.IntVar(&o.PerMessage, "per-message", 100, "ingest: observations per publish (and per upload)")
	fs.IntVar(&o.Window, "window", 256, "ingest: unacknowledged publishes (requests) per publisher (uploader)")
	fs.DurationVar(&o.IngestDuration, "ingest-duration", 20*time.Second, "ingest: how long each of MQTT and HTTP runs")
	fs.StringVar(&o.PerfPrefix, "perf", "", "record bdp serve's CPU with perf during live and ingest into PREFIX.live.data and PREFIX.ingest.data")
	cpu := fs.String("cpuprofile", "", "write a CPU profile of this process (the clients) to this file")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	run := strings.Split(*parts, ",")
	for _, p := range run {
		if !slices.Contains([]string{"idle", "live", "ingest"}, p) {
			return nil, fmt.Errorf("-parts: unknown part %q (idle, live, ingest)", p)
		}
	}
	for part, n := range map[string]*int{"idle": &o.IdleConns, "live": &o.Subscribers, "ingest": &o.Publishers} {
		if !slices.Contains(run, part) {
			*n = -1
		} else if *n <= 0 {
			return nil, fmt.Errorf("part %s needs a positive count", part)
		}
	}
	if *cpu != "" {
		f, err := os.Create(*cpu)
		if err != nil {
			return nil, err
		}
		// A profile cut short by a failed close is worth an error.
		defer func() { err = errors.Join(err, f.Close()) }()
		if err := pprof.StartCPUProfile(f); err != nil {
			return nil, err
		}
		defer pprof.StopCPUProfile()
	}
	return bench.MQTT(ctx, o)
}
