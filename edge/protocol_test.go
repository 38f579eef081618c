package edge

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

const ref = "0b6f7d9e-3c1a-4b5e-9f00-1a2b3c4d5e6f"

func TestTopics(t *testing.T) {
	for got, want := range map[string]string{
		RequestTopic(7):  "edge/7/request",
		ResponseTopic(7): "edge/7/response",
		AliveTopic(7):    "edge/7/alive",
		DataTopic(7):     "edge/7/data",
	} {
		if got != want {
			t.Errorf("topic %q, want %q", got, want)
		}
	}
}

func TestDecodeRequest(t *testing.T) {
	cases := []struct {
		name    string
		payload string
		wantErr string // "" means valid
	}{
		{"write", `{"reference":"` + ref + `","operation":"write","dataPointID":"room_temp_sp","value":21.5,"priority":13}`, ""},
		{"write null clears", `{"reference":"` + ref + `","operation":"write","dataPointID":"sp","value":null,"priority":8}`, ""},
		{"write keep out of service", `{"reference":"` + ref + `","operation":"write","dataPointID":"sp","value":1,"priority":16,"keep_out_of_service":true}`, ""},
		{"read", `{"reference":"` + ref + `","operation":"read","dataPointID":"sp"}`, ""},
		{"ping", `{"reference":"` + ref + `","operation":"ping"}`, ""},
		{"app_start", `{"reference":"` + ref + `","operation":"app_start","app":{"id":"12","algorithm":"schedule","writes":[{"dataPointID":"sp","priority":13,"reset_value":null}],"alive_timeout":300,"config":{"a":1}}}`, ""},
		{"app_stop", `{"reference":"` + ref + `","operation":"app_stop","app":{"id":"12"}}`, ""},
		{"app_config", `{"reference":"` + ref + `","operation":"app_config","app":{"id":"12","writes":[{"dataPointID":"sp","priority":13,"reset_value":19}],"alive_timeout":60}}`, ""},
		{"unknown operation", `{"reference":"` + ref + `","operation":"explode"}`, "unknown operation"},
		{"missing operation", `{"reference":"` + ref + `"}`, "operation missing"},
		{"bad reference", `{"reference":"12","operation":"ping"}`, "not a uuid"},
		{"missing reference", `{"operation":"ping"}`, "not a uuid"},
		{"priority 0", `{"reference":"` + ref + `","operation":"write","dataPointID":"sp","value":1,"priority":0}`, "priority 0 outside"},
		{"priority 17", `{"reference":"` + ref + `","operation":"write","dataPointID":"sp","value":1,"priority":17}`, "priority 17 outside"},
		{"write without value", `{"reference":"` + ref + `","operation":"write","dataPointID":"sp","priority":13}`, "without value"},
		{"write without datapoint", `{"reference":"` + ref + `","operation":"write","value":1,"priority":13}`, "dataPointID missing"},
		{"value string", `{"reference":"` + ref + `","operation":"write","dataPointID":"sp","value":"1","priority":13}`, "cannot unmarshal"},
		{"value NaN", `{"reference":"` + ref + `","operation":"write","dataPointID":"sp","value":NaN,"priority":13}`, "invalid character"},
		{"value out of range", `{"reference":"` + ref + `","operation":"write","dataPointID":"sp","value":1e400,"priority":13}`, "cannot unmarshal number 1e400"},
		{"misspelt field", `{"reference":"` + ref + `","operation":"write","dataPointID":"sp","value":1,"prority":13}`, "unknown field"},
		{"trailing data", `{"reference":"` + ref + `","operation":"ping"} {}`, "trailing data"},
		{"empty", ``, "empty message"},
		{"not json", `hello`, "invalid character"},
		{"app_start without app", `{"reference":"` + ref + `","operation":"app_start"}`, "without app"},
		{"app without id", `{"reference":"` + ref + `","operation":"app_start","app":{"algorithm":"schedule"}}`, "app.id missing"},
		{"app_stop without id", `{"reference":"` + ref + `","operation":"app_stop","app":{}}`, "app.id missing"},
		{"app negative timeout", `{"reference":"` + ref + `","operation":"app_start","app":{"id":"1","alive_timeout":-1}}`, "alive_timeout -1"},
		{"app write priority 17", `{"reference":"` + ref + `","operation":"app_start","app":{"id":"1","writes":[{"dataPointID":"sp","priority":17,"reset_value":null}]}}`, "priority 17 outside"},
		{"huge datapoint id", `{"reference":"` + ref + `","operation":"read","dataPointID":"` + strings.Repeat("x", 300) + `"}`, "longer than 255"},
		{"field in another case", `{"reference":"` + ref + `","operation":"write","dataPointID":"sp","value":1,"Priority":13}`, "names are case-sensitive"},
		{"null priority", `{"reference":"` + ref + `","operation":"write","dataPointID":"sp","value":1,"priority":null}`, "priority is null"},
		{"null app", `{"reference":"` + ref + `","operation":"ping","app":null}`, "app is null"},
		{"read with priority", `{"reference":"` + ref + `","operation":"read","dataPointID":"sp","priority":13}`, "read does not take priority"},
		{"read with value", `{"reference":"` + ref + `","operation":"read","dataPointID":"sp","value":3}`, "read does not take value"},
		{"ping with datapoint", `{"reference":"` + ref + `","operation":"ping","dataPointID":"sp"}`, "ping does not take dataPointID"},
		{"app write without reset_value", `{"reference":"` + ref + `","operation":"app_start","app":{"id":"1","writes":[{"dataPointID":"sp","priority":13}],"config":{"x":null}}}`, ""},
		{"oversized", `{"reference":"` + ref + `","operation":"read","dataPointID":"` + strings.Repeat("x", MaxMessageBytes) + `"}`, "exceeds"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := DecodeRequest([]byte(c.payload))
			checkErr(t, err, c.wantErr)
		})
	}
}

func checkErr(t *testing.T, err error, want string) {
	t.Helper()
	if want == "" {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("no error, want %q", want)
	}
	if !errors.Is(err, ErrMessage) {
		t.Errorf("error %v does not wrap ErrMessage", err)
	}
	if !strings.Contains(err.Error(), want) {
		t.Errorf("error %q, want it to contain %q", err, want)
	}
	if len(err.Error()) > 400 {
		t.Errorf("error text of %d bytes echoes the input", len(err.Error()))
	}
}

func slots(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = "null"
	}
	parts[len(parts)-1] = "20"
	return "[" + strings.Join(parts, ",") + "]"
}

func TestDecodeResponse(t *testing.T) {
	cases := []struct {
		name, payload, wantErr string
	}{
		{"write ok", `{"reference":"` + ref + `","status":"ok","priority_array":` + slots(17) + `,"present_value":21.5,"overwritten_value":null}`, ""},
		{"error", `{"reference":"` + ref + `","status":"error","error":"unknown datapoint sp"}`, ""},
		{"ping ok", `{"reference":"` + ref + `","status":"ok"}`, ""},
		{"16 slots", `{"reference":"` + ref + `","status":"ok","priority_array":` + slots(16) + `}`, "16 slots, want 17"},
		{"18 slots", `{"reference":"` + ref + `","status":"ok","priority_array":` + slots(18) + `}`, "18 slots, want 17"},
		{"unknown status", `{"reference":"` + ref + `","status":"maybe"}`, "unknown status"},
		{"error without text", `{"reference":"` + ref + `","status":"error"}`, "without error text"},
		{"bad reference", `{"reference":"x","status":"ok"}`, "not a uuid"},
		{"present value string", `{"reference":"` + ref + `","status":"ok","present_value":"hot"}`, "cannot unmarshal"},
		{"infinite", `{"reference":"` + ref + `","status":"ok","present_value":-1e999}`, "cannot unmarshal number"},
		// A newer device's extra fields are accepted and ignored, nested
		// ones too; a known field spelt in another case is not.
		{"unknown field", `{"reference":"` + ref + `","status":"ok","extra":1,"firmware":{"version":"2.1"}}`, ""},
		{"unknown null field", `{"reference":"` + ref + `","status":"ok","duration_ms":null}`, ""},
		{"known field in another case", `{"reference":"` + ref + `","status":"ok","Present_Value":1}`, "unknown field"},
		{"null present value", `{"reference":"` + ref + `","status":"ok","present_value":null}`, ""},
		{"null priority array", `{"reference":"` + ref + `","status":"ok","priority_array":null}`, "priority_array is null"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := DecodeResponse([]byte(c.payload))
			checkErr(t, err, c.wantErr)
			if c.name == "write ok" && (len(r.PriorityArray) != 17 || *r.PriorityArray[16] != 20 || *r.PresentValue != 21.5 || r.OverwrittenValue != nil) {
				t.Errorf("decoded %+v", r)
			}
		})
	}
}

func TestDecodeAlive(t *testing.T) {
	cases := []struct {
		name, payload, wantErr string
	}{
		{"apps", `{"time":"2026-11-24T11:00:00Z","apps":[{"id":"1","running":true}]}`, ""},
		{"events", `{"time":"2026-11-24T11:00:00Z","apps":[],"events":[{"time":"2026-11-24T10:59:00Z","kind":"crash","message":"simulated"},{"time":"2026-11-24T10:59:30Z","kind":"reload","app_id":"1"}]}`, ""},
		{"no time", `{"apps":[]}`, "without time"},
		{"no apps", `{"time":"2026-11-24T11:00:00Z"}`, "without apps"},
		{"null event", `{"time":"2026-11-24T11:00:00Z","apps":[],"events":[null]}`, "events.[0] is null"},
		{"bad time", `{"time":"yesterday","apps":[]}`, "cannot parse"},
		{"unknown kind", `{"time":"2026-11-24T11:00:00Z","apps":[],"events":[{"time":"2026-11-24T11:00:00Z","kind":"party","app_id":"1"}]}`, "unknown kind"},
		{"reset without app", `{"time":"2026-11-24T11:00:00Z","apps":[],"events":[{"time":"2026-11-24T11:00:00Z","kind":"reset"}]}`, "app_id missing"},
		{"app without id", `{"time":"2026-11-24T11:00:00Z","apps":[{"running":true}]}`, "apps[0].id missing"},
		{"unknown fields", `{"time":"2026-11-24T11:00:00Z","uptime":12,"apps":[{"id":"1","running":true,"version":"3"}],"events":[{"time":"2026-11-24T10:59:00Z","kind":"crash","code":7}]}`, ""},
		{"known field in another case", `{"time":"2026-11-24T11:00:00Z","apps":[{"id":"1","Running":true}]}`, "unknown field"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := DecodeAlive([]byte(c.payload))
			checkErr(t, err, c.wantErr)
		})
	}
}

func TestDecodeData(t *testing.T) {
	many, _ := json.Marshal(make([]Observation, MaxObservations+1))
	cases := []struct {
		name, payload, wantErr string
		n                      int
	}{
		{"one", `{"dataPointID":"sp","time":"2026-11-24T11:00:00Z","value":21}`, "", 1},
		{"array", `[{"dataPointID":"a","time":"2026-11-24T11:00:00Z","value":1},{"dataPointID":"b","time":"2026-11-24T11:00:00Z","value":-2.5}]`, "", 2},
		{"missing value", `{"dataPointID":"sp","time":"2026-11-24T11:00:00Z"}`, "without a numeric value", 0},
		{"null value", `[{"dataPointID":"sp","time":"2026-11-24T11:00:00Z","value":null}]`, "without a numeric value", 0},
		{"missing id", `{"time":"2026-11-24T11:00:00Z","value":1}`, "dataPointID missing", 0},
		{"missing time", `{"dataPointID":"sp","value":1}`, "without time", 0},
		{"empty array", `[]`, "empty observation array", 0},
		{"too many", string(many), "more than 1000", 0},
		{"string value", `{"dataPointID":"sp","time":"2026-11-24T11:00:00Z","value":"1"}`, "cannot unmarshal", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			obs, err := DecodeData([]byte(c.payload))
			checkErr(t, err, c.wantErr)
			if len(obs) != c.n {
				t.Errorf("%d observations, want %d", len(obs), c.n)
			}
		})
	}
}

// TestEncodeDecodeRoundTrip: what the platform and the device encode, they decode.
func TestEncodeDecodeRoundTrip(t *testing.T) {
	v := 21.5
	req := Request{Reference: ref, Operation: OpWrite, DataPointID: "sp", Value: &v, Priority: 13}
	b, _ := json.Marshal(req)
	if _, err := DecodeRequest(b); err != nil {
		t.Fatalf("request %s: %v", b, err)
	}
	clear := Request{Reference: ref, Operation: OpWrite, DataPointID: "sp", Priority: 13}
	b, _ = json.Marshal(clear)
	if got, err := DecodeRequest(b); err != nil || got.Value != nil {
		t.Fatalf("clearing write %s: %+v %v", b, got, err)
	}
	al := Alive{Time: time.Now().UTC(), Apps: []AppState{}}
	b, _ = json.Marshal(al)
	if _, err := DecodeAlive(b); err != nil {
		t.Fatalf("alive %s: %v", b, err)
	}
}

// TestValidateFieldsOfOperation: a Request built in Go is held to the same
// fields per operation as a decoded one.
func TestValidateFieldsOfOperation(t *testing.T) {
	v := 1.0
	cases := []struct {
		name string
		r    Request
		want string
	}{
		{"read with value", Request{Reference: ref, Operation: OpRead, DataPointID: "sp", Value: &v}, "read does not take value"},
		{"ping with app", Request{Reference: ref, Operation: OpPing, App: &App{ID: "1"}}, "ping does not take app"},
		{"app_stop with priority", Request{Reference: ref, Operation: OpAppStop, App: &App{ID: "1"}, Priority: 3}, "app_stop does not take priority"},
		{"write with app", Request{Reference: ref, Operation: OpWrite, DataPointID: "sp", Priority: 3, App: &App{ID: "1"}}, "write does not take app"},
		{"fine read", Request{Reference: ref, Operation: OpRead, DataPointID: "sp"}, ""},
	}
	for _, c := range cases {
		checkErr(t, c.r.Validate(), c.want)
	}
}

// A heartbeat the decoder reads with events is never skipped by the
// listeners' MayHoldEvents shortcut, also with the key escaped.
func FuzzMayHoldEvents(f *testing.F) {
	for _, s := range []string{
		`{"time":"2026-11-24T11:00:00Z","apps":[],"events":[{"time":"2026-11-24T10:59:00Z","kind":"crash","message":"m"}]}`,
		`{"time":"2026-11-24T11:00:00Z","apps":[],"\u0065vents":[{"time":"2026-11-24T10:59:00Z","kind":"crash","message":"m"}]}`,
		`{"time":"2026-11-24T11:00:00Z","apps":[],"EVENTS":[{"time":"2026-11-24T10:59:00Z","kind":"crash","message":"m"}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		if a, err := DecodeAlive(payload); err == nil && len(a.Events) > 0 && !MayHoldEvents(payload) {
			t.Fatalf("%q: %d events, but MayHoldEvents says none", payload, len(a.Events))
		}
	})
}
