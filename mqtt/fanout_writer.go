package mqtt

import (
	"net"
	"sync"
	"sync/atomic"

	mochi "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/system"
)

// A client's live writer holds at most as many messages as may be in
// flight to it (or BDP_MQTT_CLIENT_QUEUE, if more): a stored batch
// reaches each subscriber at once, thousands of messages when ingestion
// is busy, and writing them is the writer's work, not a reason to drop
// them. They wait encoded, some 100 bytes each, allocated only while they
// wait; the in-flight records beside them are mochi's (and the bound of
// a QoS 1 subscriber in any case). The writer starts before the batch
// ends once liveWriterStart of them wait, so writing overlaps encoding.
const liveWriterStart = 256

// writer returns the client's writer, made on first use.
func (f *fanout) writer(cl *mochi.Client) *liveWriter {
	f.mu.Lock()
	defer f.mu.Unlock()
	w := f.writers[cl]
	if w == nil {
		w = f.newWriter(cl)
		f.writers[cl] = w
	}
	return w
}

func (f *fanout) newWriter(cl *mochi.Client) *liveWriter {
	return &liveWriter{f: f, conn: cl.Net.Conn, info: f.e.server.Info, limit: receiveLimit(cl)}
}

// write queues pkt for w and makes sure it goes out: at once when
// liveWriterStart messages wait, else at the end of the batch (flush).
func (f *fanout) write(w *liveWriter, pkt []byte) {
	switch w.add(pkt, liveWriterStart) {
	case addedFirst:
		f.touched = append(f.touched, w)
	case addedEnough:
		f.start(w)
	}
}

// flush starts the writers of the batch's messages.
func (f *fanout) flush() {
	for _, w := range f.touched {
		f.start(w)
	}
	clear(f.touched)
	f.touched = f.touched[:0]
}

// start runs w's goroutine unless it runs; it ends when nothing waits.
func (f *fanout) start(w *liveWriter) {
	w.mu.Lock()
	if w.running || w.waiting.Load() || len(w.pending) == 0 {
		w.mu.Unlock()
		return
	}
	w.running = true
	w.mu.Unlock()
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return // the broker closed: its connections are gone
	}
	f.running.Add(1)
	f.mu.Unlock()
	go func() { defer f.running.Done(); w.run() }()
}

// close waits for the writers; after it, nothing is written.
func (f *fanout) close() {
	f.mu.Lock()
	f.closed = true
	f.mu.Unlock()
	f.running.Wait()
}

// liveWriter writes one client's live messages, as mochi's queue and
// writer goroutine do for its publishes: at most fanout.queue wait (more
// are dropped, counted in mochi's dropped messages), and a write that
// fails (the connection is gone; writeGuard closes one that takes nothing
// for clientWriteTimeout) drops what waits. Dropped QoS 1 messages stay
// in flight, so a kept session gets them again on its return.
type liveWriter struct {
	f     *fanout
	conn  net.Conn
	info  *system.Info
	limit int // messages that may be unacknowledged to the client

	flow sync.Mutex    // orders sending and releasing of held messages
	held []heldMessage // waiting for the client's receive maximum or session
	// waiting: the connection's session is not established yet; nothing
	// is written, QoS 1 messages are held.
	waiting atomic.Bool

	mu      sync.Mutex
	pending []byte
	n       int // messages in pending
	spare   []byte
	running bool
	failed  bool
	queued  atomic.Int32 // messages pending or being written
}

// add results.
const (
	added = iota
	addedFirst
	addedEnough
	notAdded
)

// room tells whether a message fits in the client's queue. Only Live's
// goroutine adds, so a yes holds until it adds.
func (w *liveWriter) room() bool { return int(w.queued.Load()) < w.f.queue }

func (w *liveWriter) add(pkt []byte, enough int) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.failed {
		return notAdded
	}
	w.pending = append(w.pending, pkt...)
	w.n++
	w.queued.Add(1)
	switch {
	case w.n == 1:
		return addedFirst
	case w.n == enough && !w.running:
		return addedEnough
	}
	return added
}

// run writes what waits until nothing does.
func (w *liveWriter) run() {
	for {
		w.mu.Lock()
		if len(w.pending) == 0 || w.failed {
			w.running = false
			w.mu.Unlock()
			return
		}
		out, n := w.pending, w.n
		w.pending, w.n, w.spare = w.spare[:0], 0, nil
		w.mu.Unlock()
		_, err := w.conn.Write(out)
		w.queued.Add(-int32(n))
		if err != nil {
			w.mu.Lock()
			w.failed = true
			w.queued.Add(-int32(w.n))
			w.pending, w.n = nil, 0
			w.mu.Unlock()
			continue
		}
		atomic.AddInt64(&w.info.MessagesSent, int64(n))
		atomic.AddInt64(&w.info.PacketsSent, int64(n))
		atomic.AddInt64(&w.info.BytesSent, int64(len(out)))
		if cap(out) <= maxKeptWriteBuffer {
			w.mu.Lock()
			w.spare = out[:0]
			w.mu.Unlock()
		}
	}
}

// maxKeptWriteBuffer bounds the buffer a writer keeps between bursts.
const maxKeptWriteBuffer = 64 << 10

// remainingLen is the length of n as MQTT's variable-length integer.
func remainingLen(n int) int {
	l := 1
	for ; n >= 128; n /= 128 {
		l++
	}
	return l
}

// appendRemaining appends n as MQTT's variable-length integer.
func appendRemaining(b []byte, n int) []byte {
	for {
		digit := byte(n % 128)
		if n /= 128; n > 0 {
			digit |= 0x80
		}
		b = append(b, digit)
		if n == 0 {
			return b
		}
	}
}

// appendPublish appends a PUBLISH of payload to the topic whose name
// (length first) is head, at qos (its packet id 0, at idAt), with MQTT 5
// properties when v5.
func appendPublish(dst []byte, qos byte, head, props, payload []byte, v5 bool) (pkt []byte, idAt int) {
	n := len(head) + len(payload)
	if qos > 0 {
		n += 2
	}
	if v5 {
		n += remainingLen(len(props)) + len(props)
	}
	dst = append(appendRemaining(append(dst, 0x30|qos<<1), n), head...)
	idAt = len(dst)
	if qos > 0 {
		dst = append(dst, 0, 0)
	}
	if v5 {
		dst = append(appendRemaining(dst, len(props)), props...)
	}
	return append(dst, payload...), idAt
}
