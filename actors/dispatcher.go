package actors

import (
	"runtime"
	"sync/atomic"
)

// workerDispatcher runs the datapoint actors' mailboxes on a fixed set of
// long-lived goroutines instead of protoactor's default, which starts a
// goroutine each time an idle mailbox gets a message.
//
// Why: with one message per actor per batch, as a stream of many
// datapoints delivers them, nearly every message started a goroutine, and
// each began on a small stack that the calculation (the formula's VM
// reading its pins by reflection) outgrew: growing and copying stacks was
// 28 % of the CPU of the 10,000-datapoint benchmark. A worker's stack
// grows once and stays grown while it works.
//
// A mailbox is scheduled only when it turns from idle to running, so the
// order of one actor's messages does not depend on which worker runs it.
// Schedule never blocks its caller (the batcher's writer goroutine,
// routing a commit): a mailbox waits in a queue for the next free worker,
// or, when the queue is full, gets a goroutine of its own as with
// protoactor's default. One kind of work blocks a worker: a starting
// actor reads its history on it, and a resume starts hundreds at once.
// While any does (waiting), a mailbox that finds no idle worker gets a
// goroutine of its own rather than a place in the queue, where it could
// wait behind workers that all wait for the database.
type workerDispatcher struct {
	workers    *workers[func()]
	throughput int
	idle       atomic.Int64 // workers waiting for a mailbox
	waiting    atomic.Int64 // actors waiting for I/O on a worker (starting)
}

// dispatcherThroughput is how many messages a mailbox handles before its
// worker yields: protoactor's default.
const dispatcherThroughput = 300

// dispatcherQueue bounds the mailboxes waiting for a worker.
const dispatcherQueue = 4096

func newWorkerDispatcher() *workerDispatcher {
	d := &workerDispatcher{throughput: dispatcherThroughput}
	run := func(in <-chan func()) {
		for {
			d.idle.Add(1)
			fn, ok := <-in
			d.idle.Add(-1)
			if !ok {
				return
			}
			fn()
		}
	}
	d.workers = startWorkers(max(32, 16*runtime.GOMAXPROCS(0)), dispatcherQueue, run)
	return d
}

// Schedule runs fn on a worker, or on a goroutine of its own when the
// queue is full, when no worker is idle while some wait for I/O, or when
// the dispatcher is stopped.
func (d *workerDispatcher) Schedule(fn func()) {
	if d.waiting.Load() > 0 && d.idle.Load() == 0 {
		go fn()
		return
	}
	queued := d.workers.send(func(in chan<- func()) bool {
		select {
		case in <- fn:
			return true
		default:
			return false
		}
	})
	if !queued {
		go fn()
	}
}

func (d *workerDispatcher) Throughput() int { return d.throughput }

// backlog is how many mailboxes wait for a worker.
func (d *workerDispatcher) backlog() int { return len(d.workers.in) }

// wait marks the calling actor as waiting for I/O on its worker until
// the returned func is called.
func (d *workerDispatcher) wait() (done func()) {
	d.waiting.Add(1)
	return func() { d.waiting.Add(-1) }
}

// stop lets the workers finish what is queued and returns once they have;
// later mailboxes run on goroutines of their own.
func (d *workerDispatcher) stop() { d.workers.close() }
