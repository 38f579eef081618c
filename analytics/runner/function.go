package runner

import (
	"github.com/openbdp/bdp/analytics"
)

// Function is an analysis function as the pool runs it.
type Function interface {
	// Reads lists the alphanumeric ids of the pins of a component (by
	// its alphanumeric id) that the function reads: only those series are
	// loaded.
	Reads(component string) []string
	// Run computes the outcome of one period; it is pure and fails with
	// analytics.ErrMissingPin or analytics.ErrBadAttribute wrapped with
	// the pin or attribute named.
	Run(in analytics.Input) (analytics.Outcome, error)
}

// Functions finds an analysis function by its numeric id (the database's,
// analysis_instances.function_id); false when this release has none.
type Functions func(id int64) (Function, bool)

// fillPrevious sets the summary KPI's value in the period before (prev's
// current value) on cur, when both report the same KPI.
func fillPrevious(cur *analytics.Outcome, prev analytics.Outcome) {
	if prev.Summary.Current == nil || prev.Summary.Identifier != cur.Summary.Identifier {
		return
	}
	v := *prev.Summary.Current
	cur.Summary.Previous = &v
}
