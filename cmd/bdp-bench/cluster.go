package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/openbdp/bdp/bench"
	"github.com/openbdp/bdp/cluster/localcluster"
)

// clusterScenario is `bdp-bench cluster`: the load harness pointed at
// three local nodes (cluster/localcluster), with a kill -9, stops
// answered by other nodes, a rejoin and a graceful stop (issue 20).
func clusterScenario() scenario {
	return scenario{
		doc: "three local nodes in cluster mode under the load harness: kill -9, stops through other nodes, rejoin, graceful stop (goals: nothing missing, different or lost; failover <= 10 s; command p99 <= 50 ms)",
		run: runCluster,
	}
}

func runCluster(ctx context.Context, args []string) (map[string]any, error) {
	fs := flag.NewFlagSet("cluster", flag.ContinueOnError)
	var o bench.ClusterOptions
	bin := binaryFlag(fs)
	fs.StringVar(&o.KafkaBrokers, "kafka", os.Getenv("BDP_TEST_KAFKA_BROKERS"), "a running Kafka broker; empty: one is started with -kafka-script")
	fs.StringVar(&o.KafkaScript, "kafka-script", "scripts/kafka.sh", "starts and stops a Kafka broker when -kafka is empty")
	fs.IntVar(&o.VDPs, "vdps", 300, "running virtual datapoints")
	fs.IntVar(&o.Sources, "sources", 30, "source datapoints")
	fs.IntVar(&o.Rounds, "rounds", 20, "upload rounds per phase (every source once each)")
	fs.DurationVar(&o.Interval, "interval", 100*time.Millisecond, "between upload rounds")
	fs.IntVar(&o.AppProjects, "app-projects", 6, "projects with a simulated edge device and schedule apps whose value changes every minute")
	fs.IntVar(&o.AppRooms, "app-rooms", 2, "schedule apps per project")
	fs.IntVar(&o.CrashProjects, "crash-projects", 3, "projects with one app whose simulated device crashes every -crash-every")
	fs.DurationVar(&o.CrashEvery, "crash-every", 10*time.Second, "how often those devices crash")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "bdp-bench-cluster-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	o.Bin, o.Dir = *bin, dir
	return bench.RunCluster(ctx, o, func(format string, a ...any) { fmt.Fprintf(os.Stderr, format+"\n", a...) })
}

// clusterUpScenario is what `make cluster-up` runs in the background: a
// local cluster that stays up until SIGTERM (`make cluster-down`).
func clusterUpScenario() scenario {
	return scenario{
		doc: "a local cluster (cluster/localcluster) that runs until SIGTERM: its services and -nodes bdp serve nodes, their addresses in DIR/cluster.env (make cluster-up, make cluster-down)",
		run: runClusterUp,
	}
}

func runClusterUp(ctx context.Context, args []string) (map[string]any, error) {
	fs := flag.NewFlagSet("cluster-up", flag.ContinueOnError)
	bin := binaryFlag(fs)
	dir := fs.String("dir", "/tmp/bdp-cluster", "the services' and nodes' data, and cluster.env")
	nodes := fs.Int("nodes", 3, "bdp serve nodes")
	kafka := fs.String("kafka", "", "a running Kafka broker; empty: one is started with -kafka-script")
	script := fs.String("kafka-script", "scripts/kafka.sh", "starts and stops a Kafka broker when -kafka is empty")
	token := fs.String("operator-token", "local-cluster-operator-token", "the nodes' BDP_OPERATOR_TOKEN")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	// Absolute, for cluster.env: the S3 gateway changes the working
	// directory (localcluster resolves its own paths).
	abs, err := filepath.Abs(*dir)
	if err != nil {
		return nil, err
	}
	*dir = abs
	svc, err := localcluster.StartServices(ctx, localcluster.Config{Dir: *dir, KafkaBrokers: *kafka, KafkaScript: *script})
	if err != nil {
		return nil, err
	}
	defer svc.Stop()
	env := append(svc.Env(), "BDP_OPERATOR_TOKEN="+*token)
	var started []*localcluster.Node
	defer func() {
		for _, n := range started {
			_ = n.Stop(30 * time.Second)
		}
	}()
	var urls []string
	for i := range *nodes {
		name := fmt.Sprintf("n%d", i+1)
		n, err := localcluster.StartNode(ctx, *bin, svc, name, filepath.Join(*dir, "node-"+name), "BDP_OPERATOR_TOKEN="+*token)
		if err != nil {
			return nil, err
		}
		started = append(started, n)
		urls = append(urls, n.HTTP)
		env = append(env, fmt.Sprintf("BDP_NODE_%s_HTTP=%s", strings.ToUpper(name), n.HTTP))
	}
	env = append(env, "BDP_CLUSTER_HTTP="+strings.Join(urls, ","))
	if err := os.WriteFile(filepath.Join(*dir, "cluster.env"), []byte(strings.Join(env, "\n")+"\n"), 0o600); err != nil {
		return nil, err
	}
	fmt.Fprintf(os.Stderr, "cluster-up: %d nodes: %s\n", len(urls), strings.Join(urls, " "))
	<-ctx.Done()
	return map[string]any{"nodes": urls, "scenario": "cluster-up"}, nil
}
