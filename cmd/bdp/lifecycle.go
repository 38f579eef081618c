package main

import (
	"context"
	"log/slog"
	"time"
)

// parts is what bdp serve has started, in the order it started them; stop
// stops them in the reverse order, so that each part stops before the
// parts it uses (the HTTP routes before the engine they command, the
// engine before the pipeline it writes to, the pipeline before the
// database). Cluster membership will be one more part.
type parts struct {
	log     *slog.Logger
	started []part
}

type part struct {
	name string
	stop func(ctx context.Context)
}

// add records a started part and how to stop it; stop should return by
// the context's deadline.
func (p *parts) add(name string, stop func(ctx context.Context)) {
	p.started = append(p.started, part{name, stop})
}

// addFunc records a part whose stop takes no deadline.
func (p *parts) addFunc(name string, stop func()) {
	p.add(name, func(context.Context) { stop() })
}

// stop stops every part, the last started first, within timeout in all.
// A part that has not stopped when the deadline passes is left behind
// (logged): the process is about to exit, and the parts started before it
// (the pipeline, say, that holds writes to answer) must not wait for a
// part that hangs. Once the deadline has passed, each remaining part
// still gets its stop and lateGrace to finish it. Nothing acknowledged is
// lost by it: writers are answered after their commit.
func (p *parts) stop(timeout time.Duration) {
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
			p.log.Error("stop not done within BDP_SHUTDOWN_TIMEOUT; left behind", slog.String("part", pt.name))
			continue
		}
		p.log.Info("stopped", slog.String("part", pt.name), slog.Duration("took", time.Since(began)))
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
