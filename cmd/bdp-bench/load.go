package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"strings"
	"time"

	"github.com/openbdp/bdp/bench"
)

// loadScenario is `bdp-bench load`: the harness against any running
// deployment.
func loadScenario() scenario {
	return scenario{
		doc: "the load harness against a running deployment (-http URL[,URL...]): creates its project (-operator-token) or works in one (-email, -password, -project), runs virtual datapoints (-vdp-mix), feeds observations over HTTP, Kafka and MQTT (-rate), with live subscribers (-live) and setpoint writes (-setpoints), verifies every output, cleans up",
		run: runLoad,
	}
}

// loadFlags are bdp-bench load's flags beyond LoadOptions.
type loadFlags struct {
	urls, kafka, mqtt, rates, mix string
	rounds, live, setpoints       int
	interval, duration, every     time.Duration
}

func runLoad(ctx context.Context, args []string) (map[string]any, error) {
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	var o bench.LoadOptions
	var f loadFlags
	fs.StringVar(&f.urls, "http", "", "the nodes' base URLs, comma-separated (http://host:port)")
	fs.StringVar(&o.OperatorToken, "operator-token", os.Getenv("BDP_OPERATOR_TOKEN"), "creates a company and project of the harness's own (needed by -setpoints)")
	fs.StringVar(&o.Email, "email", "", "without an operator token: a user of the project")
	fs.StringVar(&o.Password, "password", "", "its password")
	fs.Int64Var(&o.ProjectID, "project", 0, "without an operator token: the project to work in")
	fs.StringVar(&o.Prefix, "prefix", "load-", "names of the harness's datapoints")
	fs.IntVar(&o.VDPs, "vdps", 100, "running virtual datapoints (formula, VDP i = source i%sources × (i+1)); see -vdp-mix")
	fs.StringVar(&f.mix, "vdp-mix", "", "virtual datapoints by kind instead of -vdps, e.g. formula=60,formula_count=10,formula_time=10,gradient=10,humidity=10: "+
		"formula_count sums the source's last 5 values, formula_time averages its last 5 minutes, gradient is its change per minute, "+
		"humidity reads it as relative humidity at a fixed 21 °C; every output is checked against the value the harness computes")
	fs.IntVar(&o.Sources, "sources", 10, "source datapoints, each carried by one path")
	fs.StringVar(&f.rates, "rate", "", "observations per second per path, e.g. http=2000,kafka=2000,mqtt=1000 (a path absent is not used; "+
		"the sources are shared in proportion); empty: HTTP uploads of -rounds rounds every -interval")
	fs.DurationVar(&f.duration, "duration", time.Minute, "with -rate: how long the feed runs")
	fs.IntVar(&f.rounds, "rounds", 60, "without -rate: upload rounds (every source once each)")
	fs.DurationVar(&f.interval, "interval", time.Second, "without -rate: between upload rounds")
	fs.StringVar(&f.kafka, "kafka", "", "Kafka brokers, comma-separated, for a kafka rate: the harness produces as a field gateway (acknowledged: the batch acked by the brokers)")
	fs.StringVar(&o.KafkaTopic, "kafka-topic", "bdp.observations", "the topic the deployment consumes (its BDP_KAFKA_TOPIC)")
	fs.StringVar(&f.mqtt, "mqtt", "", "the deployment's MQTT broker, tcp://host:port[,...]: publishes of a write MQTT user for an mqtt rate (acknowledged: PUBACK), "+
		"live subscribers, the simulated edge device of -setpoints")
	fs.IntVar(&f.live, "live", 0, "MQTT subscribers of the project's live data, each a read MQTT user (needs -mqtt); live_ratio is received of stored")
	fs.IntVar(&f.setpoints, "setpoints", 0, "setpoint writes per second through random nodes to a simulated edge device in this process (needs -mqtt and the operator token)")
	fs.DurationVar(&f.every, "progress", 10*time.Second, "how often a line per path reports throughput and latencies while the feed runs")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if err := f.apply(&o); err != nil {
		return nil, err
	}
	return driveLoad(ctx, o, f)
}

// apply checks the flags and fills in what LoadOptions takes from them.
func (f *loadFlags) apply(o *bench.LoadOptions) error {
	if f.urls == "" {
		return errors.New("-http is required")
	}
	o.HTTP = strings.Split(f.urls, ",")
	split := func(s string) []string {
		if s == "" {
			return nil
		}
		return strings.Split(s, ",")
	}
	o.KafkaBrokers, o.MQTT = split(f.kafka), split(f.mqtt)
	var err error
	if o.Mix, err = bench.ParseVDPMix(f.mix); err != nil {
		return err
	}
	if o.Rates, err = bench.ParseRates(f.rates); err != nil {
		return err
	}
	switch {
	case o.Rates[bench.PathKafka] > 0 && len(o.KafkaBrokers) == 0:
		return errors.New("a kafka rate needs -kafka")
	case (o.Rates[bench.PathMQTT] > 0 || f.live > 0 || f.setpoints > 0) && len(o.MQTT) == 0:
		return errors.New("an mqtt rate, -live and -setpoints need -mqtt")
	case f.setpoints > 0 && o.OperatorToken == "":
		return errors.New("-setpoints needs the operator token (-operator-token or BDP_OPERATOR_TOKEN)")
	}
	if len(o.Rates) > 0 {
		total := 0
		for _, r := range o.Rates {
			total += r
		}
		f.rounds = int(math.Ceil(f.duration.Seconds() * float64(total) / float64(o.Sources)))
	}
	o.Span = f.rounds
	return nil
}

// driveLoad runs the workload and reports it.
func driveLoad(ctx context.Context, o bench.LoadOptions, f loadFlags) (map[string]any, error) {
	progress := func(format string, a ...any) { fmt.Fprintf(os.Stderr, format+"\n", a...) }
	began := time.Now()
	load, err := bench.StartLoad(ctx, o)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err := load.Close(context.Background()); err != nil {
			progress("load: cleaning up: %v", err)
		}
	}()
	vdps := load.VDPs()
	for i := range vdps {
		if err := load.Status(ctx, i); err != nil {
			return nil, err
		}
	}
	var lives []*bench.LiveCounter
	for k := range f.live {
		c, err := load.SubscribeLive(ctx, o.MQTT[k%len(o.MQTT)])
		if err != nil {
			return nil, err
		}
		defer c.Close()
		lives = append(lives, c)
	}
	var writer *bench.SetpointWriter
	if f.setpoints > 0 {
		if writer, err = load.StartSetpoints(ctx); err != nil {
			return nil, err
		}
	}
	progress("load: project %d, %d virtual datapoints, %d sources; feeding %d rounds", load.ProjectID(), vdps, o.Sources, f.rounds)
	fed := time.Now()
	sideCtx, stopSide := context.WithCancel(ctx)
	defer stopSide()
	go load.Progress(sideCtx, f.every, progress)
	writes := make(chan struct{})
	go func() {
		defer close(writes)
		if writer != nil {
			writer.Run(sideCtx, f.setpoints)
		}
	}()
	if len(o.Rates) > 0 {
		err = load.FeedRate(ctx, f.rounds)
	} else {
		err = load.Feed(ctx, f.rounds, f.interval)
	}
	stopSide()
	<-writes
	if err != nil {
		return nil, err
	}
	feedS := time.Since(fed).Seconds()
	verdict, err := load.Verify(ctx, time.Minute)
	if err != nil {
		return nil, err
	}
	result := map[string]any{
		"outputs_missing": verdict.OutputsMissing, "outputs_different": verdict.OutputsDifferent, "acked_lost": verdict.AckedLost,
		"outputs_after_stop": verdict.OutputsAfterStop,
		"command_p99_ms":     float64(load.CommandP99().Microseconds()) / 1000, "observations_per_s": float64(f.rounds*o.Sources) / feedS,
		"upload_p50_ms": float64(load.UploadPercentile(50).Microseconds()) / 1000, "upload_p99_ms": float64(load.UploadPercentile(99).Microseconds()) / 1000,
		"nodes": len(o.HTTP), "vdps": vdps, "sources": o.Sources, "rounds": f.rounds, "feed_s": feedS, "scenario": "load",
	}
	if verdict.FirstDifference != "" {
		result["first_difference"] = verdict.FirstDifference
	}
	for k, v := range load.PathFigures() {
		result[k] = v
	}
	byPath := map[bench.Path][2]int{bench.PathHTTP: {verdict.AckedLostHTTP, verdict.OutputsWrongHTTP},
		bench.PathKafka: {verdict.AckedLostKafka, verdict.OutputsWrongKafka}, bench.PathMQTT: {verdict.AckedLostMQTT, verdict.OutputsWrongMQTT}}
	for p, n := range byPath {
		if _, used := result[string(p)+"_sources"]; used {
			result[string(p)+"_acked_lost"], result[string(p)+"_outputs_wrong"] = n[0], n[1]
		}
	}
	if len(o.Mix) > 0 {
		result["vdp_mix"] = o.Mix
	}
	if len(lives) > 0 {
		sum, lowest := 0.0, 1.0
		for _, c := range lives {
			r, err := c.StoredRatio(ctx, 0, load.Rounds(), 10*time.Second)
			if err != nil {
				return nil, err
			}
			sum, lowest = sum+r, min(lowest, r)
		}
		result["live_subscribers"], result["live_ratio"], result["live_ratio_min"] = len(lives), sum/float64(len(lives)), lowest
	}
	if writer != nil {
		for k, v := range writer.Figures(30 * time.Second) {
			result[k] = v
		}
		result["setpoints_per_s"] = f.setpoints
	}
	result["duration_s"] = time.Since(began).Seconds()
	return result, nil
}
