// Package node is one bdp process below its HTTP routes: the parts it
// starts in order and stops in reverse (Parts), and the core every node
// runs, the pipeline and the virtual datapoint engine (StartCore). bdp
// serve and the HTTP tests start them with the same code.
package node

import (
	"context"
	"log/slog"
	"time"
)

// Parts is what a node has started, in the order it started them; Stop
// stops them in the reverse order, so that each part stops before the
// parts it uses (the HTTP routes before the engine they command, the
// engine before the pipeline it writes to, the pipeline before the
// database). Cluster membership will be one more part.
type Parts struct {
	Log     *slog.Logger // where the stops are logged
	started []part
}

type part struct {
	name string
	stop func(ctx context.Context)
}

// Add records a started part and how to stop it; stop should return by
// the context's deadline.
func (p *Parts) Add(name string, stop func(ctx context.Context)) {
	p.started = append(p.started, part{name, stop})
}

// AddFunc records a part whose stop takes no deadline.
func (p *Parts) AddFunc(name string, stop func()) {
	p.Add(name, func(context.Context) { stop() })
}

// Stop stops every part, the last started first, within timeout in all.
// A part that has not stopped when the deadline passes is left behind
// (logged): the process is about to exit, and the parts started before it
// (the pipeline, say, that holds writes to answer) must not wait for a
// part that hangs. Once the deadline has passed, each remaining part
// still gets its stop and lateGrace to finish it. Nothing acknowledged is
// lost by it: writers are answered after their commit.
func (p *Parts) Stop(timeout time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for i := len(p.started) - 1; i >= 0; i-- {
		pt := p.started[i]
		began := time.Now()
		done := make(chan struct{})
		go func() {
			defer close(done)
			pt.stop(ctx)
		}()
		if !awaitStop(ctx, done) {
			p.Log.Error("stop not done within the shutdown timeout; left behind", slog.String("part", pt.name))
			continue
		}
		p.Log.Info("stopped", slog.String("part", pt.name), slog.Duration("took", time.Since(began)))
	}
	p.started = nil
}

// lateGrace is how long a part's stop may take once the shutdown deadline
// has passed.
const lateGrace = time.Second

// awaitStop waits for done until ctx ends, then lateGrace more; false if
// done did not come.
func awaitStop(ctx context.Context, done <-chan struct{}) bool {
	select {
	case <-done:
		return true
	case <-ctx.Done():
	}
	late := time.NewTimer(lateGrace)
	defer late.Stop()
	select {
	case <-done:
		return true
	case <-late.C:
		return false
	}
}
