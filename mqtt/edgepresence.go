package mqtt

import (
	"sync"

	mochi "github.com/mochi-mqtt/server/v2"
)

// edgeWatchers are the functions told when a project's edge device
// connects to the embedded broker or its last connection ends: the broker
// knows at once what a heartbeat tells only after missed beats.
type edgeWatchers struct {
	mu   sync.Mutex
	next int
	fns  map[int]func(projectID int64, connected bool)
}

// WatchEdgeDevices calls fn when an edge device's connection is
// established (connected true) and when the last connection of a
// project's edge device ends (connected false), however it ended:
// DISCONNECT, a broken network, a keep-alive that ran out, the platform
// revoking the credentials. fn runs on the broker's goroutine and
// must not block. stop ends the calls.
func (s *Sessions) WatchEdgeDevices(fn func(projectID int64, connected bool)) (stop func()) {
	w := &s.edge
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fns == nil {
		w.fns = map[int]func(int64, bool){}
	}
	id := w.next
	w.next++
	w.fns[id] = fn
	return func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		delete(w.fns, id)
	}
}

func (w *edgeWatchers) tell(projectID int64, connected bool) {
	w.mu.Lock()
	fns := make([]func(int64, bool), 0, len(w.fns))
	for _, fn := range w.fns {
		fns = append(fns, fn)
	}
	w.mu.Unlock()
	for _, fn := range fns {
		fn(projectID, connected)
	}
}

// edgeDisconnected tells the watchers that the project's edge device is
// gone when cl was the last connection of an edge device of its project.
// A connection taken over by a newer one of the same client id no longer
// owns its session: its end says nothing about the device. Call before
// ended, which forgets the session.
func (s *Sessions) edgeDisconnected(cl *mochi.Client) {
	s.mu.RLock()
	e, ok := s.byClient[cl.ID]
	if !ok || e.client != cl || !e.account.Edge {
		s.mu.RUnlock()
		return
	}
	project := e.account.ProjectID
	for _, o := range s.byClient {
		if o != e && o.account.Edge && o.account.ProjectID == project && !o.revoked && !o.client.Closed() {
			s.mu.RUnlock()
			return // another connection of the device is still there
		}
	}
	s.mu.RUnlock()
	s.edge.tell(project, false)
}
