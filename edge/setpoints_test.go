package edge_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/openbdp/bdp/edge"
	"github.com/openbdp/bdp/fault"
	"github.com/openbdp/bdp/store"
)

// An acked write goes initialized → requested → written; the written
// entry carries the priority array before the write and the overwritten
// value; the device's present value lands in the timeseries.
func TestAckedWriteIsWrittenWithPriorityArrayAndOverwrittenValue(t *testing.T) {
	e := newEnv(t)
	p := e.project("acme", 8)
	d := e.device(p)
	ctx := context.Background()
	d.SetSlot("sp", 16, f(18)) // the building's own, less urgent value

	op, err := e.sp.Write(ctx, edge.Write{ProjectID: p, DataPointID: "sp", Value: f(21), Priority: 13, Acked: true, KeepOutOfService: true, Source: "user:1"})
	if err != nil {
		t.Fatal(err)
	}
	if op.Reference == "" || op.State != edge.StateInitialized {
		t.Fatalf("answer %+v, want a reference in state initialized", op)
	}
	got, log := e.operation(op.Reference)
	if got.State != edge.StateWritten {
		t.Fatalf("state %q (%s), want written", got.State, got.Reason)
	}
	var stages []string
	for _, l := range log {
		stages = append(stages, l.Stage)
	}
	if strings.Join(stages, ",") != "initialized,requested,written" {
		t.Fatalf("stages %v", stages)
	}
	if log[0].Details["acked"] != true || log[0].Details["dryrun"] != false {
		t.Errorf("first entry details %v, want acked true and dryrun false", log[0].Details)
	}
	pa, _ := log[2].Details["priorityArray"].([]any)
	if len(pa) != edge.PrioritySlots || pa[15] != 18.0 || pa[12] != nil {
		t.Errorf("priorityArray %v, want 17 slots with 18 at priority 16 and nothing at 13", pa)
	}
	if v, ok := log[2].Details["overwritten_value"]; !ok || v != nil {
		t.Errorf("overwritten_value %v (present %v), want null", v, ok)
	}
	if arr := d.PriorityArray("sp"); arr[12] == nil || *arr[12] != 21 {
		t.Errorf("device slot 13 = %v, want 21", arr[12])
	}
	if reqs := d.Requests(); len(reqs) != 1 || !reqs[0].KeepOutOfService || reqs[0].Priority != 13 {
		t.Errorf("device got %+v, want one write with keep_out_of_service at priority 13", reqs)
	}

	// The same slot again: the overwritten value is reported.
	op, err = e.sp.Write(ctx, edge.Write{ProjectID: p, DataPointID: "sp", Value: f(22.5), Priority: 13, Acked: true})
	if err != nil {
		t.Fatal(err)
	}
	got, _ = e.operation(op.Reference)
	if got.State != edge.StateWritten || got.OldValue == nil || *got.OldValue != 21 {
		t.Fatalf("second write: state %q old value %v, want written over 21", got.State, got.OldValue)
	}

	// The present value reported on data is stored.
	e.waitFor("present value in the timeseries", func() bool {
		dp, err := e.st.Datapoint(ctx, p, "sp")
		if err != nil {
			t.Fatal(err)
		}
		pts, err := e.st.ReadObservations(ctx, dp.ID, store.ReadQuery{Max: 10})
		if err != nil {
			t.Fatal(err)
		}
		return len(pts) > 0 && pts[len(pts)-1].Value == 22.5
	})

	// value nil clears the slot: the less urgent 18 is present again.
	op, err = e.sp.Write(ctx, edge.Write{ProjectID: p, DataPointID: "sp", Priority: 13, Acked: true})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ = e.operation(op.Reference); got.State != edge.StateWritten {
		t.Fatalf("clear: state %q", got.State)
	}
	if arr := d.PriorityArray("sp"); arr[12] != nil {
		t.Errorf("slot 13 after a clear = %v, want empty", *arr[12])
	}
}

// Each safeguard refuses with its operation and kind, and nothing reaches
// the device.
func TestSafeguardsRefuseInOrder(t *testing.T) {
	e := newEnv(t)
	p := e.project("acme", 8)
	d := e.device(p)
	disabled := e.project("other", 8)
	off := false
	if _, err := e.st.UpdateProjectSettings(context.Background(), disabled, store.SettingsPatch{SetpointWritingEnabled: &off}); err != nil {
		t.Fatal(err)
	}
	forbid := func(context.Context) error { return fault.Forbiddenf("no write access to datapoint %q", "sp") }
	for _, tc := range []struct {
		name string
		w    edge.Write
		kind fault.Kind
		op   string // the Refusal's operation; "" for plain input errors
		text string
	}{
		{"writing not enabled", edge.Write{ProjectID: disabled, DataPointID: "sp", Value: f(20), Priority: 13}, fault.Forbidden, "post", "setpoint writing is not enabled"},
		{"unknown project", edge.Write{ProjectID: 999999, DataPointID: "sp", Value: f(20), Priority: 13}, fault.Forbidden, "post", "unknown"},
		{"writing not enabled before TagAuths", edge.Write{ProjectID: disabled, DataPointID: "sp", Value: f(20), Priority: 13, Authorize: forbid}, fault.Forbidden, "post", "not enabled"},
		{"TagAuths before bounds", edge.Write{ProjectID: p, DataPointID: "unbounded", Value: f(99), Priority: 13, Authorize: forbid}, fault.Forbidden, "", "no write access"},
		{"no bounds", edge.Write{ProjectID: p, DataPointID: "unbounded", Value: f(20), Priority: 13}, fault.Invalid, "create", `datapoint "unbounded" has no setpoint bounds`},
		{"unknown datapoint has no bounds", edge.Write{ProjectID: p, DataPointID: "nope", Value: f(20), Priority: 13}, fault.Invalid, "create", "no setpoint bounds"},
		{"above bounds", edge.Write{ProjectID: p, DataPointID: "sp", Value: f(25.5), Priority: 13}, fault.Invalid, "create", `value 25.5 for datapoint "sp" lies outside its setpoint bounds [15, 25]`},
		{"below bounds", edge.Write{ProjectID: p, DataPointID: "sp", Value: f(-3), Priority: 13}, fault.Invalid, "create", "[15, 25]"},
		{"bounds before priority", edge.Write{ProjectID: p, DataPointID: "sp", Value: f(30), Priority: 2}, fault.Invalid, "create", "outside its setpoint bounds"},
		{"priority more urgent than allowed", edge.Write{ProjectID: p, DataPointID: "sp", Value: f(20), Priority: 7}, fault.Invalid, "create", "priority 7 is refused: project"},
		{"priority 0", edge.Write{ProjectID: p, DataPointID: "sp", Value: f(20), Priority: 0}, fault.Invalid, "", "from 1 (most urgent) to 16"},
		{"priority 17", edge.Write{ProjectID: p, DataPointID: "sp", Value: f(20), Priority: 17}, fault.Invalid, "", "got 17"},
		{"NaN", edge.Write{ProjectID: p, DataPointID: "sp", Value: f(math.NaN()), Priority: 13}, fault.Invalid, "", "finite"},
		{"infinity", edge.Write{ProjectID: p, DataPointID: "sp", Value: f(math.Inf(1)), Priority: 13}, fault.Invalid, "", "finite"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.w.Acked = true
			_, err := e.sp.Write(context.Background(), tc.w)
			if err == nil {
				t.Fatal("accepted")
			}
			if fault.KindOf(err) != tc.kind || !strings.Contains(fault.Message(err), tc.text) {
				t.Fatalf("error %v (kind %v), want kind %v containing %q", err, fault.KindOf(err), tc.kind, tc.text)
			}
			var r *edge.Refusal
			if gotOp := ""; errors.As(err, &r) {
				gotOp = r.Operation
				if gotOp != tc.op {
					t.Fatalf("operation %q, want %q", gotOp, tc.op)
				}
			} else if tc.op != "" {
				t.Fatalf("no Refusal, want operation %q", tc.op)
			}
		})
	}
	// One accepted write after them, waited for until written: requests
	// reach the device in order, so a refused one sent after all would
	// have come before it.
	op, err := e.sp.Write(context.Background(), edge.Write{ProjectID: p, DataPointID: "sp", Value: f(20), Priority: 13, Acked: true})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := e.operation(op.Reference); got.State != edge.StateWritten {
		t.Fatalf("the accepted write: state %q (%s), want written", got.State, got.Reason)
	}
	if reqs := d.Requests(); len(reqs) != 1 || reqs[0].Priority != 13 {
		t.Fatalf("the device got %+v, want only the accepted write: refused writes reached it", reqs)
	}
	if n := e.count(`SELECT count(*) FROM setpoint_operations`); n != 1 {
		t.Fatalf("%d operations stored, want the accepted one only", n)
	}
}
