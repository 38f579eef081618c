package pipeline

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// collector records what it is handed, and appends to each slice it gets
// to show that its slices are its own.
type collector struct{ got [][]Observation }

func (c *collector) Deliver(obs []Observation) {
	c.got = append(c.got, obs)
	_ = append(obs, Observation{DataPointID: "scribble"})
	for i := range obs {
		obs[i].Value += 1000 // the subscriber may change its slice
	}
}

// route hands parts, the requests of one batch, to r the way a batcher
// does after their commit: sorted by Batcher.sortKeys, with a row id for
// every datapoint. The row ids fall as datapoints first arrive, so that
// row-id order is never arrival order.
func route(r *Router, parts ...[]Observation) {
	(&lane{r: r, b: keysOnlyBatcher()}).route(parts...)
}

// lane routes batch after batch as one lane of a batcher does: the same
// row ids, the same working memory (its row cache) for every batch.
type lane struct {
	r *Router
	b *Batcher
	s runScratch
}

func (l *lane) route(parts ...[]Observation) {
	batch := make([]*writeRequest, len(parts))
	for i, p := range parts {
		batch[i] = &writeRequest{obs: p}
		for _, o := range p {
			if k := (dpKey{o.ProjectID, o.DataPointID}); l.b.ids[k] == 0 {
				l.b.ids[k] = 1_000_000 - int64(len(l.b.ids))
			}
		}
	}
	l.r.route(batch, l.b.inputs.sortKeys(batch), &l.s)
}

// A lane's row cache follows subscriptions made and ended between its
// batches: a datapoint routed while nobody listened, then subscribed; a
// second subscriber beside the first; the first one's end; the last one's
// end and a new subscription of the same datapoint.
func TestRouterFollowsSubscriptionsBetweenBatches(t *testing.T) {
	t0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	r := NewRouter()
	l := &lane{r: r, b: keysOnlyBatcher()}
	sec := 0
	next := func() {
		sec++
		l.route([]Observation{{ProjectID: 1, DataPointID: "a", Time: t0.Add(time.Duration(sec) * time.Second)},
			{ProjectID: 1, DataPointID: "b", Time: t0}})
	}
	r.Attach(1, "b", &collector{}) // so that the router routes at all
	first, second, third := &collector{}, &collector{}, &collector{}
	counts := func() []int { return []int{len(first.got), len(second.got), len(third.got)} }
	steps := []struct {
		name   string
		change func()
		want   []int // deliveries so far, per subscriber
	}{
		{"nobody listens", func() {}, []int{0, 0, 0}},
		{"a subscriber comes", func() { r.Attach(1, "a", first) }, []int{1, 0, 0}},
		{"a second one", func() { r.Attach(1, "a", second) }, []int{2, 1, 0}},
		{"the first leaves", func() { r.Detach(1, "a", first) }, []int{2, 2, 0}},
		{"the last leaves", func() { r.Detach(1, "a", second) }, []int{2, 2, 0}},
		{"a new one comes", func() { r.Attach(1, "a", third) }, []int{2, 2, 1}},
	}
	for _, s := range steps {
		s.change()
		next()
		if got := counts(); !slices.Equal(got, s.want) {
			t.Fatalf("%s: deliveries %v, want %v", s.name, got, s.want)
		}
	}
}

// One subscriber of several datapoints (an actor reading several
// sources) gets their deliveries in the order the datapoints first
// arrived in the batch, whatever their row ids: a source that came later
// must not overtake one that came first.
func TestRouterDeliversDatapointsInArrivalOrder(t *testing.T) {
	t0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	r := NewRouter()
	c := &collector{}
	for _, dp := range []string{"x", "y", "z"} {
		r.Subscribe(1, dp, c)
	}
	at := func(dp string, sec int) Observation {
		return Observation{ProjectID: 1, DataPointID: dp, Time: t0.Add(time.Duration(sec) * time.Second)}
	}
	route(r, []Observation{at("y", 1), at("x", 2)}, []Observation{at("z", 3), at("y", 4)})
	var order []string
	for _, d := range c.got {
		order = append(order, d[0].DataPointID)
	}
	if !slices.Equal(order, []string{"y", "x", "z"}) {
		t.Errorf("deliveries in the order %v, want y, x, z (as they first arrived)", order)
	}
}

func TestRouterGroupsABatchPerDatapoint(t *testing.T) {
	t0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(dp string, sec int, v float64) Observation {
		return Observation{ProjectID: 1, DataPointID: dp, Time: t0.Add(time.Duration(sec) * time.Second), Value: v}
	}
	r := NewRouter()
	a1, a2, b, other := &collector{}, &collector{}, &collector{}, &collector{}
	r.Subscribe(1, "a", a1)
	r.Subscribe(1, "a", a2)
	r.Subscribe(1, "b", b)
	endOther := r.Subscribe(2, "a", other) // same name, another project
	endOther()
	endOther() // twice is harmless

	parts := [][]Observation{
		{at("a", 3, 3), at("x", 1, 0), at("b", 1, 1)},
		{at("a", 1, 1), at("b", 2, 2)},
		{},
		{at("a", 2, 2), {ProjectID: 2, DataPointID: "a", Time: t0, Value: 9}},
	}
	route(r, parts...)
	values := func(c *collector) [][]float64 {
		var out [][]float64
		for _, d := range c.got {
			var vs []float64
			for _, o := range d {
				vs = append(vs, o.Value)
			}
			out = append(out, vs)
		}
		return out
	}
	// a1 and a2 each see a's three observations once, in time order; each
	// added 1000 to its own copy only.
	for name, c := range map[string]*collector{"a1": a1, "a2": a2} {
		if got := values(c); len(got) != 1 || !slices.Equal(got[0], []float64{1001, 1002, 1003}) {
			t.Errorf("%s got %v, want one delivery of a at 1, 2, 3", name, got)
		}
	}
	if got := values(b); len(got) != 1 || !slices.Equal(got[0], []float64{1001, 1002}) {
		t.Errorf("b got %v, want one delivery of 1, 2", got)
	}
	if len(other.got) != 0 {
		t.Errorf("an ended subscription got %v", other.got)
	}
	if parts[0][0].Value != 3 {
		t.Errorf("the batch itself was changed: %v", parts[0][0])
	}

	// The scratch is reset between batches: the next one routes afresh.
	route(r, []Observation{at("b", 5, 5)})
	if got := values(b); len(got) != 2 || !slices.Equal(got[1], []float64{1005}) {
		t.Errorf("b's second delivery: %v", got)
	}
	if len(a1.got) != 1 {
		t.Errorf("a1 got a delivery without observations of a: %v", a1.got)
	}
}

// A large batch, then small ones: each is grouped right whatever the
// scratch held before.
func TestRouterAfterALargeBatch(t *testing.T) {
	r := NewRouter()
	c := &collector{}
	r.Subscribe(1, "dp7", c)
	var big []Observation
	for i := range 10_000 {
		big = append(big, Observation{ProjectID: 1, DataPointID: fmt.Sprintf("dp%d", i%5000), Time: time.Unix(int64(i), 0)})
	}
	route(r, big)
	route(r, []Observation{{ProjectID: 1, DataPointID: "dp7", Time: time.Unix(99_999, 0)}})
	if len(c.got) != 2 || len(c.got[0]) != 2 || len(c.got[1]) != 1 {
		t.Fatalf("deliveries %d (%v)", len(c.got), c.got)
	}
}

// tapRecorder records the batches a tap is handed.
type tapRecorder struct {
	mu  sync.Mutex
	got []Stored
}

func (r *tapRecorder) DeliverStored(s Stored) {
	r.mu.Lock()
	r.got = append(r.got, s)
	r.mu.Unlock()
}

// waitFor waits until n batches were tapped: a writer is answered before
// its batch goes to the taps.
func (r *tapRecorder) waitFor(t *testing.T, n int) []Stored {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for len(r.batches()) < n && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	return r.batches()
}

func (r *tapRecorder) batches() []Stored {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

// tapLine renders a tapped observation as "source dp second=value".
func tapLine(s Stored, i int) string {
	o := s.Obs[i]
	return fmt.Sprintf("%s %s %d=%g", s.Sources[i], o.DataPointID, o.Time.Unix()-t0.Unix(), o.Value)
}

// A tap sees every stored batch, whatever is subscribed: the stored values
// (the last of a datapoint and time), grouped by datapoint, in time order,
// each with its request's source; batches in commit order; after its
// removal nothing.
func TestTapSeesEveryStoredBatch(t *testing.T) {
	db := newTestDB(t)
	r := NewRouter()
	b := startBatcher(t, BatcherConfig{MaxWait: 200 * time.Millisecond}, db.store, r)
	rec, other := &tapRecorder{}, &tapRecorder{}
	remove := r.AddTap(rec)
	removeOther := r.AddTap(other)
	at := func(dp string, sec int, v float64) Observation {
		return Observation{ProjectID: db.projectID, DataPointID: dp, Time: t0.Add(time.Duration(sec) * time.Second), Value: v}
	}
	// Two requests of one batch (the first waits 200 ms for company):
	// "a" appears in both, out of time order, with a replaced value.
	first := make(chan error, 1)
	go func() {
		first <- b.Write(context.Background(), SourceHTTP, []Observation{at("a", 3, 3), at("b", 1, 1), at("a", 1, 1)})
	}()
	time.Sleep(50 * time.Millisecond)
	if err := b.Write(context.Background(), SourceMQTT, []Observation{at("a", 2, 2), at("a", 3, 30)}); err != nil {
		t.Fatal(err)
	}
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if err := b.Write(context.Background(), SourceVDP, []Observation{at("c", 0, 7)}); err != nil {
		t.Fatal(err)
	}
	other.waitFor(t, 2)
	removeOther()
	removeOther() // twice is harmless
	got := rec.waitFor(t, 2)
	if len(got) != 2 {
		t.Fatalf("%d batches tapped, want 2: %v", len(got), got)
	}
	var lines []string
	for i := range got[0].Obs {
		lines = append(lines, tapLine(got[0], i))
	}
	// Each datapoint's observations together (datapoints in the order of
	// their row ids, which new ones get in no set order), in time order;
	// a at 3 holds the later request's 30, from MQTT.
	if lines[0] == "http b 1=1" {
		lines = append(lines[1:], lines[0])
	}
	want := []string{"http a 1=1", "mqtt a 2=2", "mqtt a 3=30", "http b 1=1"}
	if !slices.Equal(lines, want) {
		t.Errorf("first batch %v, want %v", lines, want)
	}
	if len(got[1].Obs) != 1 || tapLine(got[1], 0) != "vdp c 0=7" {
		t.Errorf("second batch %v", got[1])
	}
	// The second tap had its own copy: changing one changes not the other.
	got[0].Obs[0].Value = 99
	if o := other.batches()[0].Obs[0]; o.Value != 1 {
		t.Errorf("taps share a slice: %v", o)
	}
	remove()
	if err := b.Write(context.Background(), SourceHTTP, []Observation{at("a", 9, 9)}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if n := len(rec.batches()); n != 2 {
		t.Errorf("a removed tap got %d batches", n)
	}
	if n := len(other.batches()); n != 2 {
		t.Errorf("the second tap got %d batches, want the 2 before its removal", n)
	}
}

// When the store refuses one request of a batch and the others are
// written alone, the tap gets the stored ones only.
func TestTapAfterARefusedRequest(t *testing.T) {
	db := newTestDB(t)
	r := NewRouter()
	rec := &tapRecorder{}
	r.AddTap(rec)
	b := startBatcher(t, BatcherConfig{MaxWait: 300 * time.Millisecond}, db.store, r)
	beyond := time.Date(300_000, 1, 1, 0, 0, 0, 0, time.UTC)
	writes := [][]Observation{
		series(db.projectID, "good", 3, t0),
		{{ProjectID: db.projectID, DataPointID: "bad", Time: beyond, Value: 1}},
	}
	var wg sync.WaitGroup
	for _, w := range writes {
		wg.Add(1)
		go func() { defer wg.Done(); _ = b.Write(context.Background(), SourceKafka, w) }()
	}
	wg.Wait()
	var lines []string
	for _, s := range rec.waitFor(t, 1) {
		for i := range s.Obs {
			lines = append(lines, tapLine(s, i))
		}
	}
	if want := []string{"kafka good 0=0", "kafka good 1=1", "kafka good 2=2"}; !slices.Equal(lines, want) {
		t.Errorf("tapped %v, want %v", lines, want)
	}
}

// An actor attaches one subscriber to each of its sources and detaches
// it from each when it stops: it then gets nothing of that source, and
// the other sources and subscribers keep theirs.
func TestRouterDetachEndsOneAttachment(t *testing.T) {
	t0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	r := NewRouter()
	shared, other := &collector{}, &collector{}
	r.Attach(1, "a", shared)
	r.Attach(1, "b", shared)
	r.Attach(1, "a", other)
	r.Detach(1, "a", shared)
	r.Detach(1, "a", shared) // twice is harmless
	r.Detach(1, "c", shared) // never attached
	route(r, []Observation{{ProjectID: 1, DataPointID: "a", Time: t0, Value: 1}, {ProjectID: 1, DataPointID: "b", Time: t0, Value: 2}})
	var got []string
	for _, d := range shared.got {
		got = append(got, d[0].DataPointID)
	}
	if !slices.Equal(got, []string{"b"}) {
		t.Errorf("the detached subscriber got deliveries of %v, want b's only", got)
	}
	if len(other.got) != 1 || other.got[0][0].DataPointID != "a" {
		t.Errorf("the other subscriber of a got %v, want a's delivery", other.got)
	}
	r.Detach(1, "b", shared)
	r.Detach(1, "a", other)
	if n := r.n.Load(); n != 0 {
		t.Errorf("%d subscriptions counted after every one ended, want 0", n)
	}
}

// keysOnlyBatcher is a batcher that only has its ids cache and an inputs
// lane to sort keys with: what route and the relay take, without a store.
func keysOnlyBatcher() *Batcher {
	b := &Batcher{ids: map[dpKey]int64{}}
	b.inputs = &writer{b: b}
	return b
}
