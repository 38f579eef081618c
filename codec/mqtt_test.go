package codec

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestTopicIDEscaping(t *testing.T) {
	cases := []struct{ id, level string }{
		{"plain", "plain"},
		{"100%", "100%25"},
		{"a/b", "a%2Fb"},
		{"a+b", "a%2Bb"},
		{"#1", "%231"},
		{"nul\x00x", "nul%00x"},
		{"%2F", "%252F"}, // an id that looks escaped stays itself
		{"Raum 1.OG/Temp+#%", "Raum 1.OG%2FTemp%2B%23%25"},
		{"ümlaut→ok", "ümlaut→ok"},
	}
	for _, c := range cases {
		if got := EscapeTopicID(c.id); got != c.level {
			t.Errorf("EscapeTopicID(%q) = %q, want %q", c.id, got, c.level)
		}
		back, err := UnescapeTopicID(c.level)
		if err != nil || back != c.id {
			t.Errorf("UnescapeTopicID(%q) = %q, %v; want %q", c.level, back, err, c.id)
		}
		pid, id, err := ParseDatapointTopic(DatapointTopic(42, c.id))
		if err != nil || pid != 42 || id != c.id {
			t.Errorf("topic round trip of %q: %d %q %v", c.id, pid, id, err)
		}
	}
}

func TestTopicParseRefuses(t *testing.T) {
	for _, topic := range []string{
		"project/1/datapoint/",           // no id
		"project/01/datapoint/x",         // non-canonical id
		"project/-1/datapoint/x",         // negative
		"project/x/datapoint/x",          // not a number
		"project/1/datapoint/a/b",        // unescaped slash
		"project/1/datapoint/a%2",        // short escape
		"project/1/datapoint/a%41",       // not one of the five escapes
		"project/1/datapoint/a%zz",       // not hex
		"edge/1/datapoint/x",             // other tree
		"project/1/setpoint/x",           // other kind
		"project/99999999999999999999/x", // overflow
	} {
		if _, _, err := ParseDatapointTopic(topic); err == nil {
			t.Errorf("ParseDatapointTopic(%q) accepted", topic)
		}
	}
	if _, _, err := ParseDatapointTopic("project/1/datapoint/a%2f%2B"); err != nil {
		t.Errorf("lowercase hex refused: %v", err)
	}
}

func TestDecodeObservations(t *testing.T) {
	ts := time.Date(2026, 11, 24, 6, 0, 0, 500_000_000, time.UTC)
	good := []struct {
		payload string
		want    []TimeValue
	}{
		{`{"time":"2026-11-24T06:00:00.5Z","value":1.5}`, []TimeValue{{ts, 1.5}}},
		{` {"value":-2,"time":"2026-11-24t07:00:00.5+01:00"} `, []TimeValue{{ts, -2}}},
		{`[{"time":"2026-11-24T06:00:00.5Z","value":1e3},{"time":"2026-11-24T06:00:00.5Z","value":0}]`, []TimeValue{{ts, 1000}, {ts, 0}}},
	}
	for _, g := range good {
		got, err := DecodeObservations([]byte(g.payload))
		if err != nil {
			t.Errorf("%s: %v", g.payload, err)
			continue
		}
		if len(got) != len(g.want) {
			t.Errorf("%s: %d observations, want %d", g.payload, len(got), len(g.want))
			continue
		}
		for i := range got {
			if !got[i].Time.Equal(g.want[i].Time) || got[i].Value != g.want[i].Value {
				t.Errorf("%s [%d]: %v, want %v", g.payload, i, got[i], g.want[i])
			}
		}
	}
	huge := "[" + strings.Repeat(`{"time":"2026-11-24T06:00:00Z","value":1},`, MaxObservationsPerMessage) + `{"time":"2026-11-24T06:00:00Z","value":1}]`
	bad := []struct{ payload, reason string }{
		{``, "empty"},
		{`null`, "object or array"},
		{`42`, "object or array"},
		{`{"time":"2026-11-24T06:00:00Z"}`, `needs "time" and "value"`},
		{`{"value":1}`, `needs "time" and "value"`},
		{`{"time":"yesterday","value":1}`, "not RFC 3339"},
		{`{"time":"2026-11-24T06:00:00Z","value":"1"}`, "JSON number"},
		{`{"time":"2026-11-24T06:00:00Z","value":true}`, "JSON number"},
		{`{"time":"2026-11-24T06:00:00Z","value":1e999}`, "range"},
		{`{"time":"2026-11-24T06:00:00Z","value":1,"unit":"K"}`, "unknown field"},
		{`{"time":"2026-11-24T06:00:00Z","value":1}{}`, "after its JSON"},
		{`{"time":"2026-11-24T06:00:00Z","value":1`, "unexpected end"},
		{`[]`, "empty array"},
		{`[{"time":"2026-11-24T06:00:00Z","value":1},{"time":"x","value":1}]`, "observation 1"},
		{huge, "at most 10000"},
	}
	for _, b := range bad {
		_, err := DecodeObservations([]byte(b.payload))
		if err == nil || !strings.Contains(err.Error(), b.reason) {
			t.Errorf("%.60s: error %v, want one saying %q", b.payload, err, b.reason)
		}
		if err != nil && len(err.Error()) > 200 {
			t.Errorf("%.60s: error of %d bytes", b.payload, len(err.Error()))
		}
	}
}

func TestAppendObservationJSON(t *testing.T) {
	at := time.Date(2026, 11, 24, 7, 30, 0, 123_000_000, time.FixedZone("CET", 3600))
	got := string(AppendObservationJSON(nil, at, 21.5))
	if want := `{"time":"2026-11-24T06:30:00.123Z","value":21.5}`; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
	back, err := DecodeObservations([]byte(got))
	if err != nil || !back[0].Time.Equal(at) || back[0].Value != 21.5 {
		t.Fatalf("round trip: %v %v", back, err)
	}
}

// FuzzDatapointTopic: every valid id has one topic, which parses back to it.
func FuzzDatapointTopic(f *testing.F) {
	for _, s := range []string{"a", "a/b", "%", "%25", "+#", "\x00", "ä/ö"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		if id == "" {
			return
		}
		topic := DatapointTopic(7, id)
		level := topic[len("project/7/datapoint/"):]
		if strings.ContainsAny(level, "/+#\x00") {
			t.Fatalf("escaped level %q holds a reserved byte", level)
		}
		pid, back, err := ParseDatapointTopic(topic)
		if err != nil || pid != 7 || back != id {
			t.Fatalf("%q → %q → %q, %v", id, topic, back, err)
		}
	})
}

// FuzzDecodeObservations: the decoder never panics, and what it accepts
// encoding/json reads the same way.
func FuzzDecodeObservations(f *testing.F) {
	for _, s := range []string{`{"time":"2026-11-24T06:00:00Z","value":1}`, `[{"time":"2026-11-24T06:00:00Z","value":-0.5e2}]`, `[`, `{"time":1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		got, err := DecodeObservations(payload)
		if err != nil {
			return
		}
		var any interface{}
		if json.Unmarshal(payload, &any) != nil {
			t.Fatalf("accepted invalid JSON %q", payload)
		}
		for _, tv := range got {
			again, err := DecodeObservations(AppendObservationJSON(nil, tv.Time, tv.Value))
			if err != nil || !again[0].Time.Equal(tv.Time) || again[0].Value != tv.Value {
				t.Fatalf("re-encoding %v: %v %v", tv, again, err)
			}
		}
	})
}
