package edge_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/openbdp/bdp/edge"
	"github.com/openbdp/bdp/edge/edgetest"
	"github.com/openbdp/bdp/fault"
	"github.com/openbdp/bdp/store"
)

// A device that stops its heartbeat goes offline after the missed
// heartbeats; an acked write then stays initialized and fails after the
// operation time-out, having sent nothing.
func TestOfflineDeviceFailsAckedWriteAfterTheWait(t *testing.T) {
	e := newEnv(t)
	p := e.project("acme", 8)
	d := e.device(p)
	d.SetAlive(false)
	e.waitFor("device offline", func() bool { return !e.m.Status(p).Online })
	if e.metric("bdp_edge_online", p) != 0 {
		t.Fatal("/metrics shows the device online")
	}

	start := time.Now()
	op, err := e.sp.Write(context.Background(), edge.Write{ProjectID: p, DataPointID: "sp", Value: f(20), Priority: 13, Acked: true})
	if err != nil {
		t.Fatal(err)
	}
	e.waitFor("one pending operation", func() bool { return e.m.Status(p).PendingOperations == 1 })
	if e.metric("bdp_edge_pending_operations", p) != 1 {
		t.Fatal("/metrics does not show the pending operation")
	}
	got, log := e.operation(op.Reference)
	took := time.Since(start)
	if got.State != edge.StateFailed || !strings.Contains(got.Reason, "offline") {
		t.Fatalf("state %q reason %q, want failed because offline", got.State, got.Reason)
	}
	if took < testOperation-100*time.Millisecond || took > testOperation+2*time.Second {
		t.Fatalf("failed after %v, want about %v", took, testOperation)
	}
	if len(log) != 2 || log[1].Stage != edge.StateFailed {
		t.Fatalf("log %+v, want initialized then failed", log)
	}
	if reqs := d.Requests(); len(reqs) != 0 {
		t.Fatalf("an offline device got %+v", reqs)
	}
	if e.m.Status(p).PendingOperations != 0 {
		t.Fatal("the failed operation is still pending")
	}
}

// With the embedded broker, a device whose connection ends is offline at
// once: what waited for its answer fails now, new requests fail at once
// saying nothing was sent, a dry run answers 503, all well before the
// operation time-out; a device that connects again is served as before.
func TestDeviceWhoseConnectionEndsIsOfflineAtOnce(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	p := e.project("acme", 8)
	d := e.device(p)
	d.SetMode(edgetest.Silent)
	write := func() string {
		t.Helper()
		op, err := e.sp.Write(ctx, edge.Write{ProjectID: p, DataPointID: "sp", Value: f(20), Priority: 13, Acked: true})
		if err != nil {
			t.Fatal(err)
		}
		return op.Reference
	}
	waiting := write()
	e.waitFor("the write sent", func() bool {
		op, _, err := e.st.SetpointOperation(ctx, waiting)
		return err == nil && op.State == edge.StateRequested
	})
	start := time.Now()
	d.Close()
	got, _ := e.operation(waiting)
	if got.State != edge.StateFailed || got.Reason != "the edge device's MQTT connection ended before it answered" {
		t.Fatalf("the unanswered write: state %q reason %q", got.State, got.Reason)
	}
	if e.m.Status(p).Online {
		t.Fatal("the device is online after its connection ended")
	}
	if took := time.Since(start); took >= testOperation {
		t.Fatalf("failed after %v, not at once", took)
	}

	start = time.Now()
	got, _ = e.operation(write())
	if got.State != edge.StateFailed || !strings.Contains(got.Reason, "not connected") || !strings.Contains(got.Reason, "nothing was sent") {
		t.Fatalf("a write to the gone device: state %q reason %q", got.State, got.Reason)
	}
	if _, err := e.sp.Write(ctx, edge.Write{ProjectID: p, DataPointID: "sp", Value: f(20), Priority: 13, DryRun: true}); !fault.Is(err, fault.Unavailable) {
		t.Fatalf("dry run: %v, want unavailable", err)
	}
	if _, err := e.m.Request(ctx, p, edge.Request{Operation: edge.OpAppStop, App: &edge.App{ID: "a1"}}); err == nil || !strings.Contains(err.Error(), "not connected") {
		t.Fatalf("app request: %v, want not connected", err)
	}
	if took := time.Since(start); took >= testOperation {
		t.Fatalf("requests to the gone device took %v, not failing at once", took)
	}

	back := edgetest.Start(t, e.broker.Addr, p, "device-secret", testAlive)
	e.waitFor("device online again", func() bool { return e.m.Status(p).Online })
	if got, _ := e.operation(write()); got.State != edge.StateWritten {
		t.Fatalf("after the device came back: state %q (%s), want written", got.State, got.Reason)
	}
	if len(back.Requests()) != 1 {
		t.Fatalf("the device that came back got %d requests, want the one write", len(back.Requests()))
	}
}

// A write queued while the device is offline goes out when it comes back
// within the wait.
func TestQueuedWriteGoesOutWhenTheDeviceComesBack(t *testing.T) {
	e := newEnv(t)
	p := e.project("acme", 8)
	d := e.device(p)
	d.SetAlive(false)
	e.waitFor("device offline", func() bool { return !e.m.Status(p).Online })
	op, err := e.sp.Write(context.Background(), edge.Write{ProjectID: p, DataPointID: "sp", Value: f(20), Priority: 13, Acked: true})
	if err != nil {
		t.Fatal(err)
	}
	d.SetAlive(true)
	if got, _ := e.operation(op.Reference); got.State != edge.StateWritten {
		t.Fatalf("state %q (%s), want written", got.State, got.Reason)
	}
}

// A device that refuses, or does not answer, fails the operation with
// the reason.
func TestRefusedAndUnansweredWritesFail(t *testing.T) {
	e := newEnv(t)
	p := e.project("acme", 8)
	d := e.device(p)
	for _, tc := range []struct {
		mode   edgetest.Mode
		reason string
	}{
		{edgetest.Refuse, "the edge device refused the write: datapoint out of service"},
		{edgetest.Silent, "no answer from the edge device within 1.5s"},
	} {
		d.SetMode(tc.mode)
		op, err := e.sp.Write(context.Background(), edge.Write{ProjectID: p, DataPointID: "sp", Value: f(20), Priority: 13, Acked: true})
		if err != nil {
			t.Fatal(err)
		}
		got, log := e.operation(op.Reference)
		if got.State != edge.StateFailed || got.Reason != tc.reason {
			t.Fatalf("mode %d: state %q reason %q, want failed: %q", tc.mode, got.State, got.Reason, tc.reason)
		}
		if len(log) != 3 || log[1].Stage != edge.StateRequested {
			t.Fatalf("mode %d: log %+v, want initialized, requested, failed", tc.mode, log)
		}
	}
}

// Garbage from one device is dropped and counted; its own operations
// and another project's go on.
func TestGarbageFromADeviceBlocksNothing(t *testing.T) {
	e := newEnv(t)
	p, q := e.project("acme", 8), e.project("other", 8)
	bad, good := e.device(p), e.device(q)
	bad.SetMode(edgetest.Garbage)
	for _, proj := range []int64{p, q} {
		op, err := e.sp.Write(context.Background(), edge.Write{ProjectID: proj, DataPointID: "sp", Value: f(19), Priority: 13, Acked: true})
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := e.operation(op.Reference); got.State != edge.StateWritten {
			t.Fatalf("project %d: state %q (%s), want written", proj, got.State, got.Reason)
		}
	}
	for _, topic := range []string{"response", "alive", "data"} {
		e.waitFor("bad messages on "+topic+" counted", func() bool { return e.metric("bdp_edge_bad_messages_total", 0, "topic", topic) >= 1 })
	}
	if !e.m.Status(p).Online || len(good.Requests()) != 1 {
		t.Fatal("garbage took the device offline or held up the other project")
	}
}

// A device whose answers and heartbeats carry a field the platform does
// not know (newer firmware) is answered as any other: the write is
// written, not failed as if the device never answered, and the device
// stays online.
func TestAnswersWithUnknownFieldsAreAccepted(t *testing.T) {
	onBothBrokers(t, testAnswersWithUnknownFieldsAreAccepted)
}

func testAnswersWithUnknownFieldsAreAccepted(t *testing.T, e *env) {
	p := e.project("acme", 8)
	d := e.device(p)
	d.SetMode(edgetest.Newer)
	op, err := e.sp.Write(context.Background(), edge.Write{ProjectID: p, DataPointID: "sp", Value: f(20), Priority: 13, Acked: true})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := e.operation(op.Reference); got.State != edge.StateWritten {
		t.Fatalf("state %q (%s), want written", got.State, got.Reason)
	}
	time.Sleep(2 * testOffline) // heartbeats of the newer device only
	if !e.m.Status(p).Online {
		t.Fatal("the newer device's heartbeats were dropped: offline")
	}
	if n := e.metric("bdp_edge_bad_messages_total", 0, "topic", "response") + e.metric("bdp_edge_bad_messages_total", 0, "topic", "alive"); n != 0 {
		t.Fatalf("%v answers counted as bad", n)
	}
}

// A dry run reports the slot's value and the priority array and writes
// nothing, and an acked one says so in its status and log; an unacked
// write keeps no state.
func TestDryRunChangesNothingAndUnackedKeepsNoState(t *testing.T) {
	onBothBrokers(t, testDryRunChangesNothingAndUnackedKeepsNoState)
}

func testDryRunChangesNothingAndUnackedKeepsNoState(t *testing.T, e *env) {
	p := e.project("acme", 8)
	d := e.device(p)
	d.SetSlot("sp", 13, f(17))
	d.SetSlot("sp", 16, f(18))
	before := d.PriorityArray("sp")
	for _, acked := range []bool{false, true} {
		op, err := e.sp.Write(context.Background(), edge.Write{ProjectID: p, DataPointID: "sp", Value: f(22), Priority: 13, DryRun: true, Acked: acked})
		if err != nil {
			t.Fatal(err)
		}
		if op.OverwrittenValue == nil || *op.OverwrittenValue != 17 || len(op.PriorityArray) != 17 || *op.PriorityArray[15] != 18 {
			t.Fatalf("dry run answered old value %v, array %v; want 17 and the 17 slots", op.OverwrittenValue, op.PriorityArray)
		}
		if op.State == edge.StateWritten {
			t.Fatalf("dry run (acked %v) answered state written", acked)
		}
		if acked {
			// Its status and log say that nothing was written (api.md
			// 4.6 rule 6): it ends in reported, never written.
			got, log := e.operation(op.Reference)
			if !got.DryRun || got.State != edge.StateReported || len(log) != 3 || got.OldValue == nil || *got.OldValue != 17 {
				t.Fatalf("acked dry run stored %+v with %d entries, want reported with old value 17 and 3 entries", got, len(log))
			}
			for _, l := range log {
				if l.Stage == edge.StateWritten || strings.Contains(l.Msg, "reports the write") {
					t.Fatalf("an acked dry run's log says written: %+v", log)
				}
			}
			if last := log[2]; last.Stage != edge.StateReported || !strings.Contains(last.Msg, "nothing was written") {
				t.Fatalf("last log entry %+v, want reported: nothing was written", last)
			}
		}
	}
	if after := d.PriorityArray("sp"); after != before {
		t.Fatal("a dry run changed the priority array")
	}
	for _, r := range d.Requests() {
		if r.Operation != edge.OpRead {
			t.Fatalf("a dry run sent %q", r.Operation)
		}
	}

	op, err := e.sp.Write(context.Background(), edge.Write{ProjectID: p, DataPointID: "sp", Value: f(23), Priority: 14})
	if err != nil || op.Reference != "" {
		t.Fatalf("unacked write: %+v, %v; want no reference", op, err)
	}
	e.waitFor("the unacked write at the device", func() bool { v := d.PriorityArray("sp")[13]; return v != nil && *v == 23 })
	if n := e.count(`SELECT count(*) FROM setpoint_operations WHERE NOT dryrun`); n != 0 {
		t.Fatalf("an unacked write stored %d operations", n)
	}

	// A dry run needs the device: offline answers 503 at once.
	d.SetAlive(false)
	e.waitFor("device offline", func() bool { return !e.m.Status(p).Online })
	if _, err := e.sp.Write(context.Background(), edge.Write{ProjectID: p, DataPointID: "sp", Value: f(22), Priority: 13, DryRun: true}); !fault.Is(err, fault.Unavailable) {
		t.Fatalf("dry run while offline: %v, want unavailable", err)
	}
}

// Connections follow the edge credentials; a project without them is
// refused before anything is sent; operations a restart left open fail.
func TestConnectionsFollowCredentialsAndRestartFailsOpenOperations(t *testing.T) {
	e := newEnv(t)
	p := e.project("acme", 8)
	if _, err := e.sp.Write(context.Background(), edge.Write{ProjectID: p, DataPointID: "sp", Value: f(20), Priority: 13}); !fault.Is(err, fault.Forbidden) ||
		!strings.Contains(fault.Message(err), "has no edge device") {
		t.Fatalf("write without edge device: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); e.m.Run(ctx) }()
	defer func() { cancel(); <-done }()
	h, _ := e.hasher.Hash(ctx, "x")
	u, err := e.st.PutEdgeCredentials(ctx, p, h)
	if err != nil {
		t.Fatal(err)
	}
	e.waitFor("the connection to start", func() bool { return e.m.Status(p).Configured })
	if err := e.st.DeleteMQTTUser(ctx, p, u.ID); err != nil {
		t.Fatal(err)
	}
	e.waitFor("the connection to stop", func() bool { return !e.m.Status(p).Configured })

	// An operation left open (a crash) fails at the next start.
	now := time.Now().UTC()
	ref := "0b8f6a0e-9a57-4b44-8a0c-2f6a35c7b001"
	if err := e.st.CreateSetpointOperation(ctx, store.SetpointOperation{Reference: ref, ProjectID: p, DataPointID: "sp", Value: f(20),
		Priority: 13, Acked: true, State: edge.StateInitialized, Source: "user:1", CreatedAt: now},
		store.SetpointLogEntry{Time: now, Stage: edge.StateInitialized}); err != nil {
		t.Fatal(err)
	}
	if _, err := edge.NewSetpoints(ctx, e.m); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := e.st.SetpointOperation(ctx, ref); got.State != edge.StateFailed || !strings.Contains(got.Reason, "restarted") {
		t.Fatalf("open operation after a restart: %q %q", got.State, got.Reason)
	}
}

// A connection actor that panics is restarted by its supervisor and
// serves the next write.
func TestCrashedConnectionRestarts(t *testing.T) {
	e := newEnv(t)
	p := e.project("acme", 8)
	e.device(p)
	e.m.CrashConnection(p)
	// The crashing request counted as pending until the restart reset it.
	e.waitFor("the restart", func() bool { return e.m.Status(p).PendingOperations == 0 })
	op, err := e.sp.Write(context.Background(), edge.Write{ProjectID: p, DataPointID: "sp", Value: f(20), Priority: 13, Acked: true})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := e.operation(op.Reference); got.State != edge.StateWritten {
		t.Fatalf("after the crash: state %q (%s), want written", got.State, got.Reason)
	}
}
