package actors

import (
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"
)

// leanMailbox is the datapoint actors' mailbox: protoactor's default
// mailbox (actor/mailbox.go at our pin) with its two queues replaced by
// slices under one mutex that hold nothing while the mailbox is empty.
//
// Why: a running datapoint waits far more than it works, and protoactor's
// unbounded mailbox keeps a ten-slot ring, a lock-free system queue with
// its stub node and a wrapper for each actor whether a message waits or
// not: about 330 bytes of every running datapoint's heap, a sixth of the
// 2 KiB that issue 18 allows. This one is about 100 bytes when empty.
// Sends take a mutex, as the ring's did.
//
// The scheduling is protoactor's, step by step: a mailbox is scheduled
// when it turns from idle to running, system messages go before user
// messages, a suspended mailbox handles only system messages, and a
// panic escalates as a failure of the actor. Mailbox middlewares and
// message batches, which bdp does not use, are left out.
type leanMailbox struct {
	mu     sync.Mutex
	system []any // a few in an actor's life: started, stop, restart
	user   messageQueue

	scheduled  atomic.Bool  // running: a worker has it, or is about to
	userCount  atomic.Int32 // messages in user, read without the mutex
	sysCount   atomic.Int32
	suspended  atomic.Bool
	invoker    actor.MessageInvoker
	dispatcher actor.Dispatcher
}

func newLeanMailbox() actor.Mailbox { return &leanMailbox{} }

var _ actor.Mailbox = (*leanMailbox)(nil)

func (m *leanMailbox) PostUserMessage(msg any) {
	m.mu.Lock()
	m.user.push(msg)
	m.mu.Unlock()
	m.userCount.Add(1)
	m.schedule()
}

func (m *leanMailbox) PostSystemMessage(msg any) {
	m.mu.Lock()
	m.system = append(m.system, msg)
	m.mu.Unlock()
	m.sysCount.Add(1)
	m.schedule()
}

func (m *leanMailbox) RegisterHandlers(invoker actor.MessageInvoker, dispatcher actor.Dispatcher) {
	m.invoker, m.dispatcher = invoker, dispatcher
}

func (m *leanMailbox) Start() {}

func (m *leanMailbox) UserMessageCount() int { return int(m.userCount.Load()) }

func (m *leanMailbox) schedule() {
	if m.scheduled.CompareAndSwap(false, true) {
		m.dispatcher.Schedule(m.process)
	}
}

// process runs the messages, then looks once more for messages posted
// after the loop ended but before it marked the mailbox idle, whose
// schedule found it still running.
func (m *leanMailbox) process() {
	for {
		m.run()
		m.scheduled.Store(false)
		more := m.sysCount.Load() > 0 || (!m.suspended.Load() && m.userCount.Load() > 0)
		if !more || !m.scheduled.CompareAndSwap(false, true) {
			return
		}
	}
}

func (m *leanMailbox) run() {
	var msg any
	defer func() {
		if r := recover(); r != nil {
			m.invoker.EscalateFailure(r, msg)
		}
	}()
	for i, limit := 0, m.dispatcher.Throughput(); ; i++ {
		if i > limit {
			i = 0
			runtime.Gosched()
		}
		if msg = m.popSystem(); msg != nil {
			m.sysCount.Add(-1)
			switch msg.(type) {
			case *actor.SuspendMailbox:
				m.suspended.Store(true)
			case *actor.ResumeMailbox:
				m.suspended.Store(false)
			default:
				m.invoker.InvokeSystemMessage(msg)
			}
			continue
		}
		if m.suspended.Load() {
			return
		}
		if msg = m.popUser(); msg == nil {
			return
		}
		m.userCount.Add(-1)
		m.invoker.InvokeUserMessage(msg)
	}
}

func (m *leanMailbox) popUser() any {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.user.pop()
}

func (m *leanMailbox) popSystem() any {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.system) == 0 {
		return nil
	}
	msg := m.system[0]
	m.system = slices.Delete(m.system, 0, 1)
	if len(m.system) == 0 {
		m.system = nil
	}
	return msg
}

// messageQueue is a FIFO that returns its memory once it is empty, unless
// it is small enough to keep for the next message.
type messageQueue struct {
	buf  []any
	head int
}

// keptQueueCap is the capacity an emptied queue keeps: a datapoint that
// gets one message a batch reuses it, and a burst's longer buffer goes.
const keptQueueCap = 2

func (q *messageQueue) push(msg any) { q.buf = append(q.buf, msg) }

func (q *messageQueue) pop() any {
	if q.head == len(q.buf) {
		return nil
	}
	msg := q.buf[q.head]
	q.buf[q.head] = nil
	q.head++
	if q.head == len(q.buf) {
		q.head = 0
		q.buf = q.buf[:0]
		if cap(q.buf) > keptQueueCap {
			q.buf = nil
		}
	}
	return msg
}
