package pipeline

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/openbdp/bdp/fault"
	"github.com/openbdp/bdp/store"
)

var t0 = time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)

func series(project int64, dp string, n int, start time.Time) []Observation {
	obs := make([]Observation, n)
	for i := range obs {
		obs[i] = Observation{ProjectID: project, DataPointID: dp, Time: start.Add(time.Duration(i) * time.Second), Value: float64(i)}
	}
	return obs
}

// Many concurrent writers: every observation is stored exactly once, in
// batches larger than one request.
func TestConcurrentWritersAllStored(t *testing.T) {
	db := newTestDB(t)
	b := startBatcher(t, BatcherConfig{MaxBatch: 5000, MaxWait: 2 * time.Millisecond}, db.store, NewRouter())
	const writers, requests, per = 8, 40, 50
	var wg sync.WaitGroup
	errs := make(chan error, writers*requests)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for r := 0; r < requests; r++ {
				start := t0.Add(time.Duration(r*per) * time.Second)
				errs <- b.Write(context.Background(), SourceHTTP, series(db.projectID, fmt.Sprintf("dp%d", w), per, start))
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := db.scalar(t, `SELECT count(*) FROM observations`); n != writers*requests*per {
		t.Fatalf("stored %v, want %d", n, writers*requests*per)
	}
	if n := db.scalar(t, `SELECT count(*) FROM datapoints`); n != writers {
		t.Fatalf("%v datapoints, want %d", n, writers)
	}
}

// Data older than the partitions made ahead gets its partition on demand;
// a replay of stored data replaces values instead of failing.
func TestOldDataAndReplays(t *testing.T) {
	db := newTestDB(t)
	b := startBatcher(t, BatcherConfig{}, db.store, NewRouter())
	old := series(db.projectID, "old", 100, time.Date(2011, 7, 1, 0, 0, 0, 0, time.UTC))
	if err := b.Write(context.Background(), SourceCSV, old); err != nil {
		t.Fatal(err)
	}
	for i := range old {
		old[i].Value = 7
	}
	if err := b.Write(context.Background(), SourceCSV, old); err != nil {
		t.Fatalf("replay: %v", err)
	}
	if n, sum := db.scalar(t, `SELECT count(*) FROM observations`), db.scalar(t, `SELECT sum(value) FROM observations`); n != 100 || sum != 700 {
		t.Fatalf("after replay: %v rows, sum %v; want 100 rows of 7", n, sum)
	}
}

// Within one write, a later value of a (datapoint, time) replaces an
// earlier one, however the write is ordered.
func TestLastValueWinsWithinAWrite(t *testing.T) {
	db := newTestDB(t)
	b := startBatcher(t, BatcherConfig{}, db.store, NewRouter())
	t0 := time.Date(2024, 5, 6, 0, 0, 0, 0, time.UTC)
	var obs []Observation
	// Three passes over 300 times of three datapoints, newest first; the
	// last pass holds the values that must stay.
	for pass := 1; pass <= 3; pass++ {
		for i := 299; i >= 0; i-- {
			obs = append(obs, Observation{ProjectID: db.projectID, DataPointID: fmt.Sprintf("dp%d", i%3),
				Time: t0.Add(time.Duration(i) * time.Second), Value: float64(pass)})
		}
	}
	if err := b.Write(context.Background(), SourceHTTP, obs); err != nil {
		t.Fatal(err)
	}
	if n, sum := db.scalar(t, `SELECT count(*) FROM observations`), db.scalar(t, `SELECT sum(value) FROM observations`); n != 300 || sum != 900 {
		t.Fatalf("%v rows, sum %v; want 300 rows of 3", n, sum)
	}
}

// Times are stored to the microsecond: two within one microsecond are one
// observation, the later value wins, and subscribers see the stored time.
func TestTimesWithinAMicrosecondAreOneObservation(t *testing.T) {
	db := newTestDB(t)
	router := NewRouter()
	rec := &recorder{}
	router.Subscribe(db.projectID, "dp", rec)
	b := startBatcher(t, BatcherConfig{}, db.store, router)
	t0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	obs := []Observation{
		{ProjectID: db.projectID, DataPointID: "dp", Time: t0.Add(100), Value: 1},
		{ProjectID: db.projectID, DataPointID: "dp", Time: t0.Add(400), Value: 2},
	}
	if err := b.Write(context.Background(), SourceHTTP, obs); err != nil {
		t.Fatal(err)
	}
	// And again, across batches: the stored row is replaced.
	if err := b.Write(context.Background(), SourceHTTP, []Observation{
		{ProjectID: db.projectID, DataPointID: "dp", Time: t0.Add(999), Value: 3}}); err != nil {
		t.Fatal(err)
	}
	if n, sum := db.scalar(t, `SELECT count(*) FROM observations`), db.scalar(t, `SELECT sum(value) FROM observations`); n != 1 || sum != 3 {
		t.Fatalf("%v rows, sum %v; want one row of 3", n, sum)
	}
	waitFor(t, 5*time.Second, "the deliveries", func() bool { return len(rec.all()) == 3 })
	for _, o := range rec.all() {
		if !o.Time.Equal(t0) {
			t.Fatalf("delivered time %s, want the stored %s", o.Time.Format(time.RFC3339Nano), t0)
		}
	}
}

// A request whose data the database refuses fails alone: the requests
// that shared its batch (of other projects, say) are stored and answered
// with success.
func TestARefusedRequestFailsAlone(t *testing.T) {
	db := newTestDB(t)
	b := startBatcher(t, BatcherConfig{MaxWait: 300 * time.Millisecond}, db.store, NewRouter())
	t0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	beyond := time.Date(300_000, 1, 1, 0, 0, 0, 0, time.UTC) // past PostgreSQL's timestamptz
	writes := [][]Observation{
		series(db.projectID, "good-1", 10, t0),
		{{ProjectID: db.projectID, DataPointID: "bad", Time: beyond, Value: 1}},
		series(db.projectID, "good-2", 10, t0),
	}
	errs := make([]error, len(writes))
	var wg sync.WaitGroup
	for i, w := range writes {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = b.Write(context.Background(), SourceHTTP, w) }()
	}
	wg.Wait()
	if errs[0] != nil || errs[2] != nil || errs[1] == nil {
		t.Fatalf("errors %v; want only the write beyond the calendar to fail", errs)
	}
	if n := db.scalar(t, `SELECT count(*) FROM observations`); n != 20 {
		t.Fatalf("%v rows stored, want the 20 good ones", n)
	}
}

// failingStore is the real store with one injected failure, to see that a
// failed batch fails every request in it and stores none of them.
type failingStore struct {
	*store.Store
	mu    sync.Mutex
	fails int
}

func (f *failingStore) WriteObservations(ctx context.Context, rows []store.Row) error {
	f.mu.Lock()
	fail := f.fails > 0
	f.fails--
	f.mu.Unlock()
	if fail {
		return errors.New("injected failure")
	}
	return f.Store.WriteObservations(ctx, rows)
}

func TestFailedBatchFailsItsRequests(t *testing.T) {
	db := newTestDB(t)
	fs := &failingStore{Store: db.store, fails: 1}
	b := startBatcher(t, BatcherConfig{MaxWait: 50 * time.Millisecond}, fs, NewRouter())
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range errs {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			errs[i] = b.Write(context.Background(), SourceHTTP, series(db.projectID, fmt.Sprintf("f%d", i), 10, t0))
		}(i)
	}
	wg.Wait()
	failed := 0
	for _, err := range errs {
		if err != nil {
			failed++
		}
	}
	stored := db.scalar(t, `SELECT count(*) FROM observations`)
	if failed == 0 || stored != float64(10*(3-failed)) {
		t.Fatalf("%d requests failed, %v observations stored: a failed request must store nothing", failed, stored)
	}
	if err := b.Write(context.Background(), SourceHTTP, series(db.projectID, "after", 5, t0)); err != nil {
		t.Fatalf("the batcher must go on after a failed batch: %v", err)
	}
}

type recorder struct {
	mu  sync.Mutex
	got [][]Observation
}

func (r *recorder) Deliver(obs []Observation) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, obs)
}

// all is every observation delivered so far.
func (r *recorder) all() []Observation {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Observation
	for _, d := range r.got {
		out = append(out, d...)
	}
	return out
}

// Subscribers see stored observations of their datapoint only, in time
// order, and only after they are committed.
func TestRouterDeliversStoredObservationsInTimeOrder(t *testing.T) {
	db := newTestDB(t)
	router := NewRouter()
	rec := &recorder{}
	stop := router.Subscribe(db.projectID, "watched", rec)
	b := startBatcher(t, BatcherConfig{}, db.store, router)
	unordered := []Observation{
		{ProjectID: db.projectID, DataPointID: "watched", Time: t0.Add(3 * time.Second), Value: 3},
		{ProjectID: db.projectID, DataPointID: "other", Time: t0, Value: 9},
		{ProjectID: db.projectID, DataPointID: "watched", Time: t0.Add(time.Second), Value: 1},
		{ProjectID: db.projectID, DataPointID: "watched", Time: t0.Add(2 * time.Second), Value: 2},
	}
	if err := b.Write(context.Background(), SourceHTTP, unordered); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		rec.mu.Lock()
		n := len(rec.got)
		rec.mu.Unlock()
		if n > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	rec.mu.Lock()
	got := rec.got
	rec.mu.Unlock()
	if len(got) != 1 || len(got[0]) != 3 {
		t.Fatalf("deliveries: %v", got)
	}
	for i, o := range got[0] {
		if o.Value != float64(i+1) || o.DataPointID != "watched" {
			t.Fatalf("delivery out of order or foreign: %v", got[0])
		}
	}
	if stored := db.scalar(t, `SELECT count(*) FROM observations`); stored != 4 {
		t.Fatalf("delivered before commit? %v stored", stored)
	}
	stop()
	if err := b.Write(context.Background(), SourceHTTP, series(db.projectID, "watched", 2, t0.Add(time.Hour))); err != nil {
		t.Fatal(err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.got) != 1 {
		t.Fatalf("delivery after unsubscribe: %v", rec.got)
	}
}

// slowStore holds every write until released: a stand-in for a database
// that falls behind, wrapped around the real one.
type slowStore struct {
	*store.Store
	release chan struct{}
}

func (s *slowStore) WriteObservations(ctx context.Context, rows []store.Row) error {
	<-s.release
	return s.Store.WriteObservations(ctx, rows)
}

// When storage falls behind, writers wait (backpressure) instead of the
// queue growing; Stop answers every accepted write, later ones are refused.
func TestBackpressureAndStop(t *testing.T) {
	db := newTestDB(t)
	slow := &slowStore{Store: db.store, release: make(chan struct{})}
	b, err := NewBatcher(BatcherConfig{QueueDepth: 1, MaxBatch: 10, MaxWait: time.Millisecond}, slow, NewRouter(), nil)
	if err == nil {
		t.Fatal("a nil registry must be refused")
	}
	b = startBatcher(t, BatcherConfig{QueueDepth: 1, MaxBatch: 10, MaxWait: time.Millisecond}, slow, NewRouter())
	results := make(chan error, 20)
	for i := 0; i < 20; i++ {
		go func(i int) {
			results <- b.Write(context.Background(), SourceHTTP, series(db.projectID, fmt.Sprintf("bp%d", i), 10, t0))
		}(i)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := b.Write(ctx, SourceHTTP, series(db.projectID, "late", 10, t0)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a full pipeline must make writers wait: %v", err)
	}
	close(slow.release)
	for i := 0; i < 20; i++ {
		if err := <-results; err != nil {
			t.Fatal(err)
		}
	}
	b.Stop()
	if err := b.Write(context.Background(), SourceHTTP, series(db.projectID, "x", 1, t0)); !fault.Is(err, fault.Unavailable) {
		t.Fatalf("write after Stop: %v", err)
	}
}

// heldStore holds its first write until released, and tells when that
// write has begun: a transaction of inputs that takes long.
type heldStore struct {
	*store.Store
	once    sync.Once
	begun   chan struct{}
	release chan struct{}
}

func (s *heldStore) WriteObservations(ctx context.Context, rows []store.Row) error {
	first := false
	s.once.Do(func() { first = true })
	if first {
		close(s.begun)
		<-s.release
	}
	return s.Store.WriteObservations(ctx, rows)
}

// Virtual datapoints' outputs have a lane of their own: they commit while
// a transaction of inputs is still under way, instead of waiting behind
// it (issue 18).
func TestOutputsCommitBesideAnInputTransaction(t *testing.T) {
	db := newTestDB(t)
	held := &heldStore{Store: db.store, begun: make(chan struct{}), release: make(chan struct{})}
	b := startBatcher(t, BatcherConfig{}, held, NewRouter())
	var releaseOnce sync.Once
	release := func() { releaseOnce.Do(func() { close(held.release) }) }
	t.Cleanup(release) // before the batcher's Stop, which waits for the held write
	inputDone := make(chan error, 1)
	go func() { inputDone <- b.Write(context.Background(), SourceHTTP, series(db.projectID, "input", 5, t0)) }()
	<-held.begun

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := b.Write(ctx, SourceVDP, series(db.projectID, "output", 3, t0)); err != nil {
		t.Fatalf("an output waited for the inputs' transaction: %v", err)
	}
	if n := db.scalar(t, `SELECT count(*) FROM observations`); n != 3 {
		t.Fatalf("%v observations stored while the inputs' transaction is held, want the 3 outputs", n)
	}
	// The inputs' lane still keeps its writers' order behind the held one.
	release()
	if err := <-inputDone; err != nil {
		t.Fatal(err)
	}
	if err := b.Write(context.Background(), SourceHTTP, series(db.projectID, "input", 5, t0.Add(time.Minute))); err != nil {
		t.Fatal(err)
	}
	if n := db.scalar(t, `SELECT count(*) FROM observations`); n != 13 {
		t.Fatalf("%v observations stored, want 13", n)
	}
}
