package edge

import (
	"context"
	"errors"
	"sync/atomic"
)

// Remote reaches the node that runs a project's edge connection, in a
// cluster (cluster.Runner): a write or a status asked of a node that does
// not run the connection is carried there, so that every node answers
// alike.
type Remote interface {
	// Write hands a checked write (the caller's TagAuths already asked)
	// to the node that runs the project's connection, which runs it with
	// WriteHere.
	Write(ctx context.Context, w Write) (Operation, error)
	// Status asks that node for the connection's state.
	Status(ctx context.Context, projectID int64) (Status, error)
}

// remoteOf holds the Remote of SetRemote; set once, after the cluster
// joined, read on every write.
type remoteOf struct{ v atomic.Pointer[Remote] }

func (r *remoteOf) get() Remote {
	if p := r.v.Load(); p != nil {
		return *p
	}
	return nil
}

// SetRemote makes the writer carry what this node cannot do to the node
// that can (cluster mode).
func (s *Setpoints) SetRemote(r Remote) { s.remote.v.Store(&r) }

// WriteHere is Write on the node that runs the project's connection, for
// a write another node carried here: it is not carried on again (a
// connection moving meanwhile answers 503, try again).
func (s *Setpoints) WriteHere(ctx context.Context, w Write) (Operation, error) {
	w.Authorize = nil // asked by the node that got the request
	return s.write(ctx, w, false)
}

// StatusAnywhere is the project's connection's state, asked of the node
// that runs it when this one does not.
func (s *Setpoints) StatusAnywhere(ctx context.Context, projectID int64) (Status, error) {
	st := s.m.Status(projectID)
	if st.Configured {
		return st, nil
	}
	remote := s.remote.get()
	if remote == nil {
		return st, nil
	}
	if _, err := s.m.holding(ctx, projectID); !errors.Is(err, ErrNotHeld) {
		return st, nil // no device at all, or it runs here after all
	}
	return remote.Status(ctx, projectID)
}
