package codec

import (
	"strings"
	"testing"
	"time"
)

// Influx line protocol as aedifion's MQTT tutorial publishes it, and the
// forms around it, decode to the topic's observations; JSON still goes
// to the JSON decoder.
func TestDecodePayloadLineProtocol(t *testing.T) {
	now := time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)
	at := func(ns int64) time.Time { return time.Unix(0, ns).UTC() }
	cases := []struct {
		name, dp, payload string
		want              []TimeValue
	}{
		{"aedifion's tutorial", "dp", "dp value=0 1600000000000000000", []TimeValue{{at(1600000000000000000), 0}}},
		{"many lines, CRLF, comments, blank lines", "dp",
			"# gateway 7\r\ndp value=1.5 1600000000000000000\r\n\r\ndp value=-2e3 1600000001000000000\ndp value=7i 1600000002000000000\n",
			[]TimeValue{{at(1600000000000000000), 1.5}, {at(1600000001000000000), -2000}, {at(1600000002000000000), 7}}},
		{"tags are accepted and not kept", "dp", "dp,site=aachen,unit=degC value=21.5 1600000000000000000",
			[]TimeValue{{at(1600000000000000000), 21.5}}},
		{"no timestamp: now", "dp", "dp value=3u", []TimeValue{{now, 3}}},
		{"escaped measurement", "Raum 1,OG\\x", `Raum\ 1\,OG\\x value=1 1600000000000000000`,
			[]TimeValue{{at(1600000000000000000), 1}}},
		{"JSON object", "dp", ` {"time":"2026-03-02T00:00:00Z","value":1}`,
			[]TimeValue{{time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC), 1}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := DecodePayload([]byte(c.payload), c.dp, now)
			if err != nil {
				t.Fatalf("DecodePayload: %v", err)
			}
			if len(got) != len(c.want) {
				t.Fatalf("got %v, want %v", got, c.want)
			}
			for i := range got {
				if !got[i].Time.Equal(c.want[i].Time) || got[i].Value != c.want[i].Value {
					t.Errorf("observation %d: %v, want %v", i, got[i], c.want[i])
				}
			}
		})
	}
}

// What is neither JSON nor line protocol of the topic's datapoint is
// refused with the line and the reason, and never echoes the payload.
func TestDecodePayloadRefusesNeither(t *testing.T) {
	secret := "s3cr3t-" + strings.Repeat("x", 200)
	cases := []struct{ name, payload, want string }{
		{"plain text", "hello " + secret, "line 1"},
		{"another datapoint's measurement", secret + " value=1 1600000000000000000", "not the dataPointID of the topic"},
		{"second line bad", "dp value=1 1\ndp value=" + secret, "line 2"},
		{"string value", `dp value="` + secret + `"`, "must be a number"},
		{"boolean value", "dp value=true", "must be a number"},
		{"NaN", "dp value=NaN", "must be a number"},
		{"other field", "dp temperature=1", "the only field is value"},
		{"value twice", "dp value=1,value=2", "given twice"},
		{"no field", "dp", "no field"},
		{"bad timestamp", "dp value=1 2026-03-02T00:00:00Z", "timestamp"},
		{"tag without value", "dp,site value=1", "key=value"},
		{"empty", " \n# only a comment\n", "empty"},
		{"too many lines", strings.Repeat("dp value=1 1\n", MaxObservationsPerMessage+1), "at most"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := DecodePayload([]byte(c.payload), "dp", time.Now())
			if err == nil {
				t.Fatal("accepted")
			}
			if !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "neither JSON") {
				t.Errorf("error %q, want it to say %q", err, c.want)
			}
			if strings.Contains(err.Error(), "s3cr3t") || len(err.Error()) > 300 {
				t.Errorf("error echoes the payload: %q", err)
			}
		})
	}
}
