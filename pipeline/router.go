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
	subs map[dpKey][]*subscription
	n    atomic.Int64 // subscriptions, so a batch nobody listens to costs nothing
}

type subscription struct{ s Subscriber }

// NewRouter returns a router without subscribers.
func NewRouter() *Router { return &Router{subs: map[dpKey][]*subscription{}} }

// Subscribe registers interest in one datapoint; the returned func ends it.
func (r *Router) Subscribe(projectID int64, dataPointID string, s Subscriber) (unsubscribe func()) {
	k := dpKey{projectID, dataPointID}
	sub := &subscription{s: s}
	r.mu.Lock()
	r.subs[k] = append(r.subs[k], sub)
	r.mu.Unlock()
	r.n.Add(1)
	var once sync.Once
	return func() {
		once.Do(func() {
			r.mu.Lock()
			defer r.mu.Unlock()
			list := slices.DeleteFunc(r.subs[k], func(x *subscription) bool { return x == sub })
			if len(list) == 0 {
				delete(r.subs, k)
			} else {
				r.subs[k] = list
			}
			r.n.Add(-1)
		})
	}
}

// route delivers a stored batch.
func (r *Router) route(obs []Observation) {
	if r.n.Load() == 0 {
		return
	}
	byKey := map[dpKey][]Observation{}
	r.mu.RLock()
	for _, o := range obs {
		k := dpKey{o.ProjectID, o.DataPointID}
		if _, ok := r.subs[k]; ok {
			byKey[k] = append(byKey[k], o)
		}
	}
	r.mu.RUnlock()
	for k, list := range byKey {
		slices.SortStableFunc(list, func(a, b Observation) int { return a.Time.Compare(b.Time) })
		r.mu.RLock()
		subs := slices.Clone(r.subs[k])
		r.mu.RUnlock()
		for i, s := range subs {
			out := list
			if i < len(subs)-1 {
				out = slices.Clone(list) // every subscriber owns its slice
			}
			s.s.Deliver(out)
		}
	}
}
