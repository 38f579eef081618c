package sim

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openbdp/bdp/edge"
)

// TestPriorityArray: BACnet semantics over a real broker: the most urgent
// non-null slot wins, a more urgent value masks a less urgent one, null
// relinquishes, the response carries the array before the write and the
// overwritten value.
func TestPriorityArray(t *testing.T) {
	broker := startBroker(t)
	p := startPlatform(t, broker)
	startSim(t, broker, p, map[string]*float64{"sp": num(20)})

	steps := []struct {
		name            string
		value           *float64
		priority        int
		wantBefore      string // priority array before the write
		wantOverwritten *float64
		wantPresent     *float64
	}{
		{"first write", num(21), 13, "[null null null null null null null null null null null null null null null null 20]", nil, num(21)},
		{"more urgent masks", num(18), 8, "[null null null null null null null null null null null null 21 null null null 20]", nil, num(18)},
		{"less urgent hidden", num(22), 13, "[null null null null null null null 18 null null null null 21 null null null 20]", num(21), num(18)},
		{"null clears the urgent", nil, 8, "[null null null null null null null 18 null null null null 22 null null null 20]", num(18), num(22)},
		{"null clears the last", nil, 13, "[null null null null null null null null null null null null 22 null null null 20]", num(22), num(20)},
		{"priority 1", num(5), 1, "[null null null null null null null null null null null null null null null null 20]", nil, num(5)},
		{"priority 16 under 1", num(30), 16, "[5 null null null null null null null null null null null null null null null 20]", nil, num(5)},
	}
	for _, s := range steps {
		r := p.write("sp", s.value, s.priority)
		if r.Status != edge.StatusOK {
			t.Fatalf("%s: %+v", s.name, r)
		}
		if got := showArray(r.PriorityArray); got != s.wantBefore {
			t.Errorf("%s: priority array before %s, want %s", s.name, got, s.wantBefore)
		}
		if show(r.OverwrittenValue) != show(s.wantOverwritten) || show(r.PresentValue) != show(s.wantPresent) {
			t.Errorf("%s: overwritten %s present %s, want %s and %s", s.name,
				show(r.OverwrittenValue), show(r.PresentValue), show(s.wantOverwritten), show(s.wantPresent))
		}
	}
	r := p.read("sp")
	if got := showArray(r.PriorityArray); r.Status != edge.StatusOK || got != "[5 null null null null null null null null null null null null null null 30 20]" || show(r.PresentValue) != "5" {
		t.Errorf("read: %s %s present %s", r.Status, got, show(r.PresentValue))
	}
	// Present values reached the data topic: each change, and periodically.
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		p.mu.Lock()
		var seen []string
		for _, o := range p.data {
			seen = append(seen, show(&o.Value))
		}
		p.mu.Unlock()
		if strings.Contains(strings.Join(seen, ","), "21,18,22,20,5") && len(seen) > 6 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Errorf("data topic did not carry the present values 21,18,22,20,5 and a periodic 5")
}

// TestGarbageRequests: every request the device cannot carry out is
// answered with status error, and the device keeps answering.
func TestGarbageRequests(t *testing.T) {
	broker := startBroker(t)
	p := startPlatform(t, broker)
	startSim(t, broker, p, map[string]*float64{"sp": num(20)})
	ref := uuid(t)
	cases := []struct{ name, payload, reference, want string }{
		{"not json", `hello`, nilReference, "malformed JSON"},
		{"unknown operation", `{"reference":"` + ref + `","operation":"explode"}`, ref, "unknown operation"},
		{"priority 17", `{"reference":"` + ref + `","operation":"write","dataPointID":"sp","value":1,"priority":17}`, ref, "priority 17 outside 1..16"},
		{"value string", `{"reference":"` + ref + `","operation":"write","dataPointID":"sp","value":"hot","priority":13}`, ref, "value: want a number, got a string"},
		{"value too large", `{"reference":"` + ref + `","operation":"write","dataPointID":"sp","value":1e999,"priority":13}`, ref, "value: want a number, got the number 1e999"},
		{"bad reference", `{"reference":"12","operation":"ping"}`, nilReference, "not a uuid"},
		{"unknown datapoint", `{"reference":"` + ref + `","operation":"write","dataPointID":"nope","value":1,"priority":13}`, ref, `unknown datapoint "nope"`},
		{"unknown app", `{"reference":"` + ref + `","operation":"app_stop","app":{"id":"9"}}`, ref, `unknown app "9"`},
		{"app on unknown datapoint", `{"reference":"` + ref + `","operation":"app_start","app":{"id":"9","writes":[{"dataPointID":"nope","priority":13,"reset_value":null}]}}`, ref, `unknown datapoint "nope"`},
		{"huge", `{"reference":"` + ref + `","operation":"read","dataPointID":"` + strings.Repeat("x", edge.MaxMessageBytes) + `"}`, nilReference, "exceeds"},
	}
	for _, c := range cases {
		r := p.send([]byte(c.payload), c.reference)
		if r.Status != edge.StatusError || !strings.Contains(r.Error, c.want) {
			t.Errorf("%s: %+v, want status error containing %q", c.name, r, c.want)
		}
	}
	if r := p.read("sp"); r.Status != edge.StatusOK || show(r.PresentValue) != "20" {
		t.Errorf("after garbage: %+v", r)
	}
}

func appStart(id string, timeout int, resetValue *float64) edge.Request {
	return edge.Request{Operation: edge.OpAppStart, App: &edge.App{ID: id, Algorithm: "schedule", AliveTimeout: timeout,
		Writes: []edge.AppWrite{{DataPointID: "sp", Priority: 13, ResetValue: resetValue}}}}
}

// TestAliveTimeoutResetAndRecovery: the platform silent past the app's
// alive time-out → reset value written at the app's priority, app stopped,
// reset logged; the platform back → app restarted, recovered logged.
func TestAliveTimeoutResetAndRecovery(t *testing.T) {
	broker := startBroker(t)
	p := startPlatform(t, broker)
	startSim(t, broker, p, map[string]*float64{"sp": num(20)})
	if r := p.request(appStart("42", 1, num(19))); r.Status != edge.StatusOK {
		t.Fatalf("app_start: %+v", r)
	}
	if r := p.write("sp", num(23), 13); show(r.PresentValue) != "23" {
		t.Fatalf("write: %+v", r)
	}
	p.waitApp("42", true, 2*time.Second)
	start := time.Now()
	reset := p.waitEvent(edge.EventReset, "42", 4*time.Second)
	if waited := time.Since(start); waited < 900*time.Millisecond {
		t.Errorf("reset after %s, before the 1-s alive time-out", waited)
	}
	p.waitApp("42", false, 2*time.Second)
	if !strings.Contains(reset.Message, "alive time-out 1 s") {
		t.Errorf("reset event message %q", reset.Message)
	}
	// The platform is back: this read is the first request, and it sees the
	// reset value in the app's slot.
	r := p.read("sp")
	if got := showArray(r.PriorityArray); got != "[null null null null null null null null null null null null 19 null null null 20]" || show(r.PresentValue) != "19" {
		t.Errorf("after reset: array %s present %s", got, show(r.PresentValue))
	}
	p.waitEvent(edge.EventRecovered, "42", 2*time.Second)
	p.waitApp("42", true, 2*time.Second)

	// Stopping writes the reset value too (null relinquishes), and a stopped
	// app is not reset again.
	if r := p.request(edge.Request{Operation: edge.OpAppConfig, App: &edge.App{ID: "42", AliveTimeout: 1,
		Writes: []edge.AppWrite{{DataPointID: "sp", Priority: 13, ResetValue: nil}}}}); r.Status != edge.StatusOK {
		t.Fatalf("app_config: %+v", r)
	}
	if r := p.request(edge.Request{Operation: edge.OpAppStop, App: &edge.App{ID: "42"}}); r.Status != edge.StatusOK {
		t.Fatalf("app_stop: %+v", r)
	}
	if r := p.read("sp"); show(r.PresentValue) != "20" {
		t.Errorf("after app_stop with a null reset value: present %s, want the relinquish default 20", show(r.PresentValue))
	}
}

// TestCrashReload: a crash loses the priority arrays, keeps the app, and
// reloads the running app within the reload delay; crash and reload reach
// the platform in heartbeats.
func TestCrashReload(t *testing.T) {
	broker := startBroker(t)
	p := startPlatform(t, broker)
	s := startSim(t, broker, p, map[string]*float64{"sp": num(20)})
	if r := p.request(appStart("42", 0, nil)); r.Status != edge.StatusOK {
		t.Fatalf("app_start: %+v", r)
	}
	if r := p.request(edge.Request{Operation: edge.OpAppStart, App: &edge.App{ID: "43"}}); r.Status != edge.StatusOK {
		t.Fatalf("app_start: %+v", r)
	}
	if r := p.request(edge.Request{Operation: edge.OpAppStop, App: &edge.App{ID: "43"}}); r.Status != edge.StatusOK {
		t.Fatalf("app_stop: %+v", r)
	}
	p.write("sp", num(23), 13)
	crashed := time.Now()
	s.Crash("test power loss")
	crash := p.waitEvent(edge.EventCrash, "", 5*time.Second)
	if crash.Message != "test power loss" {
		t.Errorf("crash event %+v", crash)
	}
	reload := p.waitEvent(edge.EventReload, "42", 5*time.Second)
	if d := reload.Time.Sub(crashed); d > time.Minute || d < 300*time.Millisecond {
		t.Errorf("reload %s after the crash", d)
	}
	p.waitApp("42", true, 2*time.Second)
	p.waitApp("43", false, 2*time.Second)
	// What the device counts for benchmarks: the write it took, and the
	// events it delivered, each once.
	if w := s.Writes(); len(w) != 1 || w[0].DataPointID != "sp" || w[0].Priority != 13 || show(w[0].Value) != "23" {
		t.Errorf("writes taken: %+v, want the one of 23 at 13", w)
	}
	var kinds []string
	for _, e := range s.Events() {
		kinds = append(kinds, e.Kind+" "+e.AppID)
	}
	if got := strings.Join(kinds, ","); got != edge.EventCrash+" ,"+edge.EventReload+" 42" {
		t.Errorf("delivered events: %s", got)
	}
	p.mu.Lock()
	for _, e := range p.events {
		if e.AppID == "43" {
			t.Errorf("stopped app 43 got event %+v", e)
		}
	}
	p.mu.Unlock()
	if r := p.read("sp"); show(r.PresentValue) != "20" || r.PriorityArray[12] != nil {
		t.Errorf("after crash: %+v, want the priority array lost", r)
	}
}

// TestLinkDownResetAndRecovery: a cut network is silence from the platform:
// past the alive time-out the device writes the reset value on its own
// (seen without a request), logs it, and delivers the log once back; the
// first request restarts the app.
func TestLinkDownResetAndRecovery(t *testing.T) {
	broker := startBroker(t)
	p := startPlatform(t, broker)
	s := startSim(t, broker, p, map[string]*float64{"sp": num(20)})
	if r := p.request(appStart("42", 1, num(19))); r.Status != edge.StatusOK {
		t.Fatalf("app_start: %+v", r)
	}
	p.write("sp", num(23), 13)
	s.SetLink(false)
	deadline := time.Now().Add(5 * time.Second)
	for {
		a, _ := s.PriorityArray("sp")
		if a[12] != nil && *a[12] == 19 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no reset value while off the network: %s", showArray(a))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if apps := s.Apps(); len(apps) != 1 || apps[0].Running {
		t.Errorf("apps after the reset: %+v", apps)
	}
	p.mu.Lock()
	delivered := len(p.events)
	p.mu.Unlock()
	if delivered != 0 {
		t.Errorf("events delivered while off the network: %d", delivered)
	}
	s.SetLink(true)
	p.waitEvent(edge.EventReset, "42", 5*time.Second)
	if r := p.read("sp"); show(r.PresentValue) != "19" {
		t.Errorf("after reconnecting: present %s, want the reset value 19", show(r.PresentValue))
	}
	p.waitEvent(edge.EventRecovered, "42", 2*time.Second)
	p.waitApp("42", true, 2*time.Second)
}

// TestStateFileSurvivesRestart: with a state file, a new process is the
// same device rebooted: it knows the apps, reloads the running one, and
// logs crash and reload.
func TestStateFileSurvivesRestart(t *testing.T) {
	broker := startBroker(t)
	p := startPlatform(t, broker)
	cfg := testConfig(broker, map[string]*float64{"sp": num(20)})
	cfg.StateFile = filepath.Join(t.TempDir(), "device.json")
	_, stop := startSimWith(t, p, cfg)
	if r := p.request(appStart("42", 0, num(19))); r.Status != edge.StatusOK {
		t.Fatalf("app_start: %+v", r)
	}
	if r := p.request(edge.Request{Operation: edge.OpAppStart, App: &edge.App{ID: "43"}}); r.Status != edge.StatusOK {
		t.Fatalf("app_start: %+v", r)
	}
	if r := p.request(edge.Request{Operation: edge.OpAppStop, App: &edge.App{ID: "43"}}); r.Status != edge.StatusOK {
		t.Fatalf("app_stop: %+v", r)
	}
	stop()

	s, _ := startSimWith(t, p, cfg)
	crash := p.waitEvent(edge.EventCrash, "", 5*time.Second)
	if !strings.Contains(crash.Message, "state file") {
		t.Errorf("crash event %+v", crash)
	}
	p.waitEvent(edge.EventReload, "42", 5*time.Second)
	p.waitApp("42", true, 2*time.Second)
	if apps := s.Apps(); len(apps) != 2 || apps[1] != (edge.AppState{ID: "43", Running: false}) {
		t.Errorf("apps after the restart: %+v", apps)
	}
	// The definition came back whole: stopping writes its reset value.
	p.write("sp", num(23), 13)
	p.request(edge.Request{Operation: edge.OpAppStop, App: &edge.App{ID: "42"}})
	if r := p.read("sp"); show(r.PresentValue) != "19" {
		t.Errorf("after app_stop: present %s, want the reset value 19 from the state file", show(r.PresentValue))
	}

	// A damaged state file is refused at start, naming it.
	if err := os.WriteFile(cfg.StateFile, []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), cfg.StateFile) {
		t.Errorf("damaged state file: %v", err)
	}
}
