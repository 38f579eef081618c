package actors

import (
	"slices"
	"sync"
	"testing"

	"github.com/asynkron/protoactor-go/actor"
)

// recordingInvoker keeps what a mailbox hands it; a user message "panic"
// panics, as a failing actor does.
type recordingInvoker struct {
	mu       sync.Mutex
	got      []any
	failures []any
	done     chan struct{} // closed at the user message "last"
}

func (r *recordingInvoker) InvokeSystemMessage(m any) { r.record(m) }

func (r *recordingInvoker) InvokeUserMessage(m any) {
	if m == "panic" {
		panic("the actor failed")
	}
	r.record(m)
	if m == "last" {
		close(r.done)
	}
}

func (r *recordingInvoker) EscalateFailure(_ any, m any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failures = append(r.failures, m)
}

func (r *recordingInvoker) record(m any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, m)
}

func TestLeanMailbox(t *testing.T) {
	cases := []struct {
		name string
		post func(m actor.Mailbox)
		want []any
		// failures are the messages whose handling panicked
		failures []any
	}{{
		name: "user messages in the order posted, however many",
		post: func(m actor.Mailbox) {
			for i := range 1000 {
				m.PostUserMessage(i)
			}
		},
		want: func() []any {
			var w []any
			for i := range 1000 {
				w = append(w, i)
			}
			return w
		}(),
	}, {
		name: "a suspended mailbox hands on system messages only, until resumed",
		post: func(m actor.Mailbox) {
			m.PostSystemMessage(&actor.SuspendMailbox{})
			m.PostUserMessage("held")
			m.PostSystemMessage("system")
			m.PostSystemMessage(&actor.ResumeMailbox{})
		},
		want: []any{"system", "held"},
	}, {
		name: "a panic escalates as a failure of the actor and the mailbox goes on",
		post: func(m actor.Mailbox) {
			m.PostUserMessage("before")
			m.PostUserMessage("panic")
			m.PostUserMessage("after")
		},
		want:     []any{"before", "after"},
		failures: []any{"panic"},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			inv := &recordingInvoker{done: make(chan struct{})}
			d := newWorkerDispatcher()
			defer d.stop()
			m := newLeanMailbox()
			m.RegisterHandlers(inv, d)
			c.post(m)
			m.PostUserMessage("last")
			<-inv.done
			inv.mu.Lock()
			defer inv.mu.Unlock()
			if got := inv.got[:len(inv.got)-1]; !slices.Equal(got, c.want) {
				t.Errorf("handed on %v, want %v", clipped(got), clipped(c.want))
			}
			if !slices.Equal(inv.failures, c.failures) {
				t.Errorf("failures %v, want %v", inv.failures, c.failures)
			}
			if n := m.UserMessageCount(); n != 0 {
				t.Errorf("%d user messages counted once all were handled, want 0", n)
			}
		})
	}
}

// clipped keeps a failure message short.
func clipped(s []any) []any {
	if len(s) > 5 {
		return append(slices.Clip(s[:5]), "…")
	}
	return s
}

// An idle actor's mailbox holds no buffer: the memory of a burst of
// messages goes once they are handled (issue 18: 2 KiB per running
// datapoint).
func TestLeanMailboxReturnsABurstsMemory(t *testing.T) {
	var q messageQueue
	for i := range 100 {
		q.push(i)
	}
	for i := range 100 {
		if got := q.pop(); got != i {
			t.Fatalf("pop %d returned %v", i, got)
		}
	}
	if q.pop() != nil || q.buf != nil {
		t.Errorf("an emptied queue after a burst keeps a buffer of %d", cap(q.buf))
	}
	q.push(1)
	q.pop()
	if cap(q.buf) == 0 || cap(q.buf) > keptQueueCap {
		t.Errorf("an emptied queue after one message keeps a buffer of %d, want 1 to %d", cap(q.buf), keptQueueCap)
	}
}
