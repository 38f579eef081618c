package actors

import (
	"context"
	"errors"
)

// StopProject stops every running virtual datapoint of a project, as
// when the project is deleted: its actors would otherwise run on, fed by
// nothing, and keep their share of the window budget until a restart.
func (e *Engine) StopProject(ctx context.Context, projectID int64) error {
	e.mu.Lock()
	var keys []Key
	for k := range e.running {
		if k.ProjectID == projectID {
			keys = append(keys, k)
		}
	}
	e.mu.Unlock()
	var errs []error
	for _, k := range keys {
		errs = append(errs, e.Stop(ctx, k))
	}
	return errors.Join(errs...)
}
