package pipeline

import (
	"slices"
	"sync"
	"sync/atomic"
)

// Subscriber receives stored observations of one datapoint, in time order
// within each delivery, deliveries in commit order. Deliver must return
// quickly (hand the slice to a mailbox); the slice is the subscriber's.
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
	subs map[dpKey][]*subscription // replaced, never changed in place
	n    atomic.Int64              // subscriptions, so a batch nobody listens to costs nothing

	taps  []*Tap       // router-wide subscribers; replaced, never changed in place
	nTaps atomic.Int64 // len(taps), read without the lock

	// scratch is route's working memory, kept between calls: routing runs
	// after every commit, and fresh maps and slices each time were a
	// large part of what the write path allocated.
	scratchMu sync.Mutex
	scratch   routeScratch
}

type subscription struct{ s Subscriber }

// NewRouter returns a router without subscribers.
func NewRouter() *Router {
	return &Router{subs: map[dpKey][]*subscription{}, scratch: routeScratch{group: map[dpKey]int{}}}
}

// Subscribe registers interest in one datapoint; the returned func ends it
// and may be called more than once.
func (r *Router) Subscribe(projectID int64, dataPointID string, s Subscriber) (unsubscribe func()) {
	k := dpKey{projectID, dataPointID}
	sub := &subscription{s: s}
	r.mu.Lock()
	r.subs[k] = append(slices.Clip(r.subs[k]), sub)
	r.mu.Unlock()
	r.n.Add(1)
	return func() { r.unsubscribe(k, sub) }
}

func (r *Router) unsubscribe(k dpKey, sub *subscription) {
	r.mu.Lock()
	defer r.mu.Unlock()
	list := r.subs[k]
	i := slices.Index(list, sub)
	if i < 0 {
		return // already ended
	}
	if len(list) == 1 {
		delete(r.subs, k)
	} else {
		// A new slice: route may still be reading the old one.
		r.subs[k] = slices.Delete(slices.Clone(list), i, i+1)
	}
	r.n.Add(-1)
}

// routeScratch groups one delivery's observations by datapoint.
type routeScratch struct {
	group  map[dpKey]int // datapoint -> its group, -1 for one nobody subscribes to
	groups []routeGroup
	of     []int // the group of each observation, -1 for none
}

type routeGroup struct {
	subs  []*subscription
	count int // observations, then the end of the group's range in the delivery
}

// route delivers a stored batch, given in parts (the batch's requests):
// each subscribed datapoint's observations in time order, as one slice of
// a single allocation for the whole batch.
func (r *Router) route(parts ...[]Observation) {
	if r.n.Load() == 0 {
		return
	}
	r.scratchMu.Lock()
	defer r.scratchMu.Unlock()
	sc := &r.scratch
	defer sc.reset()
	total := r.group(parts)
	if total == 0 {
		return
	}
	// A counting sort into one array keeps arrival order within a group;
	// each group's slice is capped, so a subscriber's append cannot spill
	// into its neighbour's.
	all := make([]Observation, total)
	end := 0
	for g := range sc.groups {
		end += sc.groups[g].count
		sc.groups[g].count = end
	}
	j := len(sc.of)
	for p := len(parts) - 1; p >= 0; p-- {
		for i := len(parts[p]) - 1; i >= 0; i-- {
			j--
			if g := sc.of[j]; g >= 0 {
				sc.groups[g].count--
				all[sc.groups[g].count] = parts[p][i]
			}
		}
	}
	for g, grp := range sc.groups {
		hi := total
		if g+1 < len(sc.groups) {
			hi = sc.groups[g+1].count
		}
		list := all[grp.count:hi:hi]
		if !slices.IsSortedFunc(list, compareTimes) {
			slices.SortStableFunc(list, compareTimes)
		}
		for i, s := range grp.subs {
			out := list
			if i < len(grp.subs)-1 {
				out = slices.Clone(list) // every subscriber owns its slice
			}
			s.s.Deliver(out)
		}
	}
}

// group assigns each observation its subscribed datapoint's group and
// returns how many observations have one.
func (r *Router) group(parts [][]Observation) (total int) {
	sc := &r.scratch
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, part := range parts {
		for _, o := range part {
			k := dpKey{o.ProjectID, o.DataPointID}
			g, seen := sc.group[k]
			if !seen {
				g = -1
				if subs := r.subs[k]; len(subs) > 0 {
					g = len(sc.groups)
					sc.groups = append(sc.groups, routeGroup{subs: subs})
				}
				sc.group[k] = g
			}
			sc.of = append(sc.of, g)
			if g >= 0 {
				sc.groups[g].count++
				total++
			}
		}
	}
	return total
}

func (sc *routeScratch) reset() {
	// Clearing a map costs its capacity, not its length: after a large
	// batch a fresh one is cheaper for the small ones that follow.
	if len(sc.group) > 4096 {
		sc.group = map[dpKey]int{}
	}
	clear(sc.group)
	clear(sc.groups) // drop the subscription lists
	sc.groups, sc.of = sc.groups[:0], sc.of[:0]
}

func compareTimes(a, b Observation) int { return a.Time.Compare(b.Time) }

// Stored is one committed batch as a tap sees it: the stored observations
// (the last value of each datapoint and time), grouped by datapoint and in
// time order within each datapoint, and where each came from: Sources[i]
// is the source of Obs[i]. Both slices are the tap's.
type Stored struct {
	Obs     []Observation
	Sources []Source
}

// Tap receives every stored batch of every project, in commit order.
// DeliverStored runs on the batcher's writer goroutine between two
// commits: it must hand the batch off at once (a bounded queue that drops
// when full), never wait, or it stalls every source of the node.
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
