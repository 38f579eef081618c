package pipeline

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"

	"github.com/openbdp/bdp/fault"
	"github.com/openbdp/bdp/pipeline/kafkatest"
	"github.com/openbdp/bdp/store/storetest"
)

// The relay against a real broker (kafkatest) and a real database: each
// "node" is a router, a batcher publishing through a KafkaRelay, and a
// RelayConsumer feeding the router, as bdp serve wires them in a cluster.

type relayNode struct {
	router  *Router
	batcher *Batcher
}

// startRelayNode runs a node on db's store and the relay of cfg until the
// test ends.
func startRelayNode(t *testing.T, db *testDB, cfg KafkaRelayConfig) *relayNode {
	t.Helper()
	rl := newTestRelay(t, cfg)
	router := NewRouter()
	startRelayConsumer(t, cfg, router)
	return &relayNode{router: router, batcher: startBatcher(t, BatcherConfig{Relay: rl}, db.store, router)}
}

// newTestRelay is a KafkaRelay closed when the test ends, after the
// batchers started later have stopped (cleanups run in reverse).
func newTestRelay(t *testing.T, cfg KafkaRelayConfig) *KafkaRelay {
	t.Helper()
	rl, err := NewKafkaRelay(context.Background(), cfg, testLog(t), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rl.Close() })
	return rl
}

// startRelayConsumer consumes into router until the test ends.
func startRelayConsumer(t *testing.T, cfg KafkaRelayConfig, router *Router) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	c, err := StartRelayConsumer(ctx, cfg, router, testLog(t), prometheus.NewRegistry())
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		select {
		case <-waitDone(c):
		case <-time.After(30 * time.Second):
			t.Errorf("the relay consumer did not stop within 30 s")
		}
	})
}

func waitDone(c *RelayConsumer) <-chan struct{} {
	done := make(chan struct{})
	go func() { c.Wait(); close(done) }()
	return done
}

func testLog(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// lines renders deliveries, one line each: "project/dp@time=value ...".
func lines(got [][]Observation) string {
	var out []string
	for _, d := range got {
		var obs []string
		for _, o := range d {
			obs = append(obs, fmt.Sprintf("%d/%s@%s=%g", o.ProjectID, o.DataPointID, o.Time.UTC().Format(time.RFC3339Nano), o.Value))
		}
		out = append(out, strings.Join(obs, " "))
	}
	return strings.Join(out, "\n")
}

func (r *recorder) lines() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return lines(r.got)
}

func (r *recorder) deliveries() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.got)
}

// publishedMessages counts the messages in topic.
func publishedMessages(t *testing.T, topic string, partitions int) int64 {
	var n int64
	for _, end := range kafkatest.EndOffsets(t, topic, partitions) {
		n += end
	}
	return n
}

// Two nodes on one database and one relay topic: what is written through
// node B reaches the subscribers of node A, and of B itself, through the
// relay only, exactly as route would hand it to them (each datapoint's
// observations in time order, the datapoints of a project in the order
// they arrived) and exactly once. Write returns only once its batch is
// in the topic.
func TestRelayReachesEveryNode(t *testing.T) {
	db := newTestDB(t)
	p1, p2 := db.projectID, storetest.NewTenant(t, db.store, "beta").Project.ID
	topic := kafkatest.Topic(t, 3)
	cfg := KafkaRelayConfig{Brokers: kafkatest.Brokers(t), Topic: topic}
	a, b := startRelayNode(t, db, cfg), startRelayNode(t, db, cfg)

	type sub struct {
		project int64
		dp      string
	}
	subs := []sub{{p1, "x"}, {p1, "y"}, {p1, "z"}, {p2, "x"}}
	// One recorder for a project's datapoints, as an actor reading several
	// sources; the expected deliveries are route's on a router of its own.
	recA, recB, want := map[int64]*recorder{}, map[int64]*recorder{}, map[int64]*recorder{}
	local := NewRouter()
	for _, s := range subs {
		for _, m := range []map[int64]*recorder{recA, recB, want} {
			if m[s.project] == nil {
				m[s.project] = &recorder{}
			}
		}
		a.router.Subscribe(s.project, s.dp, recA[s.project])
		b.router.Subscribe(s.project, s.dp, recB[s.project])
		local.Subscribe(s.project, s.dp, want[s.project])
	}

	at := func(project int64, dp string, ms int, v float64) Observation {
		return Observation{ProjectID: project, DataPointID: dp, Time: t0.Add(time.Duration(ms) * time.Millisecond), Value: v}
	}
	writes := []struct {
		name string
		obs  []Observation
	}{
		{"datapoints interleaved, times unordered", []Observation{at(p1, "y", 2000, 1), at(p1, "x", 1000, 2), at(p1, "y", 1000, 3), at(p1, "z", 500, 4), at(p1, "x", 3000, 5)}},
		{"unsubscribed datapoints between", []Observation{at(p1, "other", 0, 6), at(p1, "z", 4000, 7), at(p1, "nobody", 0, 8), at(p1, "x", 4000, 9)}},
		{"two projects, one message each", []Observation{at(p2, "x", 1000, 10), at(p1, "y", 5000, 11), at(p2, "x", 500, 12), at(p1, "x", 5000, 13)}},
		{"a replaced value is delivered as route does", []Observation{at(p1, "z", 4000, 14), at(p1, "z", 4000, 15)}},
		{"a large batch", series(p1, "y", 5000, t0.Add(time.Hour))},
	}
	messages := int64(0)
	for _, w := range writes {
		projects := map[int64]bool{}
		for _, o := range w.obs {
			projects[o.ProjectID] = true
		}
		if err := b.batcher.Write(context.Background(), SourceHTTP, append([]Observation(nil), w.obs...)); err != nil {
			t.Fatalf("%s: %v", w.name, err)
		}
		messages += int64(len(projects))
		if got := publishedMessages(t, topic, 3); got != messages {
			t.Fatalf("%s: Write returned with %d messages in the topic, want %d (one per project of every batch so far)", w.name, got, messages)
		}
		batch, keys, _ := committed(nil, w.obs)
		local.route(batch, keys, &runScratch{})
	}
	// The last write reaches both projects' partitions: once it is
	// delivered, a duplicate of anything before it would be too.
	for project, r := range want {
		for name, got := range map[string]*recorder{"A": recA[project], "B": recB[project]} {
			waitFor(t, 30*time.Second, fmt.Sprintf("node %s's deliveries of project %d", name, project), func() bool {
				return got.deliveries() >= r.deliveries()
			})
			time.Sleep(200 * time.Millisecond) // room for a duplicate to show
			if g, w := got.lines(), r.lines(); g != w {
				t.Errorf("node %s, project %d got:\n%.2000s\nwant (as route delivers):\n%.2000s", name, project, g, w)
			}
		}
	}
}

// A failed publication answers the writers with an error (Unavailable)
// and delivers nothing, neither on this node nor through the relay: a
// write on a healthy node after it is the first thing the subscriber
// gets.
func TestRelayPublishFailureFailsTheWrite(t *testing.T) {
	cases := []struct {
		name  string
		relay func(t *testing.T, cfg KafkaRelayConfig) Relay
	}{
		{"closed writer", func(t *testing.T, cfg KafkaRelayConfig) Relay {
			rl := newTestRelay(t, cfg)
			if err := rl.Close(); err != nil {
				t.Fatal(err)
			}
			return rl
		}},
		{"unreachable broker", func(t *testing.T, cfg KafkaRelayConfig) Relay {
			cfg.Brokers = []string{"127.0.0.1:1"}
			cfg.WriteTimeout = time.Second
			if err := cfg.fill(); err != nil {
				t.Fatal(err)
			}
			rl, err := newKafkaRelay(cfg, testLog(t), nil) // NewKafkaRelay would fail on the topic
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = rl.Close() })
			return rl
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			db := newTestDB(t)
			topic := kafkatest.Topic(t, 2)
			cfg := KafkaRelayConfig{Brokers: kafkatest.Brokers(t), Topic: topic}
			healthy := startRelayNode(t, db, cfg)
			router := NewRouter()
			rec := &recorder{}
			router.Subscribe(db.projectID, "dp", rec)
			healthy.router.Subscribe(db.projectID, "dp", rec)
			startRelayConsumer(t, cfg, router)
			broken := startBatcher(t, BatcherConfig{Relay: c.relay(t, cfg)}, db.store, router)

			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			err := broken.Write(ctx, SourceHTTP, series(db.projectID, "dp", 3, t0))
			if err == nil || !fault.Is(err, fault.Unavailable) {
				t.Fatalf("a write whose publication failed: %v, want an Unavailable error", err)
			}
			marker := []Observation{{ProjectID: db.projectID, DataPointID: "dp", Time: t0.Add(time.Hour), Value: 42}}
			if err := healthy.batcher.Write(ctx, SourceHTTP, marker); err != nil {
				t.Fatal(err)
			}
			waitFor(t, 30*time.Second, "the healthy node's write", func() bool { return rec.deliveries() >= 2 })
			time.Sleep(200 * time.Millisecond)
			if got, want := rec.lines(), lines([][]Observation{marker, marker}); got != want {
				t.Fatalf("deliveries:\n%s\nwant only the healthy write's, on both routers:\n%s", got, want)
			}
		})
	}
}

// A consumer starts at the newest offset: what was published before it
// started is not delivered, what is published once it returned is. The
// relay makes its topic when it is missing, with the partitions asked for.
func TestRelayConsumerStartsAtTheNewest(t *testing.T) {
	db := newTestDB(t)
	p1, p2 := db.projectID, storetest.NewTenant(t, db.store, "beta").Project.ID
	cfg := KafkaRelayConfig{Brokers: kafkatest.Brokers(t), Topic: fmt.Sprintf("test-relay-new-%d", time.Now().UnixNano()), Partitions: 4, ReplicationFactor: 1}
	t.Cleanup(func() {
		c := &kafka.Client{Addr: kafka.TCP(cfg.Brokers...)}
		_, _ = c.DeleteTopics(context.Background(), &kafka.DeleteTopicsRequest{Topics: []string{cfg.Topic}})
	})
	writer := startBatcher(t, BatcherConfig{Relay: newTestRelay(t, cfg)}, db.store, NewRouter())
	write := func(v float64) {
		t.Helper()
		obs := []Observation{
			{ProjectID: p1, DataPointID: "dp", Time: t0.Add(time.Duration(v) * time.Second), Value: v},
			{ProjectID: p2, DataPointID: "dp", Time: t0.Add(time.Duration(v) * time.Second), Value: v},
		}
		if err := writer.Write(context.Background(), SourceHTTP, obs); err != nil {
			t.Fatal(err)
		}
	}
	for v := range 5 {
		write(float64(v)) // before the consumer
	}
	router := NewRouter()
	rec := &recorder{}
	router.Subscribe(p1, "dp", rec)
	router.Subscribe(p2, "dp", rec)
	startRelayConsumer(t, cfg, router)
	write(100) // at once after it returned
	waitFor(t, 30*time.Second, "the write after the start", func() bool { return rec.deliveries() >= 2 })
	time.Sleep(200 * time.Millisecond)
	for _, o := range rec.all() {
		if o.Value != 100 {
			t.Fatalf("delivered %v, published before the consumer started; all: %v", o, rec.all())
		}
	}
	if n := rec.deliveries(); n != 2 {
		t.Fatalf("%d deliveries, want the two projects' of the last write", n)
	}
	// A transport of its own: the shared one's metadata may predate the topic.
	c := &kafka.Client{Addr: kafka.TCP(cfg.Brokers...), Transport: &kafka.Transport{}}
	meta, err := c.Metadata(context.Background(), &kafka.MetadataRequest{Topics: []string{cfg.Topic}})
	if err != nil || len(meta.Topics) != 1 || len(meta.Topics[0].Partitions) != 4 {
		t.Fatalf("the relay's topic: %+v, %v; want it made with 4 partitions", meta, err)
	}
}

// With a relay, a request the database refuses still fails alone: the
// requests that shared its batch are stored, published and answered with
// success, and only they are delivered.
func TestRelayAfterARefusedRequest(t *testing.T) {
	db := newTestDB(t)
	topic := kafkatest.Topic(t, 2)
	cfg := KafkaRelayConfig{Brokers: kafkatest.Brokers(t), Topic: topic}
	router := NewRouter()
	rec := &recorder{}
	for _, dp := range []string{"good-1", "bad", "good-2"} {
		router.Subscribe(db.projectID, dp, rec)
	}
	startRelayConsumer(t, cfg, router)
	b := startBatcher(t, BatcherConfig{MaxWait: 300 * time.Millisecond, Relay: newTestRelay(t, cfg)}, db.store, router)
	beyond := time.Date(300_000, 1, 1, 0, 0, 0, 0, time.UTC) // past PostgreSQL's timestamptz
	writes := [][]Observation{
		series(db.projectID, "good-1", 2, t0),
		{{ProjectID: db.projectID, DataPointID: "bad", Time: beyond, Value: 1}},
		series(db.projectID, "good-2", 2, t0),
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	errs := make([]error, len(writes))
	done := make(chan struct{})
	for i, w := range writes {
		go func() {
			errs[i] = b.Write(ctx, SourceHTTP, w)
			done <- struct{}{}
		}()
	}
	for range writes {
		<-done
	}
	if errs[0] != nil || errs[2] != nil || errs[1] == nil {
		t.Fatalf("errors %v; want only the write beyond the calendar to fail", errs)
	}
	// Answered after their publication: both are in the topic already.
	if n := publishedMessages(t, topic, 2); n < 1 {
		t.Fatalf("the good writes were answered with nothing in the topic")
	}
	waitFor(t, 30*time.Second, "the good writes' deliveries", func() bool { return len(rec.all()) >= 4 })
	time.Sleep(200 * time.Millisecond)
	var got []string
	for _, o := range rec.all() {
		got = append(got, o.DataPointID)
	}
	slices.Sort(got) // the writes raced to the queue
	if strings.Join(got, " ") != "good-1 good-1 good-2 good-2" {
		t.Fatalf("delivered %v, want the good writes', once", got)
	}
}
