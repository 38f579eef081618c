package controls

import (
	"strings"
	"testing"

	"github.com/openbdp/bdp/fault"
	"github.com/openbdp/bdp/store"
)

// Apps started together must not write one datapoint at one priority;
// an app running already holds its target in the store and is skipped.
func TestRefuseSharedTargets(t *testing.T) {
	plan := func(id string, status int, target string, priority int) Plan {
		return Plan{App: store.ControlsApp{ID: id, StatusCode: status}, Target: target, Params: WriteParams{Priority: priority}}
	}
	stopped, running := store.StatusStopped, store.StatusRunning
	cases := []struct {
		name     string
		plans    []Plan
		conflict string // apps the refusal names; "" for none
	}{
		{"distinct datapoints", []Plan{plan("a", stopped, "x", 13), plan("b", stopped, "y", 13)}, ""},
		{"one datapoint, two priorities", []Plan{plan("a", stopped, "x", 13), plan("b", stopped, "x", 14)}, ""},
		{"one datapoint, one priority", []Plan{plan("a", stopped, "x", 13), plan("b", stopped, "y", 13), plan("c", stopped, "x", 13)}, "a and c"},
		{"the other runs already", []Plan{plan("a", running, "x", 13), plan("b", stopped, "x", 13)}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := RefuseSharedTargets(c.plans)
			switch {
			case c.conflict == "" && err != nil:
				t.Errorf("refused: %v", err)
			case c.conflict != "" && (!fault.Is(err, fault.Conflict) || !strings.Contains(err.Error(), c.conflict)):
				t.Errorf("error %v, want a conflict naming %s", err, c.conflict)
			}
		})
	}
}
