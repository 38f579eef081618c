package actors

import (
	"context"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// windowBytesQuery asks an actor what its windows hold
// (window.Calc.HeldBytes); it answers an int64.
type windowBytesQuery struct{}

// heldBytes is what the calculator's windows hold now.
func (c *calculator) heldBytes() int64 { return c.calc.HeldBytes() }

// WindowBytes is what the windows of every running virtual datapoint hold
// now, asked of each actor in its turn, so it reads no window while it
// changes: the heap of a running datapoint beside its windows is the
// process's heap less this (issue 18), and the window budget's estimates
// must stay above it. One request per actor: a figure for benchmarks and
// diagnostics, not for a hot path.
func (e *Engine) WindowBytes(ctx context.Context) (int64, error) {
	e.mu.Lock()
	pids := make([]*actor.PID, 0, len(e.running))
	for _, r := range e.running {
		if r.pid != nil {
			pids = append(pids, r.pid)
		}
	}
	e.mu.Unlock()
	var total int64
	for _, pid := range pids {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		res, err := e.system.Root.RequestFuture(pid, windowBytesQuery{}, 10*time.Second).Result()
		if err != nil {
			return 0, fmt.Errorf("window bytes of %s: %w", pid.Id, err)
		}
		n, _ := res.(int64)
		total += n
	}
	return total, nil
}
