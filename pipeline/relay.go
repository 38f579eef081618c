package pipeline

import (
	"context"
	"fmt"
	"time"

	"github.com/openbdp/bdp/codec/relay"
	"github.com/openbdp/bdp/fault"
)

// The relay of stored observations (issue 20 item 3). In a cluster, the
// actor of a virtual datapoint may run on another node than the one that
// stored its source's observations, so every node's router must receive
// every stored observation. With a Relay, the batcher publishes each
// committed batch instead of routing it itself, and every node, this one
// included, delivers what is published into its router (RelayConsumer →
// DeliverRelayed): one path, so every node sees one project's batches in
// one order. A single node runs without a relay.

// Relay publishes what a batcher committed to every node of a cluster.
// KafkaRelay is the implementation.
type Relay interface {
	// Publish returns nil once the batches are published durably (every
	// node will receive them, in the order of the calls for one project).
	// There is one batch per project of a committed batch, each holding
	// its runs in the order route delivers them. The batcher calls it
	// from one goroutine; the batches are the callee's until it returns.
	Publish(ctx context.Context, batches []relay.Batch) error
}

// errRelay is the client's side of a failed publication: the
// observations are stored, but not every node's subscribers got them.
// Writing them again is safe (storing is idempotent, decisions.md 4).
const errRelay = "the observations could not be passed on to the cluster; try again"

// publishQueue bounds the committed batches waiting for their
// publication: a few, so that the next transaction overlaps the previous
// publication, and a slow relay holds the writer back rather than memory
// growing.
const publishQueue = 4

// publication is a committed batch waiting to be published: its requests
// to answer, its relay batches, and what the taps get once it is.
type publication struct {
	reqs    []*writeRequest
	batches []relay.Batch
	stored  *Stored // nil without taps
}

// publishAll publishes the committed batches in commit order, answers
// their requests and hands them to the taps, until the writer closes
// published.
func (b *Batcher) publishAll() {
	for p := range b.published {
		ctx, cancel := context.WithTimeout(context.Background(), flushTimeout)
		err := b.relay.Publish(ctx, p.batches)
		cancel()
		if err != nil {
			err = fault.Wrap(fault.Unavailable, fmt.Errorf("relay: %w", err), errRelay)
		}
		for _, r := range p.reqs {
			b.answer(r, err)
		}
		if err == nil && p.stored != nil {
			b.router.tap(*p.stored)
		}
	}
}

// relayBatches cuts a committed batch into what route would deliver, all
// datapoints' runs rather than the subscribed ones', as one relay batch
// per project (the order of runs within a project is what matters; no
// actor reads two projects). keys are the batch's sorted keys (sortKeys).
// The projects come in the order of their first run. It allocates per
// batch, not per run.
func (w *writer) relayBatches(batch []*writeRequest, keys []rowKey) []relay.Batch {
	s := &w.relayScratch
	unordered := s.runs[:0]
	eachRun(keys, func(lo, hi int, first arrival) {
		unordered = append(unordered, routeRun{lo: lo, hi: hi, first: first})
	})
	s.runs = unordered
	order := s.arrivalOrder(batch, len(keys))
	runs := func(yield func(routeRun) bool) {
		for _, ri := range order {
			if !yield(unordered[ri]) {
				return
			}
		}
	}
	obs := func(run routeRun) *Observation { k := keys[run.lo]; return &batch[k.req].obs[k.i] }

	// Which batch each run goes to: mostly there is one project, and a
	// map only when there are more.
	var (
		out   []relay.Batch
		at    map[int64]int
		lastP int64 = -1
		lastI int
	)
	index := func(p int64) int {
		if p == lastP {
			return lastI
		}
		i, ok := at[p]
		if !ok {
			if i = len(out); i == 1 {
				at = map[int64]int{out[0].ProjectID: 0}
			}
			if at != nil {
				at[p] = i
			}
			out = append(out, relay.Batch{ProjectID: p})
		}
		lastP, lastI = p, i
		return i
	}
	counts := make([]int, 0, 1)
	for run := range runs {
		if i := index(obs(run).ProjectID); i == len(counts) {
			counts = append(counts, 1)
		} else {
			counts[i]++
		}
	}
	all := make([]relay.Run, len(order))
	for i, n := range counts {
		out[i].Runs, all = all[:0:n], all[n:]
	}
	times, values := make([]int64, len(keys)), make([]float64, len(keys))
	for run := range runs {
		n := run.hi - run.lo
		t, v := times[:n:n], values[:n:n]
		times, values = times[n:], values[n:]
		for j, k := range keys[run.lo:run.hi] {
			t[j], v[j] = k.us, batch[k.req].obs[k.i].Value
		}
		o := obs(run)
		i := index(o.ProjectID)
		out[i].Runs = append(out[i].Runs, relay.Run{DataPointID: o.DataPointID, Times: t, Values: v})
	}
	return out
}

// DeliverRelayed hands one relayed batch (a message of the relay, from
// any node, this one included) to the subscribers of its datapoints as
// route hands them a batch: run after run in the batch's order, every
// subscriber its own slice, one allocation for all. Times come in UTC.
// Call it from one goroutine, as route is called from one: subscribers
// do not expect overlapping deliveries.
func (r *Router) DeliverRelayed(b relay.Batch) {
	if r.n.Load() == 0 {
		return
	}
	r.scratchMu.Lock()
	defer r.scratchMu.Unlock()
	runs, total := r.runs[:0], 0 // lo is the index of the run in b
	r.mu.RLock()
	for i, run := range b.Runs {
		if e := r.subs[dpKey{b.ProjectID, run.DataPointID}]; e != nil && len(e.list) > 0 {
			runs = append(runs, routeRun{subs: e.list, lo: i})
			total += len(run.Times)
		}
	}
	r.mu.RUnlock()
	all := make([]Observation, 0, total)
	for _, rr := range runs {
		run := b.Runs[rr.lo]
		from := len(all)
		for j, us := range run.Times {
			all = append(all, Observation{ProjectID: b.ProjectID, DataPointID: run.DataPointID,
				Time: time.UnixMicro(us).UTC(), Value: run.Values[j]})
		}
		fanOut(rr.subs, all[from:len(all):len(all)])
	}
	clear(runs)
	r.runs = runs[:0]
}
