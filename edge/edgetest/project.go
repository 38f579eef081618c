package edgetest

import (
	"context"
	"testing"
	"time"

	"github.com/openbdp/bdp/store"
	"github.com/openbdp/bdp/store/storetest"
)

// Project makes a company with a project whose setpoint writing is
// enabled (maxPriority; 0 keeps the project default), with the datapoints
// bounded given setpoint bounds [15, 25] and the datapoints unbounded
// none, all in degC.
func Project(t testing.TB, st *store.Store, name string, maxPriority int, bounded, unbounded []string) int64 {
	t.Helper()
	ctx := context.Background()
	p := storetest.NewTenant(t, st, name).Project
	on := true
	patch := store.SettingsPatch{SetpointWritingEnabled: &on}
	if maxPriority != 0 {
		patch.SetpointMaxPriority = &maxPriority
	}
	if _, err := st.UpdateProjectSettings(ctx, p.ID, patch); err != nil {
		t.Fatal(err)
	}
	for _, dp := range append(append([]string(nil), bounded...), unbounded...) {
		if _, err := st.SetSystemTags(ctx, p.ID, dp, []store.DatapointTag{{Key: "units", Value: "degC"}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, dp := range bounded {
		if _, err := st.SetDatapointSetpoints(ctx, p.ID, dp, 15, 25); err != nil {
			t.Fatal(err)
		}
	}
	return p.ID
}

// WaitFor polls cond every 10 ms until it holds, failing t after 10 s
// with what it waited for.
func WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
