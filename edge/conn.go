package edge

import (
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/openbdp/bdp/fault"
)

// conn is what outlives a connection actor's restarts: the project, the
// state others read (Status, /metrics) and the way out to the broker.
// Subscriptions and the data writer belong to the Manager's start/stop.
type conn struct {
	projectID int64
	m         *Manager
	pid       *actor.PID
	// Written by the actor, read by Status and the metrics collector.
	online    atomic.Bool
	lastAlive atomic.Int64 // unix nanoseconds; 0: never
	pending   atomic.Int64
	// token is this node's hold of the project (hold.go): requests go
	// out only while it is the current one.
	token atomic.Int64
	// unsubscribe ends the three subscriptions; data ends the data writer.
	unsubscribe []func()
	data        chan []Observation
	dataMu      sync.RWMutex
	dataClosed  bool
}

// Status is a project's edge connection as GET /v2/project/{project_id}/edge
// and /metrics show it.
type Status struct {
	Configured        bool       `json:"configured" doc:"the project has edge device credentials (POST /operator/projects/{project_id}/edge)"`
	Online            bool       `json:"online" doc:"a heartbeat came within the last 15 s (3 missed heartbeats of 5 s: offline)"`
	LastAlive         *time.Time `json:"last_alive" nullable:"true" doc:"time the last heartbeat arrived (RFC 3339, UTC); null: none since bdp started"`
	PendingOperations int        `json:"pending_operations" doc:"requests sent or waiting for the device, not answered yet"`
}

func (c *conn) status() Status {
	st := Status{Configured: true, Online: c.online.Load(), PendingOperations: int(c.pending.Load())}
	if ns := c.lastAlive.Load(); ns != 0 {
		t := time.Unix(0, ns).UTC()
		st.LastAlive = &t
	}
	return st
}

// Messages of the connection actor. Handlers of the broker's
// subscriptions decode before sending, so the actor sees only messages
// that passed the protocol's checks.
type (
	aliveMsg    struct{ alive Alive }
	responseMsg struct{ resp Response }
	// requestMsg asks the actor to deliver a request: at once when the
	// device is online, else when it comes online, until deadline.
	requestMsg struct {
		req      Request
		deadline time.Time
		events   chan<- event // nil: nobody follows (an unacked write)
	}
	tickMsg struct{}
	// presenceMsg: the broker saw the device connect, or its last
	// connection end (Config.Presence).
	presenceMsg struct{ connected bool }
)

// event is what the actor tells the one following an operation.
type event struct {
	stage string    // StateRequested, or the end: StateWritten (resp set) or StateFailed (reason set)
	resp  *Response // the device's answer
	// reason is why the operation failed without an answer.
	reason string
	// err, when set, is that failure as the caller answers it (the
	// fence's refusal).
	err error
}

type pendingRequest struct {
	req      Request
	deadline time.Time
	events   chan<- event
	sent     bool
}

// connActor is one project's edge connection. State lost in a restart
// (the pending requests) is not needed for correctness: every follower
// keeps its own deadline (Setpoints.follow).
type connActor struct {
	c        *conn
	pending  map[string]*pendingRequest
	lastPing time.Time
	// gone: the broker reported the device's last connection ended, and
	// it has not connected since. Requests then fail at once: nothing can
	// reach the device, and waiting 30 s tells the caller nothing more.
	gone bool
}

// Reasons of requests failed because the device's connection ended.
const (
	reasonGone        = "the edge device is not connected (its MQTT connection ended); nothing was sent"
	reasonGoneWaiting = "the edge device's MQTT connection ended before it answered"
)

func (a *connActor) Receive(ctx actor.Context) {
	m := a.c.m
	switch msg := ctx.Message().(type) {
	case *actor.Started:
		a.pending = map[string]*pendingRequest{}
		a.c.pending.Store(0)
	case *aliveMsg:
		a.gone = false
		now := m.cfg.Now()
		first := a.c.lastAlive.Swap(now.UnixNano()) == 0
		if !a.c.online.Swap(true) {
			m.log.Info("edge device online", slog.Int64("project_id", a.c.projectID))
			a.flush()
			if !first {
				m.backOnline.tell(a.c.projectID)
			}
		}
	case *responseMsg:
		p, ok := a.pending[msg.resp.Reference]
		if !ok {
			return // an unacked write's or a ping's answer, or one that came too late
		}
		delete(a.pending, msg.resp.Reference)
		a.c.pending.Store(int64(len(a.pending)))
		if p.events != nil {
			r := msg.resp
			p.events <- event{stage: StateWritten, resp: &r}
		}
	case *requestMsg:
		if a.gone {
			if msg.events != nil {
				msg.events <- event{stage: StateFailed, reason: reasonGone}
			}
			return
		}
		p := &pendingRequest{req: msg.req, deadline: msg.deadline, events: msg.events}
		a.pending[msg.req.Reference] = p
		a.c.pending.Store(int64(len(a.pending)))
		if a.c.online.Load() {
			a.send(p)
		}
	case *tickMsg:
		a.tick()
	case *presenceMsg:
		a.presence(msg.connected)
	}
}

// presence follows the broker's word on the device: connected, requests
// wait for its heartbeat as usual; its last connection ended, it is
// offline at once and what waited for it fails now, not after the
// operation time-out.
func (a *connActor) presence(connected bool) {
	a.gone = !connected
	if connected {
		return
	}
	if a.c.online.Swap(false) {
		a.c.m.log.Warn("edge device offline: its MQTT connection ended", slog.Int64("project_id", a.c.projectID))
	}
	for ref, p := range a.pending {
		reason := reasonGone
		if p.sent {
			reason = reasonGoneWaiting
		}
		a.fail(ref, p, reason)
	}
	a.c.pending.Store(0)
}

// fail ends a pending request without an answer.
func (a *connActor) fail(ref string, p *pendingRequest, reason string) {
	a.failWith(ref, p, event{stage: StateFailed, reason: reason})
}

func (a *connActor) failWith(ref string, p *pendingRequest, ev event) {
	delete(a.pending, ref)
	if p.events != nil {
		p.events <- ev
	}
}

// send publishes a request, if this node still holds the project (the
// fence, hold.go); the follower learns it was requested.
func (a *connActor) send(p *pendingRequest) {
	if err := a.c.publishFenced(p.req); err != nil {
		if errors.Is(err, ErrSuperseded) {
			// Another node writes to this device now: this one never
			// will under this token, so waiting for the deadline is no use.
			a.failWith(p.req.Reference, p, event{stage: StateFailed, reason: fault.Message(err), err: err})
			a.c.pending.Store(int64(len(a.pending)))
			return
		}
		a.c.m.log.Warn("edge request not published", slog.Int64("project_id", a.c.projectID), slog.Any("error", err))
		return // stays pending: sent again when the device comes online again, or fails at its deadline
	}
	p.sent = true
	if p.events != nil {
		p.events <- event{stage: StateRequested}
	}
}

// flush sends what waited for the device.
func (a *connActor) flush() {
	for _, p := range a.pending {
		if !p.sent {
			a.send(p)
		}
	}
}

// tick judges the heartbeat, fails what waited past its deadline and
// pings the device (so it knows the platform is there).
func (a *connActor) tick() {
	m := a.c.m
	now := m.cfg.Now()
	last := a.c.lastAlive.Load()
	if a.c.online.Load() && now.Sub(time.Unix(0, last)) > m.cfg.OfflineAfter {
		a.c.online.Store(false)
		m.log.Warn("edge device offline", slog.Int64("project_id", a.c.projectID),
			slog.Duration("since_last_alive", now.Sub(time.Unix(0, last))))
	}
	for ref, p := range a.pending {
		if now.Before(p.deadline) {
			continue
		}
		reason := "no answer from the edge device within " + m.cfg.OperationTimeout.String()
		if !p.sent {
			reason = "the edge device was offline for " + m.cfg.OperationTimeout.String() + "; nothing was sent"
		}
		a.fail(ref, p, reason)
	}
	a.c.pending.Store(int64(len(a.pending)))
	if now.Sub(a.lastPing) >= PingInterval {
		a.lastPing = now
		if err := m.publish(a.c.projectID, Request{Reference: newReference(), Operation: OpPing}); err != nil {
			m.log.Debug("edge ping not published", slog.Int64("project_id", a.c.projectID), slog.Any("error", err))
		}
	}
}
