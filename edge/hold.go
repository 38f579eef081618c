package edge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/openbdp/bdp/fault"
	"github.com/openbdp/bdp/store"
)

// In a cluster one node runs a project's edge connection and its controls
// apps (Config.Owns), but while the membership changes two may briefly
// both believe they do. Placement alone cannot keep them from writing one
// value twice, so every start of a connection takes the project's hold
// with a new token (store.AcquireEdgeHold), and each request the
// connection publishes to the device, and each acked setpoint operation
// it records, goes through only while that token is the current one
// (store.WithEdgeHold, the fenced insert): the superseded node's writes are
// refused at the point of writing, logged and counted
// (bdp_edge_fenced_total), and never reach the device. The device protocol
// is unchanged: the fence is the platform's. Pings are not fenced: they
// write nothing.

// DefaultHolder is Config.Holder of a node that is no cluster member.
const DefaultHolder = "single"

// fenceWait bounds the check of the hold before a request is published;
// beyond, the request stays pending as after a failed publication.
const fenceWait = 5 * time.Second

// reasonTakenOver fails the open operations of an older token when a
// connection takes a project's hold.
const reasonTakenOver = "the project's edge connection restarted (bdp restarted, its edge credentials changed, or another node of the cluster took it over) before the edge device answered"

// ErrNotHeld is the cause of a write or request for a project whose edge
// connection does not run on this node: in a cluster another node owns
// the project, or the connection is moving.
var ErrNotHeld = errors.New("edge: the project's edge connection does not run on this node")

// ErrSuperseded is the cause of a write or request refused by the fence:
// this node started the project's connection, but another node (or a
// later start) has taken its hold since.
var ErrSuperseded = errors.New("edge: this node's hold of the project's edge connection was superseded")

// notHeld answers a write for a project whose connection runs elsewhere:
// 503 with what to do, never "no edge device".
func notHeld(projectID int64) error {
	return fault.Wrap(fault.Unavailable, ErrNotHeld, fmt.Sprintf(
		"the edge connection of project %d does not run on this node (in a cluster the node that owns the project runs it, and it may be moving): nothing was sent; try again",
		projectID))
}

// superseded answers a write the fence refused.
func superseded(lost *store.EdgeHoldLost) error {
	by := "another node"
	if lost.Holder != "" {
		by = fmt.Sprintf("node %q", lost.Holder)
	}
	return fault.Wrap(fault.Unavailable, fmt.Errorf("%w: %w", ErrSuperseded, lost), fmt.Sprintf(
		"this node no longer holds the edge connection of project %d (%s took it over): nothing was sent; try again",
		lost.ProjectID, by))
}

// acquire takes the hold of a project's connection for this node.
func (m *Manager) acquire(ctx context.Context, projectID int64) (int64, error) {
	token, failed, err := m.cfg.Store.AcquireEdgeHold(ctx, projectID, m.cfg.Holder, m.cfg.Now().UTC(), reasonTakenOver)
	if err != nil {
		return 0, fmt.Errorf("edge: start the connection of project %d: %w", projectID, err)
	}
	if failed > 0 {
		m.log.Warn("setpoint operations of the project's previous edge connection failed", slog.Int64("project_id", projectID),
			slog.Int64("operations", failed))
	}
	return token, nil
}

// holding answers the token under which this node writes to a project's
// device. Without a connection here it refuses as a project without edge
// device does, unless, in a cluster, the project has one: then another
// node runs it (ErrNotHeld).
func (m *Manager) holding(ctx context.Context, projectID int64) (int64, error) {
	m.mu.Lock()
	c, ok := m.conns[projectID]
	m.mu.Unlock()
	if ok {
		return c.token.Load(), nil
	}
	if m.cfg.Owns != nil {
		has, err := m.cfg.Store.HasEdgeDevice(ctx, projectID)
		if err != nil {
			return 0, err
		}
		if has {
			return 0, notHeld(projectID)
		}
	}
	return 0, refuse("post", fault.Forbiddenf("project %d has no edge device (the operator creates its credentials)", projectID))
}

// fenced turns the fence's refusal into the answer, logged and counted;
// other errors pass.
func (m *Manager) fenced(err error, what string) error {
	var lost *store.EdgeHoldLost
	if !errors.As(err, &lost) {
		return err
	}
	m.metrics.fenced.Inc()
	m.log.Warn("edge write refused: another node holds the project's edge connection", slog.Int64("project_id", lost.ProjectID),
		slog.String("what", what), slog.Int64("hold_token", lost.Token), slog.String("holder", lost.Holder), slog.Int64("holder_token", lost.Current))
	return superseded(lost)
}

// publishFenced publishes a request while the connection's token holds
// the project; the hold's row stays locked until the broker took the
// message, so a take-over cannot pass it.
func (c *conn) publishFenced(req Request) error {
	ctx, cancel := context.WithTimeout(c.m.ctx, fenceWait)
	defer cancel()
	err := c.m.cfg.Store.WithEdgeHold(ctx, c.projectID, c.token.Load(), func() error { return c.m.publish(c.projectID, req) })
	return c.m.fenced(err, req.Operation)
}

// retake takes back the hold of the connections running here whose token
// another node superseded: both believed they owned the project, and
// Sync, which runs on every change of membership, found this node still
// does. Until the views agree the two may take it from each other; only
// the current holder's writes go through meanwhile.
func (m *Manager) retake(ctx context.Context) error {
	m.mu.Lock()
	conns := make([]*conn, 0, len(m.conns))
	ids := make([]int64, 0, len(m.conns))
	for id, c := range m.conns {
		conns = append(conns, c)
		ids = append(ids, id)
	}
	m.mu.Unlock()
	if len(ids) == 0 {
		return nil
	}
	holds, err := m.cfg.Store.EdgeHolds(ctx, ids)
	if err != nil {
		return fmt.Errorf("edge: %w", err)
	}
	var errs []error
	for _, c := range conns {
		if holds[c.projectID] == c.token.Load() {
			continue
		}
		token, err := m.acquire(ctx, c.projectID)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		c.token.Store(token)
		m.log.Warn("edge connection's hold taken back from another node", slog.Int64("project_id", c.projectID), slog.Int64("hold_token", token))
	}
	return errors.Join(errs...)
}
