package actors

import "runtime"

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
// A mailbox goes to a worker only when one is idle at that moment (an
// unbuffered hand-off); when all are busy it gets a goroutine of its own,
// as with protoactor's default. So Schedule never blocks its caller (the
// batcher's writer goroutine, routing a commit), and nothing queues
// behind a worker whose actor waits: a starting actor reads its history
// on the worker, and a resume starts hundreds at once.
type workerDispatcher struct {
	workers    *workers[func()]
	throughput int
}

// dispatcherThroughput is how many messages a mailbox handles before its
// worker yields: protoactor's default.
const dispatcherThroughput = 300

func newWorkerDispatcher() *workerDispatcher {
	run := func(in <-chan func()) {
		for fn := range in {
			fn()
		}
	}
	return &workerDispatcher{workers: startWorkers(max(32, 16*runtime.GOMAXPROCS(0)), 0, run), throughput: dispatcherThroughput}
}

// Schedule runs fn on an idle worker, or on a goroutine of its own when
// none is idle or the dispatcher is stopped.
func (d *workerDispatcher) Schedule(fn func()) {
	handed := d.workers.send(func(in chan<- func()) bool {
		select {
		case in <- fn:
			return true
		default:
			return false
		}
	})
	if !handed {
		go fn()
	}
}

func (d *workerDispatcher) Throughput() int { return d.throughput }

// stop lets the workers finish and returns once they have; later
// mailboxes run on goroutines of their own.
func (d *workerDispatcher) stop() { d.workers.close() }
