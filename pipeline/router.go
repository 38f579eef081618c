package pipeline

import (
	"cmp"
	"slices"
	"sync"
	"sync/atomic"
)

// Subscriber receives stored observations of one datapoint, in time order
// within each delivery, deliveries of one lane of the batcher in commit
// order. Deliver must return quickly (hand the slice to a mailbox) and be
// safe to call from the two lanes' goroutines at once; the slice is the
// subscriber's.
type Subscriber interface {
	Deliver(obs []Observation)
}

type dpKey struct {
	project int64
	id      string
}

// Router hands stored observations to the subscribers of their datapoint.
// Safe for concurrent use.
type Router struct {
	mu   sync.RWMutex
	subs map[dpKey]*subscribers // the subscribed datapoints'
	made uint64                 // entries of subs ever made, under mu: see rowCache
	n    atomic.Int64           // subscriptions, so a batch nobody listens to costs nothing

	taps  []*Tap       // router-wide subscribers; replaced, never changed in place
	nTaps atomic.Int64 // len(taps), read without the lock

	// runs is DeliverRelayed's working memory, kept between calls: it
	// runs for every relayed batch.
	scratchMu sync.Mutex
	runs      []routeRun
}

// subscribers are one datapoint's subscriptions. The lanes' caches keep
// pointers to it by row id (rowCache), so Attach and Detach change it in
// place rather than replace it, under the router's lock, and Detach marks
// an emptied one gone as it leaves the map.
type subscribers struct {
	list []Subscriber // replaced, never changed in place: route reads it after the lock
	gone bool
}

// NewRouter returns a router without subscribers.
func NewRouter() *Router {
	return &Router{subs: map[dpKey]*subscribers{}}
}

// Subscribe registers interest in one datapoint; the returned func ends it
// and may be called more than once. s may be any Subscriber, and the same
// one may subscribe twice.
func (r *Router) Subscribe(projectID int64, dataPointID string, s Subscriber) (unsubscribe func()) {
	sub := &subscription{s}
	r.Attach(projectID, dataPointID, sub)
	return func() { r.Detach(projectID, dataPointID, sub) }
}

// subscription gives a subscriber of Subscribe an identity of its own.
type subscription struct{ s Subscriber }

func (s *subscription) Deliver(obs []Observation) { s.s.Deliver(obs) }

// Attach is Subscribe for a subscriber that is a pointer, which Detach
// finds again by ==: it costs no handle, which at 100,000 running virtual
// datapoints was 70 bytes of heap per source they read (issue 18).
func (r *Router) Attach(projectID int64, dataPointID string, s Subscriber) {
	k := dpKey{projectID, dataPointID}
	r.mu.Lock()
	e := r.subs[k]
	if e == nil {
		e = &subscribers{}
		r.subs[k] = e
		r.made++
	}
	e.list = append(slices.Clip(e.list), s)
	r.mu.Unlock()
	r.n.Add(1)
}

// Detach ends one Attach of s to the datapoint; it does nothing when
// there is none.
func (r *Router) Detach(projectID int64, dataPointID string, s Subscriber) {
	k := dpKey{projectID, dataPointID}
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.subs[k]
	if e == nil {
		return // already ended
	}
	i := slices.Index(e.list, s)
	if i < 0 {
		return // already ended
	}
	if len(e.list) == 1 {
		delete(r.subs, k)
		e.list, e.gone = nil, true
	} else {
		// A new slice: route may still be reading the old one.
		e.list = slices.Delete(slices.Clone(e.list), i, i+1)
	}
	r.n.Add(-1)
}

// routeRun is one subscribed datapoint's observations in a delivery: the
// keys [lo, hi) of the batch, the first of which arrived at first.
type routeRun struct {
	subs   []Subscriber
	lo, hi int
	first  arrival
}

// arrival orders the observations of a batch as they came: request, then
// index.
type arrival struct{ req, i int32 }

func (a arrival) compare(b arrival) int {
	if c := cmp.Compare(a.req, b.req); c != 0 {
		return c
	}
	return cmp.Compare(a.i, b.i)
}

// route delivers a stored batch. keys are its observations sorted by
// datapoint row id, time and arrival (writer.sortKeys), so each
// datapoint's observations are one run, already in time order: its
// subscribers are looked up once per datapoint, and nothing is grouped or
// sorted again. Each run goes out as one slice of a single allocation for
// the whole batch.
//
// The runs go out in the order their datapoints first arrived in the
// batch, not in row-id order: an actor reading several sources takes its
// deliveries one after the other, and a source stamped later must not
// reach it before another's earlier observation that came first (its
// outputs would differ from a recompute, which goes in time order).
//
// With a relay, the batcher publishes the same runs in the same order
// (writer.relayBatches) instead, and every node's router delivers them
// (DeliverRelayed).
//
// s is the caller's working memory: each lane of the batcher routes from
// its own writer goroutine, and the two must not share it.
func (r *Router) route(batch []*writeRequest, keys []rowKey, s *runScratch) {
	if r.n.Load() == 0 || len(keys) == 0 {
		return
	}
	runs, total := s.runs[:0], 0
	r.mu.RLock()
	eachRun(keys, func(lo, hi int, first arrival) {
		if subs := r.subscribersOf(&s.rows, batch, keys[lo]); len(subs) > 0 {
			runs = append(runs, routeRun{subs: subs, lo: lo, hi: hi, first: first})
			total += hi - lo
		}
	})
	r.mu.RUnlock()
	s.runs = runs
	if len(runs) == 0 {
		return // the outputs' lane, mostly: nobody reads them
	}
	all := make([]Observation, 0, total)
	for _, ri := range s.arrivalOrder(batch, len(keys)) {
		run := &runs[ri]
		from := len(all)
		for _, k := range keys[run.lo:run.hi] {
			all = append(all, batch[k.req].obs[k.i])
		}
		fanOut(run.subs, all[from:len(all):len(all)])
	}
	clear(runs) // drop the subscription lists
}

// rowCache is a lane's map from datapoint row ids to their subscribers,
// beside the router's by (project, name): at 270,000 datapoints a lookup
// by name missed the caches twice (the map's slot, then the stored name to
// compare), and route's lookups were a tenth of the CPU of the 100,000
// scenario (issue 18). A datapoint nobody subscribes to is cached as nil,
// valid while the router has made no new entry since (made).
type rowCache struct {
	byRow map[int64]cachedSubscribers
}

type cachedSubscribers struct {
	subs *subscribers // nil: none
	made uint64       // the router's made when a nil was cached
}

// maxRowCache bounds a lane's rowCache; a full one starts again empty.
const maxRowCache = 1 << 20

// subscribersOf looks up the subscribers of k's datapoint, through the
// lane's row cache. Call it under r.mu's read lock.
func (r *Router) subscribersOf(c *rowCache, batch []*writeRequest, k rowKey) []Subscriber {
	if k.dp != 0 { // 0: forgotten, and may stand for several names
		if e, ok := c.byRow[k.dp]; ok {
			if e.subs != nil && !e.subs.gone {
				return e.subs.list
			}
			if e.subs == nil && e.made == r.made {
				return nil
			}
		}
	}
	o := &batch[k.req].obs[k.i]
	e := r.subs[dpKey{o.ProjectID, o.DataPointID}]
	if k.dp != 0 {
		if c.byRow == nil || len(c.byRow) >= maxRowCache {
			c.byRow = map[int64]cachedSubscribers{}
		}
		c.byRow[k.dp] = cachedSubscribers{subs: e, made: r.made}
	}
	if e == nil {
		return nil
	}
	return e.list
}

// eachRun calls f with every datapoint's run of keys, sorted as
// writer.sortKeys sorts them: the keys [lo, hi), in time order, and the
// arrival of the one among them that arrived first. It is the step route
// and the relay share, so that both cut a batch into the same runs.
func eachRun(keys []rowKey, f func(lo, hi int, first arrival)) {
	for lo := 0; lo < len(keys); {
		hi, first := lo+1, arrival{keys[lo].req, keys[lo].i}
		// Row id 0 is a datapoint forgotten while its batch was formed
		// (ForgetProject): it may stand for several names, so each of its
		// observations is a run of its own.
		for ; hi < len(keys) && keys[hi].dp == keys[lo].dp && keys[lo].dp != 0; hi++ {
			if a := (arrival{keys[hi].req, keys[hi].i}); a.compare(first) < 0 {
				first = a
			}
		}
		f(lo, hi, first)
		lo = hi
	}
}

// runScratch is the working memory of cutting a batch into runs, kept by
// the writer goroutine that does it, for its next batch.
type runScratch struct {
	rows   rowCache // route's
	runs   []routeRun
	at     []int32 // arrivalOrder's: the run first arriving at each position, +1
	offset []int32 // arrivalOrder's: each request's first position
	order  []int32 // arrivalOrder's result
}

// arrivalOrder returns the indexes of s.runs in the order their
// datapoints first arrived in the batch of n observations, the order of
// delivery (see route). Each run's first arrival is a position of its
// own in the batch, so placing every run at its position and reading the
// positions in order sorts them without a comparison: a sort of 10,000
// runs a batch was 3.5 % of the CPU of the 100,000 scenario (issue 18).
func (s *runScratch) arrivalOrder(batch []*writeRequest, n int) []int32 {
	s.offset = s.offset[:0]
	var pos int32
	for _, r := range batch {
		s.offset = append(s.offset, pos)
		pos += int32(len(r.obs))
	}
	s.at = slices.Grow(s.at[:0], n)[:n]
	clear(s.at)
	for i, run := range s.runs {
		s.at[s.offset[run.first.req]+run.first.i] = int32(i) + 1
	}
	s.order = s.order[:0]
	for _, ri := range s.at {
		if ri != 0 {
			s.order = append(s.order, ri-1)
		}
	}
	return s.order
}

// fanOut hands one run to its subscribers. list must be capped (full
// slice expression), so that a subscriber's append cannot spill into the
// next run.
func fanOut(subs []Subscriber, list []Observation) {
	for i, s := range subs {
		out := list
		if i < len(subs)-1 {
			out = slices.Clone(list) // every subscriber owns its slice
		}
		s.Deliver(out)
	}
}

// Stored is one committed batch as a tap sees it: the stored observations
// (the last value of each datapoint and time), grouped by datapoint and in
// time order within each datapoint, and where each came from: Sources[i]
// is the source of Obs[i]. Both slices are the tap's.
type Stored struct {
	Obs     []Observation
	Sources []Source
}

// Tap receives every stored batch of every project, each lane's in commit
// order. DeliverStored runs on a lane's writer goroutine between two
// commits, perhaps on both lanes' at once: it must hand the batch off at
// once (a bounded queue that drops when full), never wait, or it stalls
// every source of the node.
type Tap interface {
	DeliverStored(Stored)
}

// AddTap registers a router-wide subscriber; the returned func removes it
// and may be called more than once. Without taps, building their batches
// costs nothing.
func (r *Router) AddTap(t Tap) (remove func()) {
	entry := &t
	r.mu.Lock()
	r.taps = append(slices.Clip(r.taps), entry)
	r.nTaps.Store(int64(len(r.taps)))
	r.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			r.mu.Lock()
			defer r.mu.Unlock()
			if i := slices.Index(r.taps, entry); i >= 0 {
				r.taps = slices.Delete(slices.Clone(r.taps), i, i+1)
			}
			r.nTaps.Store(int64(len(r.taps)))
		})
	}
}

// tapped tells whether any tap is registered, before a batch is built.
func (r *Router) tapped() bool { return r.nTaps.Load() > 0 }

// tap hands s to every tap; each but the last gets a copy.
func (r *Router) tap(s Stored) {
	r.mu.RLock()
	taps := r.taps
	r.mu.RUnlock()
	for i, t := range taps {
		out := s
		if i < len(taps)-1 {
			out = Stored{Obs: slices.Clone(s.Obs), Sources: slices.Clone(s.Sources)}
		}
		(*t).DeliverStored(out)
	}
}
