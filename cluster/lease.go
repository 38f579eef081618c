package cluster

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// A member that cannot reach etcd is dropped by the others once its
// registration's lease (3 s, protoactor's etcd provider) expires; they
// take over what it owned. Its own provider does not tell it (#1133), so
// without more it would go on running the same datapoints, connections
// and apps beside their new owners, and it would never rejoin: the
// provider drops the member's own key from its view when it expires and
// skips it when it is written again. The member therefore keeps a lease
// of its own with the provider's time-to-live, renews it every
// leaseRenew, and counts itself cut off once it has not renewed it for
// cutOffAfter: it owns nothing then (Owner), and the reconciler stops
// everything it runs. When it renews again before its registration
// expired, it owns its share again. Cut off past its registration
// (droppedAfter), the others have dropped it for good: Dropped is closed,
// and the reconciler ends with ErrDropped, for the process to exit and
// its service manager to start it again as a new member. So it does when
// its own address is missing from its view of the members for as long:
// back after a cut that its registration did not outlive.
//
// The margin: cut at tc, the provider's registration (renewed every
// second) expires between tc+2 s and tc+3 s, never earlier; this member
// is cut off by tc+1.5 s+leaseCheck at the latest.
const (
	leaseTTL    = 3 * time.Second // the provider's
	leaseRenew  = 250 * time.Millisecond
	cutOffAfter = 1500 * time.Millisecond // six renewals missed
	// droppedAfter: the provider's registration, renewed no later than
	// this lease, has expired.
	droppedAfter = leaseTTL + 500*time.Millisecond
	leaseCheck   = 50 * time.Millisecond
)

// ErrDropped ends a member cut off from etcd for longer than its
// registration lives: the other members dropped it, and protoactor's
// member does not rejoin in the same process.
var ErrDropped = errors.New("cluster: this node lost etcd for longer than its lease and the others dropped it; " +
	"it stopped what it ran and must be started again to rejoin")

// lease is the member's own lease and what it knows of it.
type lease struct {
	client   *clientv3.Client
	renewed  atomic.Int64 // unix nanoseconds of the last renewal
	cutOff   atomic.Bool
	dropped  chan struct{} // closed once cut off past droppedAfter
	dropOnce sync.Once
}

// startLease grants the lease and keeps it renewed until ctx ends;
// changed is told whenever the member is cut off or back.
func (m *Member) startLease(ctx context.Context) error {
	client, err := clientv3.New(clientv3.Config{Endpoints: m.cfg.Etcd, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return err
	}
	m.lease = &lease{client: client, dropped: make(chan struct{})}
	m.lease.renewed.Store(time.Now().UnixNano())
	m.loops.Add(2)
	go func() { defer m.loops.Done(); m.renewLease(ctx) }()
	go func() { defer m.loops.Done(); m.watchLease(ctx) }()
	return nil
}

// renewLease grants a lease and renews it every leaseRenew; once it
// expired (etcd away for longer than its time-to-live), it grants the
// next.
func (m *Member) renewLease(ctx context.Context) {
	defer m.lease.client.Close()
	var id clientv3.LeaseID
	tick := time.NewTicker(leaseRenew)
	defer tick.Stop()
	for {
		if id == 0 || time.Since(time.Unix(0, m.lease.renewed.Load())) > leaseTTL {
			id = m.grant(ctx)
		} else {
			rctx, cancel := context.WithTimeout(ctx, leaseRenew*4)
			r, err := m.lease.client.KeepAliveOnce(rctx, id)
			cancel()
			if err == nil && r.TTL > 0 {
				m.lease.renewed.Store(time.Now().UnixNano())
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// grant grants a new lease, counted as a renewal; 0 when etcd does not
// answer.
func (m *Member) grant(ctx context.Context) clientv3.LeaseID {
	gctx, cancel := context.WithTimeout(ctx, leaseRenew*4)
	defer cancel()
	granted, err := m.lease.client.Grant(gctx, int64(leaseTTL/time.Second))
	if err != nil {
		return 0
	}
	m.lease.renewed.Store(time.Now().UnixNano())
	return granted.ID
}

// watchLease turns the time since the last renewal into cut off or back.
func (m *Member) watchLease(ctx context.Context) {
	tick := time.NewTicker(leaseCheck)
	defer tick.Stop()
	// present is when this member was last in its own view; zero until
	// its first topology holds it. A member still joining is not missing:
	// on a loaded machine its first topology took longer than
	// droppedAfter, and it dropped itself before it ever ran anything.
	var present time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if slices.Contains(m.Members(), m.Address()) {
			present = time.Now()
		}
		since := time.Since(time.Unix(0, m.lease.renewed.Load()))
		missing := !present.IsZero() && time.Since(present) > droppedAfter
		if since > droppedAfter || missing {
			m.lease.dropOnce.Do(func() {
				m.log.Error("dropped from the cluster: cut off from etcd past this node's registration, or missing from the members since",
					slog.Duration("since_renewal", since.Round(time.Millisecond)), slog.Bool("missing_from_members", missing))
				close(m.lease.dropped)
			})
		}
		cut := since > cutOffAfter
		if m.lease.cutOff.Swap(cut) == cut {
			continue
		}
		if cut {
			m.cutOffs.Add(1)
			m.log.Error("cut off from etcd: this node stops what it runs before the others take it over",
				slog.Duration("since_renewal", since.Round(time.Millisecond)))
		} else {
			m.log.Warn("etcd reached again: this node takes its share back")
		}
		m.notify()
	}
}

// Dropped is closed once this member was cut off from etcd for longer
// than its registration lives (ErrDropped).
func (m *Member) Dropped() <-chan struct{} { return m.lease.dropped }

// CutOff tells whether this member has lost etcd and owns nothing.
func (m *Member) CutOff() bool { return m.lease != nil && m.lease.cutOff.Load() }
