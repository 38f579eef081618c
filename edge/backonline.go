package edge

import "sync"

// backOnline are the functions told when a project's edge device is
// online again after it was offline: writes meant for it in between may
// have failed (at once when its connection had ended), so the controls
// apps write their values again.
type backOnline struct {
	mu   sync.Mutex
	next int
	fns  map[int]func(projectID int64)
}

// WatchBackOnline calls fn, on the connection's goroutine (fn must not
// block), whenever a project's edge device is online again after it was
// offline; not when it comes online the first time since bdp started.
// stop ends the calls.
func (m *Manager) WatchBackOnline(fn func(projectID int64)) (stop func()) {
	w := &m.backOnline
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fns == nil {
		w.fns = map[int]func(int64){}
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

// WatchBackOnline is Manager.WatchBackOnline on the connections the
// setpoints go through.
func (s *Setpoints) WatchBackOnline(fn func(projectID int64)) (stop func()) {
	return s.m.WatchBackOnline(fn)
}

func (w *backOnline) tell(projectID int64) {
	w.mu.Lock()
	fns := make([]func(int64), 0, len(w.fns))
	for _, fn := range w.fns {
		fns = append(fns, fn)
	}
	w.mu.Unlock()
	for _, fn := range fns {
		fn(projectID)
	}
}
