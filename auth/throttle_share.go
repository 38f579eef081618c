package auth

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// FailureBus carries notices between the processes that share failed-login
// counts: every notice published reaches every process listening, the
// publisher included. *store.Store is one, on PostgreSQL NOTIFY; auth
// names no store type, so that it stays below the store in the imports.
type FailureBus interface {
	PublishLoginFailure(ctx context.Context, payload string) error
	ListenLoginFailures(ctx context.Context, listening func(again bool), notified func(payload string))
}

// shareQueue bounds the notices waiting to be published. A failure costs
// a password hash (tens of milliseconds of a bounded hasher) and a notice
// under a millisecond, so the queue fills only while the database is slow
// or down; logins then go on, their notices dropped.
const shareQueue = 1024

// sharePublishTimeout bounds one publication, so that a stuck database
// fills the queue (and drops) rather than holding notices for ever.
const sharePublishTimeout = 5 * time.Second

// Share makes a Throttle's limits hold across the processes of one
// database: it publishes the throttle's failures and resets (its hooks,
// set by Hook) and counts those of the other processes (RecordRemote,
// ResetRemote). A notice is counted where it arrives, in the slot current
// there, a few milliseconds after it happened. Publishing never blocks a
// login: notices wait in a bounded queue, dropped (and counted) when it
// is full. What it cannot share: verifications in progress (simultaneous
// guesses on several nodes can overshoot once, by those in progress), and
// notices sent while a listener reconnects.
type Share struct {
	bus   FailureBus
	log   *slog.Logger
	id    string // this process's, in its notices, to skip them on return
	queue chan notice

	listenOnce sync.Once
	listening  chan struct{}

	published, dropped, failed, own, remote, malformed atomic.Uint64
}

// notice is one failure (Reset false) or reset, as published.
type notice struct {
	Process string     `json:"p"`
	Account string     `json:"a"`           // AccountKey
	Addr    netip.Addr `json:"ip"`          // AddressKey; zero for a reset, or an invalid address
	Reset   bool       `json:"r,omitempty"` // a successful login cleared Account
}

// NewShare returns a Share over bus, logging to log (nil: nowhere). It
// does nothing until Hook and Start.
func NewShare(bus FailureBus, log *slog.Logger) *Share {
	return newShare(bus, log, shareQueue)
}

func newShare(bus FailureBus, log *slog.Logger, queue int) *Share {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Share{bus: bus, log: log, id: rand.Text()[:16], queue: make(chan notice, queue),
		listening: make(chan struct{})}
}

// Hook sets cfg's OnFailure and OnReset to publish through s; pass cfg to
// NewThrottle after, and the throttle to Start.
func (s *Share) Hook(cfg *ThrottleConfig) {
	cfg.OnFailure = func(account string, addr netip.Addr) {
		s.enqueue(notice{Account: account, Addr: addr})
	}
	cfg.OnReset = func(account string) { s.enqueue(notice{Account: account, Reset: true}) }
}

// enqueue queues n for publication, or drops it when the queue is full:
// a login never waits for the database.
func (s *Share) enqueue(n notice) {
	select {
	case s.queue <- n:
	default:
		s.dropped.Add(1)
	}
}

// Start publishes the queued notices and counts the other processes'
// notices into t until ctx ends or the returned func is called; that func
// stops both goroutines and returns when they have. Notices still queued
// then are not published. Call it once.
func (s *Share) Start(ctx context.Context, t *Throttle) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { s.publish(ctx) })
	wg.Go(func() {
		s.bus.ListenLoginFailures(ctx, func(again bool) {
			if again {
				s.log.Info("login throttle: listening for other processes' failures again; those of the gap are not counted")
			}
			s.listenOnce.Do(func() { close(s.listening) })
		}, func(payload string) { s.received(t, payload) })
	})
	return func() { cancel(); wg.Wait() }
}

// Listening is closed once the other processes' notices are received:
// notices published before are not. For tests and readiness checks.
func (s *Share) Listening() <-chan struct{} { return s.listening }

// publish sends the queued notices one at a time until ctx ends. A
// failure is logged when it follows a success (not on every notice of a
// database that is down), and counted.
func (s *Share) publish(ctx context.Context) {
	failing := false
	for {
		var n notice
		select {
		case <-ctx.Done():
			return
		case n = <-s.queue:
		}
		n.Process = s.id
		err := s.send(ctx, n)
		switch {
		case err == nil:
			s.published.Add(1)
			if failing {
				s.log.Info("login throttle: sharing failures with other processes again")
			}
			failing = false
		case ctx.Err() != nil:
			return
		default:
			s.failed.Add(1)
			if !failing {
				s.log.Warn("login throttle: cannot share a failure with other processes; the limits hold per process meanwhile", "err", err)
			}
			failing = true
		}
	}
}

func (s *Share) send(ctx context.Context, n notice) error {
	payload, err := encodeNotice(n)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, sharePublishTimeout)
	defer cancel()
	if err := s.bus.PublishLoginFailure(ctx, payload); err != nil {
		return fmt.Errorf("login throttle: share: %w", err)
	}
	return nil
}

// encodeNotice is n as JSON: its escapes keep the payload valid PostgreSQL
// text whatever the account holds (MQTT keys hold a NUL), and an account
// of MaxAccountKey bytes under 1.6 KB.
func encodeNotice(n notice) (string, error) {
	b, err := json.Marshal(n)
	if err != nil {
		return "", fmt.Errorf("login throttle: encode notice: %w", err)
	}
	return string(b), nil
}

func decodeNotice(payload string) (notice, error) {
	var n notice
	if err := json.Unmarshal([]byte(payload), &n); err != nil {
		return notice{}, fmt.Errorf("login throttle: decode notice: %w", err)
	}
	if n.Process == "" {
		return notice{}, errors.New("login throttle: decode notice: no process")
	}
	return n, nil
}

// received counts a notice into t, unless this process sent it (Done
// counted it already) or it cannot be read (another version's, say).
func (s *Share) received(t *Throttle, payload string) {
	n, err := decodeNotice(payload)
	if err != nil {
		s.malformed.Add(1)
		return
	}
	if n.Process == s.id {
		s.own.Add(1)
		return
	}
	s.remote.Add(1)
	if n.Reset {
		t.ResetRemote(n.Account)
	} else {
		t.RecordRemote(n.Account, n.Addr)
	}
}

// ShareStats counts a Share's notices since NewShare.
type ShareStats struct {
	Published uint64 // sent to the other processes
	Dropped   uint64 // not sent: the queue was full
	Failed    uint64 // not sent: the database refused or timed out
	Own       uint64 // received back from this process, skipped
	Remote    uint64 // received from other processes, counted
	Malformed uint64 // received but unreadable, skipped
}

// Stats returns the counts so far.
func (s *Share) Stats() ShareStats {
	return ShareStats{Published: s.published.Load(), Dropped: s.dropped.Load(), Failed: s.failed.Load(),
		Own: s.own.Load(), Remote: s.remote.Load(), Malformed: s.malformed.Load()}
}
