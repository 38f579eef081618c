package runner

import (
	"github.com/openbdp/bdp/analytics"
)

// Function is an analysis function as the pool runs it: the release's
// (FromCatalog), or one a test makes.
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

// FromCatalog finds the release's analysis functions in the catalog.
func FromCatalog(cat *analytics.Catalog) Functions {
	return func(id int64) (Function, bool) {
		f, ok := cat.Function(id)
		if !ok {
			return nil, false
		}
		return catalogFunction{f}, true
	}
}

// catalogFunction is a function of the catalog; Run is analytics.Function's.
type catalogFunction struct{ analytics.Function }

func (f catalogFunction) Reads(component string) []string {
	var pins []string
	for _, p := range f.Pins {
		if id := p.PinIDs[component]; id != "" {
			pins = append(pins, id)
		}
	}
	return pins
}
