package actors

import (
	"context"
	"time"

	"github.com/openbdp/bdp/store"
)

// The engine commanded by virtual datapoint rows, as HTTP and the cluster
// hold them: each builds the definition from the row's type and
// configuration, so that whichever node gets a row answers alike.

// StartVDP starts the virtual datapoint of a row (Start).
func (e *Engine) StartVDP(ctx context.Context, v store.VDP) (time.Time, error) {
	def, err := e.Definition(v.ProjectID, v.DataPointID, v.Type, v.Config)
	if err != nil {
		return time.Time{}, err
	}
	return e.Start(ctx, def)
}

// CatchUpVDP starts the virtual datapoint of a row where it left off
// (CatchUp from the row's CatchUpFrom).
func (e *Engine) CatchUpVDP(ctx context.Context, v store.VDP) error {
	def, err := e.Definition(v.ProjectID, v.DataPointID, v.Type, v.Config)
	if err != nil {
		return err
	}
	return e.CatchUp(ctx, def, v.CatchUpFrom)
}

// CheckRunBudget refuses a start of the row's datapoint that the node's
// window budget cannot hold (CheckBudget with toRun).
func (e *Engine) CheckRunBudget(_ context.Context, v store.VDP) error {
	def, err := e.Definition(v.ProjectID, v.DataPointID, v.Type, v.Config)
	if err != nil {
		return err
	}
	return e.CheckBudget(def, true)
}

// RunningKeys lists the virtual datapoints whose actors run or start on
// this node.
func (e *Engine) RunningKeys() []Key {
	e.mu.Lock()
	defer e.mu.Unlock()
	keys := make([]Key, 0, len(e.running))
	for k := range e.running {
		keys = append(keys, k)
	}
	return keys
}
