package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"sort"
	"time"

	"github.com/openbdp/bdp/cluster/localcluster"
)

// ClusterOptions are bdp-bench cluster's: the load harness pointed at
// three local nodes, with a kill -9, a stop answered by other nodes, a
// rejoin and a graceful stop.
type ClusterOptions struct {
	Bin          string // bdp
	Dir          string // the services' and nodes' data
	KafkaBrokers string // a running broker; empty: started with KafkaScript
	KafkaScript  string
	VDPs         int
	Sources      int
	Interval     time.Duration // between upload rounds
	Rounds       int           // upload rounds of each phase
	// Controls apps on simulated edge devices: AppProjects projects with
	// AppRooms schedule apps each whose value changes every minute, and
	// CrashProjects projects with one app whose device crashes every
	// CrashEvery.
	AppProjects, AppRooms, CrashProjects int
	CrashEvery                           time.Duration
}

// ClusterKeys are the figures of issue 20 in the order of its table, the
// JSON object's first keys; a figure not measured is left out.
var ClusterKeys = []string{"outputs_missing", "outputs_different", "acked_lost", "writes_per_boundary_max",
	"events_logged_per_event_max", "failover_max_s", "failover_p50_s", "outputs_after_stop", "command_p99_ms",
	"live_ratio_steady", "live_ratio_failover", "cluster_vs_single_ratio", "moved_on_rejoin_fraction"}

const clusterOperatorToken = "bdp-bench-cluster-operator-token"

// RunCluster runs the scenario; progress gets a line per phase.
func RunCluster(ctx context.Context, o ClusterOptions, progress func(string, ...any)) (map[string]any, error) {
	svc, err := localcluster.StartServices(ctx, localcluster.Config{Dir: o.Dir, KafkaBrokers: o.KafkaBrokers, KafkaScript: o.KafkaScript})
	if err != nil {
		return nil, err
	}
	defer svc.Stop()
	names := []string{"a", "b", "c"}
	nodes := map[string]*localcluster.Node{}
	start := func(name string) error {
		n, err := localcluster.StartNode(ctx, o.Bin, svc, name, filepath.Join(o.Dir, "node-"+name),
			"BDP_OPERATOR_TOKEN="+clusterOperatorToken, "BDP_LOG_LEVEL=warn")
		if err == nil {
			nodes[name] = n
		}
		return err
	}
	defer func() {
		for _, n := range nodes {
			if n.Running() {
				_ = n.Stop(30 * time.Second)
			}
		}
	}()
	for _, name := range names {
		if err := start(name); err != nil {
			return nil, err
		}
	}
	urls := func(except ...string) []string {
		var out []string
		for _, name := range names {
			if n := nodes[name]; n != nil && n.Running() && !slices.Contains(except, name) {
				out = append(out, n.HTTP)
			}
		}
		return out
	}
	if _, err := waitView(ctx, nodes["a"].HTTP, 3, -1, time.Minute); err != nil {
		return nil, err
	}
	progress("cluster: three nodes; creating and running %d virtual datapoints through random nodes", o.VDPs)
	load, err := StartLoad(ctx, LoadOptions{HTTP: urls(), OperatorToken: clusterOperatorToken, VDPs: o.VDPs, Sources: o.Sources})
	if err != nil {
		return nil, err
	}
	defer func() { _ = load.Close(context.Background()) }()
	for i := range 3 * o.VDPs / 10 {
		if err := load.Status(ctx, i%o.VDPs); err != nil {
			return nil, err
		}
	}
	progress("cluster: %d projects with %d schedule apps each and %d with a device that crashes every %s", o.AppProjects, o.AppRooms, o.CrashProjects, o.CrashEvery)
	apps, err := startClusterApps(ctx, load, svc.MQTT.URL, o.AppProjects, o.AppRooms, o.CrashProjects, o.CrashEvery)
	if err != nil {
		return nil, err
	}
	defer func() { _ = apps.close(context.Background()) }()
	live, err := load.SubscribeLive(ctx, svc.MQTT.URL)
	if err != nil {
		return nil, err
	}
	defer live.Close()
	progress("cluster: steady feed, %d rounds", o.Rounds)
	steadyFrom := load.Rounds()
	if err := load.Feed(ctx, o.Rounds, o.Interval); err != nil {
		return nil, err
	}
	if err := load.WaitCalculated(ctx, time.Minute); err != nil {
		return nil, err
	}
	liveSteady := live.Ratio(steadyFrom, load.Rounds(), 10*time.Second)

	// kill -9 of a while the feed goes on through b and c, two seconds
	// before a minute: the schedule apps' boundary falls into the
	// failover.
	if err := sleepUntil(ctx, time.Now().Add(2*time.Second).Truncate(time.Minute).Add(time.Minute-2*time.Second)); err != nil {
		return nil, err
	}
	before, err := view(ctx, nodes["b"].HTTP)
	if err != nil {
		return nil, err
	}
	onA := before.held("a")
	edgesOnA := 0
	for _, m := range before.Members {
		if m.NodeID == "a" {
			edgesOnA = m.EdgeConnections
		}
	}
	progress("cluster: kill -9 of node a, which runs %d virtual datapoints and %d edge connections", onA, edgesOnA)
	load.opts.HTTP = urls("a")
	feedDone := make(chan error, 1)
	failoverFrom := load.Rounds()
	go func() { feedDone <- load.Feed(ctx, o.Rounds, o.Interval) }()
	killed := time.Now()
	nodes["a"].Kill()
	half, all, err := waitFailover(ctx, nodes["b"].HTTP, o.VDPs, onA, killed)
	if err != nil {
		return nil, err
	}
	if err := <-feedDone; err != nil {
		return nil, err
	}
	if err := load.WaitCalculated(ctx, time.Minute); err != nil {
		return nil, err
	}
	liveFailover := live.Ratio(failoverFrom, load.Rounds(), 10*time.Second)

	// A tenth stopped through random nodes, then more rounds; once what
	// was uploaded is calculated (above): a stop drops what its actor has
	// not calculated yet, and the verdict could not tell that from a loss.
	progress("cluster: stopping %d virtual datapoints through random nodes", o.VDPs/10)
	for i := 0; i < o.VDPs; i += 10 {
		if err := load.Run(ctx, i, false); err != nil {
			return nil, err
		}
	}
	if err := load.Feed(ctx, o.Rounds, o.Interval); err != nil {
		return nil, err
	}
	running := o.VDPs - (o.VDPs+9)/10

	// a rejoins: the share it takes back.
	progress("cluster: node a rejoins")
	if err := start("a"); err != nil {
		return nil, err
	}
	load.opts.HTTP = urls()
	// Settled once a runs what its reconciler moved in, and nothing runs
	// twice.
	rejoined, err := waitView(ctx, nodes["a"].HTTP, 3, running, time.Minute, func(v clusterStatus) bool {
		return v.held("a") > 0 && v.held("a") == v.movedIn("a")
	})
	if err != nil {
		return nil, err
	}
	if err := load.Feed(ctx, o.Rounds, o.Interval); err != nil {
		return nil, err
	}
	// b stops gracefully: it hands its share over before it exits.
	progress("cluster: node b stops gracefully")
	if err := nodes["b"].Stop(time.Minute); err != nil {
		return nil, err
	}
	load.opts.HTTP = urls("b")
	if _, err := waitView(ctx, nodes["a"].HTTP, 2, running, time.Minute); err != nil {
		return nil, err
	}
	if err := load.Feed(ctx, o.Rounds, o.Interval); err != nil {
		return nil, err
	}
	progress("cluster: verifying every output, write and event")
	verdict, err := load.Verify(ctx, time.Minute)
	if err != nil {
		return nil, err
	}
	apps.stopCrashes()
	writesMost, writesFewest := apps.writesPerMinute(time.Now())
	eventsMost, eventsFewest, events, err := apps.eventsLogged(ctx, 15*time.Second)
	if err != nil {
		return nil, err
	}
	if err := apps.close(ctx); err != nil {
		return nil, err
	}
	for _, n := range nodes {
		if n.Running() {
			if err := n.Stop(time.Minute); err != nil {
				return nil, err
			}
		}
	}
	costRatio, err := clusterCost(ctx, o, svc, progress)
	if err != nil {
		return nil, err
	}
	return map[string]any{
		"key_order":                      ClusterKeys,
		"outputs_missing":                verdict.OutputsMissing,
		"outputs_different":              verdict.OutputsDifferent,
		"acked_lost":                     verdict.AckedLost,
		"failover_max_s":                 round3(all.Seconds()),
		"failover_p50_s":                 round3(half.Seconds()),
		"outputs_after_stop":             verdict.OutputsAfterStop,
		"writes_per_boundary_max":        writesMost,
		"writes_per_boundary_min":        writesFewest,
		"events_logged_per_event_max":    eventsMost,
		"events_logged_per_event_min":    eventsFewest,
		"device_events":                  events,
		"command_p99_ms":                 round3(float64(load.CommandP99().Microseconds()) / 1000),
		"moved_on_rejoin_fraction":       round3(float64(rejoined.movedIn("a")) / float64(running)),
		"cluster_vs_single_ratio":        round3(costRatio),
		"live_ratio_steady":              round3(liveSteady),
		"live_ratio_failover":            round3(liveFailover),
		"moved_on_kill":                  onA,
		"edge_connections_moved_on_kill": edgesOnA,
		"nodes":                          3,
		"vdps":                           o.VDPs,
		"sources":                        o.Sources,
		"rounds":                         load.rounds,
		"scenario":                       "cluster",
	}, nil
}

// sleepUntil waits until t or the end of ctx.
func sleepUntil(ctx context.Context, t time.Time) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Until(t)):
		return nil
	}
}

func round3(x float64) float64 { return float64(int64(x*1000+0.5)) / 1000 }

// clusterStatus is GET /operator/cluster's resource.
type clusterStatus struct {
	Members []struct {
		NodeID            string `json:"node_id"`
		Answered          bool   `json:"answered"`
		VirtualDatapoints int    `json:"virtual_datapoints"`
		EdgeConnections   int    `json:"edge_connections"`
		MovedIn           int    `json:"moved_in"`
	} `json:"members"`
}

func (s clusterStatus) answered() (n, running int) {
	for _, m := range s.Members {
		if m.Answered {
			n++
			running += m.VirtualDatapoints
		}
	}
	return n, running
}

func (s clusterStatus) held(node string) int {
	for _, m := range s.Members {
		if m.NodeID == node {
			return m.VirtualDatapoints
		}
	}
	return 0
}

func (s clusterStatus) movedIn(node string) int {
	for _, m := range s.Members {
		if m.NodeID == node {
			return m.MovedIn
		}
	}
	return 0
}

func view(ctx context.Context, base string) (clusterStatus, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", base+"/operator/cluster", nil)
	if err != nil {
		return clusterStatus{}, err
	}
	req.Header.Set("Authorization", "Bearer "+clusterOperatorToken)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return clusterStatus{}, err
	}
	defer res.Body.Close()
	var out struct {
		Resource clusterStatus `json:"resource"`
	}
	if res.StatusCode != 200 {
		return clusterStatus{}, fmt.Errorf("GET /operator/cluster: HTTP %d", res.StatusCode)
	}
	err = json.NewDecoder(res.Body).Decode(&out)
	return out.Resource, err
}

// waitView polls base's view until members answer running datapoints
// between them (running < 0: any number) and also holds (nil: always),
// and returns that view.
func waitView(ctx context.Context, base string, members, running int, within time.Duration, also ...func(clusterStatus) bool) (clusterStatus, error) {
	deadline := time.Now().Add(within)
	for {
		v, err := view(ctx, base)
		if err == nil {
			if n, r := v.answered(); n == members && (running < 0 || r == running) && (len(also) == 0 || also[0](v)) {
				return v, nil
			}
		}
		if time.Now().After(deadline) {
			return v, fmt.Errorf("not within %s: %d members running %d virtual datapoints (last view %+v, %v)", within, members, running, v, err)
		}
		select {
		case <-ctx.Done():
			return v, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// waitFailover polls a survivor's view after a kill: the times at which
// half of the killed node's datapoints, and all of them, ran elsewhere.
func waitFailover(ctx context.Context, base string, total, moved int, killed time.Time) (half, all time.Duration, err error) {
	survivors := total - moved
	var times []time.Duration
	for deadline := killed.Add(2 * time.Minute); time.Now().Before(deadline); {
		v, err := view(ctx, base)
		if err == nil {
			_, r := v.answered()
			for len(times) < r-survivors {
				times = append(times, time.Since(killed))
			}
			if r >= total {
				sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
				if len(times) == 0 {
					return 0, time.Since(killed), nil
				}
				return times[(len(times)-1)/2], times[len(times)-1], nil
			}
		}
		select {
		case <-ctx.Done():
			return 0, 0, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return 0, 0, fmt.Errorf("the %d virtual datapoints of the killed node did not all run elsewhere within 2 minutes", moved)
}

// clusterCost is what cluster mode costs one node: the same workload
// (uploads by 8 clients, 25 sources × 20 rounds each, as fast as they
// are answered, every output waited for) on one
// node in cluster mode and on one node in single mode, on the same
// services, one after the other; the ratio of their observations per
// second (ingested and calculated).
func clusterCost(ctx context.Context, o ClusterOptions, svc *localcluster.Services, progress func(string, ...any)) (float64, error) {
	var rates [2]float64
	for i, mode := range []string{"cluster", "single"} {
		start := localcluster.StartNode
		if mode == "single" {
			start = localcluster.StartSingle
		}
		n, err := start(ctx, o.Bin, svc, "cost-"+mode, filepath.Join(o.Dir, "node-cost-"+mode),
			"BDP_OPERATOR_TOKEN="+clusterOperatorToken, "BDP_LOG_LEVEL=warn")
		if err != nil {
			return 0, err
		}
		rate, err := costRun(ctx, o, n.HTTP, mode)
		_ = n.Stop(time.Minute)
		if err != nil {
			return 0, err
		}
		progress("cluster: one node in %s mode: %.0f observations/s", mode, rate)
		rates[i] = rate
	}
	return rates[0] / rates[1], nil
}

// costRun is one node's share of clusterCost.
func costRun(ctx context.Context, o ClusterOptions, url, mode string) (float64, error) {
	const sources, vdps, rounds, perUpload = 200, 200, 200, 20
	load, err := StartLoad(ctx, LoadOptions{HTTP: []string{url}, OperatorToken: clusterOperatorToken, VDPs: vdps, Sources: sources,
		Prefix: "cost-" + mode + "-"})
	if err != nil {
		return 0, err
	}
	defer func() { _ = load.Close(context.Background()) }()
	began := time.Now()
	if err := load.FeedAtOnce(ctx, rounds, 8, perUpload); err != nil {
		return 0, err
	}
	if err := load.WaitCalculated(ctx, time.Minute); err != nil {
		return 0, err
	}
	took := time.Since(began)
	verdict, err := load.Verify(ctx, time.Minute)
	if err != nil {
		return 0, err
	}
	if verdict != (Verdict{}) {
		return 0, fmt.Errorf("cost run in %s mode: %+v", mode, verdict)
	}
	return float64(rounds*(sources+vdps)) / took.Seconds(), nil
}
