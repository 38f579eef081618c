package codec

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

// The edge protocol's decoders, moved from package edge with their tests:
// each case is a message a device or the platform could send, and what
// the decoder says of it.

const ref = "0b6f7d9e-3c1a-4b5e-9f00-1a2b3c4d5e6f"

func TestDecodeEdgeRequest(t *testing.T) {
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
		{"value string", `{"reference":"` + ref + `","operation":"write","dataPointID":"sp","value":"1","priority":13}`, "value: want a number, got a string"},
		{"value NaN", `{"reference":"` + ref + `","operation":"write","dataPointID":"sp","value":NaN,"priority":13}`, "malformed JSON at offset"},
		{"value out of range", `{"reference":"` + ref + `","operation":"write","dataPointID":"sp","value":1e400,"priority":13}`, "value: want a number, got the number 1e400"},
		{"misspelt field", `{"reference":"` + ref + `","operation":"write","dataPointID":"sp","value":1,"prority":13}`, `unknown field "prority"`},
		{"trailing data", `{"reference":"` + ref + `","operation":"ping"} {}`, "trailing data"},
		{"empty", ``, "empty message"},
		{"not json", `hello`, "malformed JSON at offset 1"},
		{"not an object", `[{"reference":"` + ref + `","operation":"ping"}]`, "want an object, got an array"},
		{"null", `null`, "the message is null"},
		{"app_start without app", `{"reference":"` + ref + `","operation":"app_start"}`, "without app"},
		{"app without id", `{"reference":"` + ref + `","operation":"app_start","app":{"algorithm":"schedule"}}`, "app.id missing"},
		{"app_stop without id", `{"reference":"` + ref + `","operation":"app_stop","app":{}}`, "app.id missing"},
		{"app negative timeout", `{"reference":"` + ref + `","operation":"app_start","app":{"id":"1","alive_timeout":-1}}`, "alive_timeout -1"},
		{"app write priority 17", `{"reference":"` + ref + `","operation":"app_start","app":{"id":"1","writes":[{"dataPointID":"sp","priority":17,"reset_value":null}]}}`, "priority 17 outside"},
		{"huge datapoint id", `{"reference":"` + ref + `","operation":"read","dataPointID":"` + strings.Repeat("x", 300) + `"}`, "longer than 255"},
		{"field in another case", `{"reference":"` + ref + `","operation":"write","dataPointID":"sp","value":1,"Priority":13}`, `unknown field "Priority" (names are case-sensitive)`},
		{"nested field in another case", `{"reference":"` + ref + `","operation":"app_start","app":{"id":"1","writes":[{"dataPointID":"sp","prioritY":1,"reset_value":0}]}}`,
			`unknown field "app.writes[0].prioritY" (names are case-sensitive)`},
		{"app not an object", `{"reference":"` + ref + `","operation":"app_start","app":"1"}`, "app: want an object, got a string"},
		{"app unknown field", `{"reference":"` + ref + `","operation":"app_start","app":{"id":"1","timeout":3}}`, `unknown field "app.timeout"`},
		{"null app write", `{"reference":"` + ref + `","operation":"app_start","app":{"id":"1","writes":[null]}}`, "app.writes[0] is null"},
		{"null config", `{"reference":"` + ref + `","operation":"app_start","app":{"id":"1","config":null}}`, "app.config is null"},
		{"priority not an integer", `{"reference":"` + ref + `","operation":"write","dataPointID":"sp","value":1,"priority":1.5}`, "priority: want an integer, got the number 1.5"},
		{"null priority", `{"reference":"` + ref + `","operation":"write","dataPointID":"sp","value":1,"priority":null}`, "priority is null"},
		{"null app", `{"reference":"` + ref + `","operation":"ping","app":null}`, "app is null"},
		{"read with priority", `{"reference":"` + ref + `","operation":"read","dataPointID":"sp","priority":13}`, "read does not take priority"},
		{"read with value", `{"reference":"` + ref + `","operation":"read","dataPointID":"sp","value":3}`, "read does not take value"},
		{"read with null value", `{"reference":"` + ref + `","operation":"read","dataPointID":"sp","value":null}`, ""},
		{"read with a zero field", `{"reference":"` + ref + `","operation":"read","dataPointID":"sp","keep_out_of_service":false}`, "read does not take keep_out_of_service"},
		{"ping with datapoint", `{"reference":"` + ref + `","operation":"ping","dataPointID":"sp"}`, "ping does not take dataPointID"},
		{"app write without reset_value", `{"reference":"` + ref + `","operation":"app_start","app":{"id":"1","writes":[{"dataPointID":"sp","priority":13}],"config":{"x":null}}}`, ""},
		{"oversized", `{"reference":"` + ref + `","operation":"read","dataPointID":"` + strings.Repeat("x", EdgeMaxMessageBytes) + `"}`, "exceeds"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := DecodeEdgeRequest([]byte(c.payload))
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
	if !errors.Is(err, ErrEdgeMessage) {
		t.Errorf("error %v does not wrap ErrEdgeMessage", err)
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

func TestDecodeEdgeResponse(t *testing.T) {
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
		{"present value string", `{"reference":"` + ref + `","status":"ok","present_value":"hot"}`, "present_value: want a number, got a string"},
		{"infinite", `{"reference":"` + ref + `","status":"ok","present_value":-1e999}`, "present_value: want a number, got the number -1e999"},
		{"slot not a number", `{"reference":"` + ref + `","status":"ok","priority_array":[true]}`, "priority_array: want a number, got a boolean"},
		// A newer device's extra fields are accepted and ignored, nested
		// ones too; a known field spelt in another case is not.
		{"unknown field", `{"reference":"` + ref + `","status":"ok","extra":1,"firmware":{"version":"2.1"}}`, ""},
		{"unknown null field", `{"reference":"` + ref + `","status":"ok","duration_ms":null}`, ""},
		{"known field in another case", `{"reference":"` + ref + `","status":"ok","Present_Value":1}`, `unknown field "Present_Value" (names are case-sensitive)`},
		{"null present value", `{"reference":"` + ref + `","status":"ok","present_value":null}`, ""},
		{"null priority array", `{"reference":"` + ref + `","status":"ok","priority_array":null}`, "priority_array is null"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := DecodeEdgeResponse([]byte(c.payload))
			checkErr(t, err, c.wantErr)
			if c.name == "write ok" && (len(r.PriorityArray) != 17 || *r.PriorityArray[16] != 20 || *r.PresentValue != 21.5 || r.OverwrittenValue != nil) {
				t.Errorf("decoded %+v", r)
			}
		})
	}
}

func TestDecodeEdgeAlive(t *testing.T) {
	cases := []struct {
		name, payload, wantErr string
	}{
		{"apps", `{"time":"2026-11-24T11:00:00Z","apps":[{"id":"1","running":true}]}`, ""},
		{"events", `{"time":"2026-11-24T11:00:00Z","apps":[],"events":[{"time":"2026-11-24T10:59:00Z","kind":"crash","message":"simulated"},{"time":"2026-11-24T10:59:30Z","kind":"reload","app_id":"1"}]}`, ""},
		{"no time", `{"apps":[]}`, "without time"},
		{"no apps", `{"time":"2026-11-24T11:00:00Z"}`, "without apps"},
		{"null event", `{"time":"2026-11-24T11:00:00Z","apps":[],"events":[null]}`, "events[0] is null"},
		{"bad time", `{"time":"yesterday","apps":[]}`, "time: want an RFC 3339 date-time"},
		{"event time a number", `{"time":"2026-11-24T11:00:00Z","apps":[],"events":[{"time":5,"kind":"crash"}]}`, "events[0].time: want an RFC 3339 date-time"},
		{"null apps", `{"time":"2026-11-24T11:00:00Z","apps":null}`, "apps is null"},
		{"unknown kind", `{"time":"2026-11-24T11:00:00Z","apps":[],"events":[{"time":"2026-11-24T11:00:00Z","kind":"party","app_id":"1"}]}`, "unknown kind"},
		{"reset without app", `{"time":"2026-11-24T11:00:00Z","apps":[],"events":[{"time":"2026-11-24T11:00:00Z","kind":"reset"}]}`, "app_id missing"},
		{"app without id", `{"time":"2026-11-24T11:00:00Z","apps":[{"running":true}]}`, "apps[0].id missing"},
		{"unknown fields", `{"time":"2026-11-24T11:00:00Z","uptime":12,"apps":[{"id":"1","running":true,"version":"3"}],"events":[{"time":"2026-11-24T10:59:00Z","kind":"crash","code":7}]}`, ""},
		{"known field in another case", `{"time":"2026-11-24T11:00:00Z","apps":[{"id":"1","Running":true}]}`, `unknown field "apps[0].Running" (names are case-sensitive)`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := DecodeEdgeAlive([]byte(c.payload))
			checkErr(t, err, c.wantErr)
		})
	}
}

func TestDecodeEdgeData(t *testing.T) {
	many, _ := json.Marshal(make([]EdgeObservation, EdgeMaxObservations+1))
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
		{"string value", `{"dataPointID":"sp","time":"2026-11-24T11:00:00Z","value":"1"}`, "value: want a number, got a string", 0},
		{"unknown field", `{"dataPointID":"sp","time":"2026-11-24T11:00:00Z","value":1,"unit":"K"}`, `unknown field "unit"`, 0},
		{"field in another case", `[{"dataPointID":"sp","time":"2026-11-24T11:00:00Z","value":1,"Value":2}]`, `unknown field "[0].Value" (names are case-sensitive)`, 0},
		{"null observation", `[null]`, "[0] is null", 0},
		{"second observation bad", `[{"dataPointID":"a","time":"2026-11-24T11:00:00Z","value":1},{"dataPointID":"","time":"2026-11-24T11:00:00Z","value":1}]`, "observation 1: edge: bad message: dataPointID missing", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			obs, err := DecodeEdgeData([]byte(c.payload))
			checkErr(t, err, c.wantErr)
			if len(obs) != c.n {
				t.Errorf("%d observations, want %d", len(obs), c.n)
			}
		})
	}
}

// TestEdgeEncodeDecodeRoundTrip: what the platform and the device encode, they decode.
func TestEdgeEncodeDecodeRoundTrip(t *testing.T) {
	v := 21.5
	req := EdgeRequest{Reference: ref, Operation: EdgeOpWrite, DataPointID: "sp", Value: &v, Priority: 13}
	b, _ := json.Marshal(req)
	if _, err := DecodeEdgeRequest(b); err != nil {
		t.Fatalf("request %s: %v", b, err)
	}
	clear := EdgeRequest{Reference: ref, Operation: EdgeOpWrite, DataPointID: "sp", Priority: 13}
	b, _ = json.Marshal(clear)
	if got, err := DecodeEdgeRequest(b); err != nil || got.Value != nil {
		t.Fatalf("clearing write %s: %+v %v", b, got, err)
	}
	al := EdgeAlive{Time: time.Now().UTC(), Apps: []EdgeAppState{}}
	b, _ = json.Marshal(al)
	if _, err := DecodeEdgeAlive(b); err != nil {
		t.Fatalf("alive %s: %v", b, err)
	}
}

// TestEdgeValidateFieldsOfOperation: a request built in Go is held to the same
// fields per operation as a decoded one.
func TestEdgeValidateFieldsOfOperation(t *testing.T) {
	v := 1.0
	cases := []struct {
		name string
		r    EdgeRequest
		want string
	}{
		{"read with value", EdgeRequest{Reference: ref, Operation: EdgeOpRead, DataPointID: "sp", Value: &v}, "read does not take value"},
		{"ping with app", EdgeRequest{Reference: ref, Operation: EdgeOpPing, App: &EdgeApp{ID: "1"}}, "ping does not take app"},
		{"app_stop with priority", EdgeRequest{Reference: ref, Operation: EdgeOpAppStop, App: &EdgeApp{ID: "1"}, Priority: 3}, "app_stop does not take priority"},
		{"write with app", EdgeRequest{Reference: ref, Operation: EdgeOpWrite, DataPointID: "sp", Priority: 3, App: &EdgeApp{ID: "1"}}, "write does not take app"},
		{"fine read", EdgeRequest{Reference: ref, Operation: EdgeOpRead, DataPointID: "sp"}, ""},
	}
	for _, c := range cases {
		checkErr(t, c.r.Validate(), c.want)
	}
}

// A heartbeat the decoder reads with events is never skipped by the
// listeners' MayHoldEvents shortcut, also with the key escaped.
func FuzzEdgeMayHoldEvents(f *testing.F) {
	for _, s := range []string{
		`{"time":"2026-11-24T11:00:00Z","apps":[],"events":[{"time":"2026-11-24T10:59:00Z","kind":"crash","message":"m"}]}`,
		`{"time":"2026-11-24T11:00:00Z","apps":[],"\u0065vents":[{"time":"2026-11-24T10:59:00Z","kind":"crash","message":"m"}]}`,
		`{"time":"2026-11-24T11:00:00Z","apps":[],"EVENTS":[{"time":"2026-11-24T10:59:00Z","kind":"crash","message":"m"}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		if a, err := DecodeEdgeAlive(payload); err == nil && len(a.Events) > 0 && !EdgeMayHoldEvents(payload) {
			t.Fatalf("%q: %d events, but MayHoldEvents says none", payload, len(a.Events))
		}
	})
}

// TestEdgeTimes: a time is an RFC 3339 date-time exactly, as the schemas'
// format date-time has it, not all that time.Parse takes.
func TestEdgeTimes(t *testing.T) {
	cases := []struct {
		time  string
		valid bool
	}{
		{"2026-11-24T11:00:00Z", true},
		{"2026-11-24T11:00:00.123456789Z", true},
		{"2026-11-24T11:00:00+01:00", true},
		{"2026-11-24T11:00:00.5-23:59", true},
		{"2026-11-24T1:00:00Z", false},       // one-digit hour
		{"2026-11-24T11:00:00,5Z", false},    // comma before the fraction
		{"2026-11-24T11:00:00.Z", false},     // fraction without digits
		{"2026-11-24T11:00:00+24:00", false}, // offset out of range
		{"2026-11-24T11:00:00+01:60", false},
		{"2026-11-24T11:00:00+0100", false},
		{"2026-11-24T11:00:00", false}, // no offset
		{"2026-11-24T11:00:00.5", false},
		{"2026-11-24 11:00:00Z", false},
		{"2026-02-30T11:00:00Z", false}, // no such day
		{"2026-11-24T24:00:00Z", false},
	}
	for _, c := range cases {
		_, err := DecodeEdgeAlive([]byte(`{"time":"` + c.time + `","apps":[]}`))
		if (err == nil) != c.valid {
			t.Errorf("%s: error %v, want valid %v", c.time, err, c.valid)
		}
		if err != nil && !strings.Contains(err.Error(), "time: want an RFC 3339 date-time") {
			t.Errorf("%s: error %v", c.time, err)
		}
	}
}
