package actors

import "sync"

// workers is a channel that goroutines of its own take from until it is
// closed, once. A send and the close exclude each other, so nothing is
// ever sent on the closed channel, and close returns once every worker
// has finished what was queued: the goroutines have an owner that joins
// them. The dispatcher and the ReadBatcher are built on it.
type workers[T any] struct {
	in   chan T
	done sync.WaitGroup

	mu     sync.RWMutex // makes "not closed" and "sent" one step
	closed bool
}

// startWorkers starts n goroutines, each running work over the channel
// (of the given buffer) until it is closed and drained.
func startWorkers[T any](n, buffer int, work func(in <-chan T)) *workers[T] {
	w := &workers[T]{in: make(chan T, buffer)}
	w.done.Add(n)
	for range n {
		go func() {
			defer w.done.Done()
			work(w.in)
		}()
	}
	return w
}

// send runs send with the channel unless it is closed; false when it is.
// send may block (then the close waits for it) or not.
func (w *workers[T]) send(send func(in chan<- T) bool) bool {
	w.mu.RLock()
	defer w.mu.RUnlock()
	return !w.closed && send(w.in)
}

// close closes the channel and waits for the workers; calling it again
// does nothing.
func (w *workers[T]) close() {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return
	}
	w.closed = true
	close(w.in)
	w.mu.Unlock()
	w.done.Wait()
}
