package mqtt

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/openbdp/bdp/codec"
	"github.com/openbdp/bdp/pipeline"
	"github.com/openbdp/bdp/store"
)

// deliveries records the times routed for one datapoint, in the order
// the router delivered them.
type deliveries struct {
	mu    sync.Mutex
	times []time.Time
}

func (d *deliveries) Deliver(obs []pipeline.Observation) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, o := range obs {
		d.times = append(d.times, o.Time)
	}
}

func (d *deliveries) ordered(n int) (bool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for i := 1; i < len(d.times); i++ {
		if !d.times[i].After(d.times[i-1]) {
			return true, fmt.Errorf("delivery %d at %v after %v: out of order", i, d.times[i], d.times[i-1])
		}
	}
	return len(d.times) >= n, nil
}

// In a cluster one node at a time ingests, through the cluster's own
// session: the others ingest nothing; what gateways publish while the
// session changes hands waits at the broker, and the next owner stores it,
// every datapoint's observations in the order they were published.
func TestExternalClusterIngestsThroughOneSessionInOrder(t *testing.T) {
	f := newExternalFixture(t)
	// The fixture's node ran alone (the shared subscription); it comes
	// back as node a of a cluster, whose session must drop that
	// subscription.
	if err := f.ext.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Two nodes, each with its own pipeline into the one store and one
	// router (where order is seen), both able to take the session.
	node := func(name string) *External {
		sink, err := pipeline.NewBatcher(pipeline.BatcherConfig{MaxWait: time.Millisecond}, f.store, f.router, prometheus.NewRegistry())
		if err != nil {
			t.Fatal(err)
		}
		go sink.Run()
		t.Cleanup(sink.Stop)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		ext, err := StartExternal(ctx, ExternalConfig{URL: f.broker.URL, AdminUser: f.broker.AdminUser, AdminPassword: f.broker.AdminPassword,
			ClientID: name, IngestClientID: "bdp-test-ingest", Store: f.store, Sink: sink})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = ext.Close(context.Background()) })
		return ext
	}
	a, b := node("bdp-test"), node("bdp-node-b")
	f.ext = a // the fixture's users are set through it
	pid, admin := f.company(t, "acme")
	f.mqttUser(t, store.MQTTUser{ProjectID: pid, Username: "gw", Rights: store.MQTTWrite, CreatedBy: admin}, "gw-password")
	var seen deliveries
	t.Cleanup(f.router.Subscribe(pid, "seq", &seen))
	gw := f.mustConnect(t, "gw", "gw-password")
	at := time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)
	sent := 0
	publish := func(n int) {
		for range n {
			gw.publish(t, codec.DatapointTopic(pid, "seq"), fmt.Sprintf(`{"time":%q,"value":%d}`, at.Add(time.Duration(sent)*time.Second).Format(time.RFC3339), sent))
			sent++
		}
	}
	waitOrdered := func(what string) {
		t.Helper()
		eventually(t, what, func() bool {
			done, err := seen.ordered(sent)
			if err != nil {
				t.Fatal(err)
			}
			return done && f.stored(t, pid, "seq") == int64(sent)
		})
	}

	if err := a.SetIngesting(true); err != nil {
		t.Fatal(err)
	}
	publish(300)
	waitOrdered("a stores every publish, in order")
	if got := testutil.ToFloat64(b.metrics.ingested); got != 0 {
		t.Fatalf("b, which does not own ingestion, ingested %v messages", got)
	}

	// a hands the session over; what comes meanwhile waits at the broker.
	if err := a.SetIngesting(false); err != nil {
		t.Fatal(err)
	}
	before := testutil.ToFloat64(a.metrics.ingested)
	publish(300)
	time.Sleep(300 * time.Millisecond)
	if got := f.stored(t, pid, "seq"); got != 300 || testutil.ToFloat64(a.metrics.ingested) != before {
		t.Fatalf("%d stored while no node held the session, want 300", got)
	}
	if err := b.SetIngesting(true); err != nil {
		t.Fatal(err)
	}
	publish(100)
	waitOrdered("b stores what waited and what follows, in order")
}
