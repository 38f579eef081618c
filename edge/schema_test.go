package edge_test

import (
	"testing"

	"github.com/openbdp/bdp/edge"
	"github.com/openbdp/bdp/edge/edgetest"
)

const ref = "0b6f7d9e-3c1a-4b5e-9f00-1a2b3c4d5e6f"

// decode decodes payload with the decoder of the named schema's messages.
func decode(name string, payload []byte) error {
	var err error
	switch name {
	case "request":
		_, err = edge.DecodeRequest(payload)
	case "response":
		_, err = edge.DecodeResponse(payload)
	case "alive":
		_, err = edge.DecodeAlive(payload)
	case "data":
		_, err = edge.DecodeData(payload)
	default:
		panic("no edge schema " + name)
	}
	return err
}

// TestSchemasAgree: the published schemas and the decoders accept and
// refuse the same messages, so a device maker checking against the
// schemas finds the mistakes bdp would refuse. (The decoders refuse a few
// things a schema cannot say, a field name in another case where unknown
// fields are ignored; they never accept more: FuzzDecodersAgreeWithSchemas.)
func TestSchemasAgree(t *testing.T) {
	schemas := edgetest.CompileSchemas(t)
	cases := []struct {
		schema, payload string
		valid           bool
	}{
		{"request", `{"reference":"` + ref + `","operation":"write","dataPointID":"sp","value":null,"priority":13}`, true},
		{"request", `{"reference":"` + ref + `","operation":"app_start","app":{"id":"1","writes":[{"dataPointID":"sp","priority":13}],"config":{"x":null}}}`, true},
		{"request", `{"reference":"` + ref + `","operation":"explode"}`, false},
		{"request", `{"reference":"` + ref + `","operation":"write","dataPointID":"sp","value":1,"priority":17}`, false},
		{"request", `{"reference":"` + ref + `","operation":"write","dataPointID":"sp","priority":13}`, false},
		{"request", `{"reference":"12","operation":"ping"}`, false},
		{"request", `{"reference":"` + ref + `","operation":"ping","prority":1}`, false},
		{"request", `{"reference":"` + ref + `","operation":"read","dataPointID":"sp","priority":13}`, false},
		{"request", `{"reference":"` + ref + `","operation":"app_start","app":{"id":"1","writes":[{"dataPointID":"sp","prioritY":1}]}}`, false},
		{"response", `{"reference":"` + ref + `","status":"ok","firmware":{"version":"2.1"}}`, true},
		{"response", `{"reference":"` + ref + `","status":"ok","priority_array":[1,2]}`, false},
		{"response", `{"reference":"` + ref + `","status":"error"}`, false},
		{"response", `{"reference":"` + ref + `","status":"ok","present_value":"x"}`, false},
		{"alive", `{"time":"2026-11-24T11:00:00Z","apps":[{"id":"1","running":true}],"uptime":12}`, true},
		{"alive", `{"time":"soon","apps":[]}`, false},
		{"alive", `{"time":"2026-11-24T11:00:00Z","apps":[],"events":[{"time":"2026-11-24T11:00:00Z","kind":"party"}]}`, false},
		{"alive", `{"time":"2026-11-24T11:00:00Z"}`, false},
		{"data", `[{"dataPointID":"a","time":"2026-11-24T11:00:00Z","value":-2.5}]`, true},
		{"data", `{"dataPointID":"a","time":"2026-11-24T11:00:00Z"}`, false},
		{"data", `{"dataPointID":"a","time":"2026-11-24T11:00:00Z","value":1,"unit":"K"}`, false},
		{"data", `[]`, false},
		{"data", `not json`, false},
	}
	for _, c := range cases {
		schemaErr := schemas.Validate(c.schema, []byte(c.payload))
		decodeErr := decode(c.schema, []byte(c.payload))
		if (schemaErr == nil) != c.valid || (decodeErr == nil) != c.valid {
			t.Errorf("%s %s: valid %v, but schema: %v, decoder: %v", c.schema, c.payload, c.valid, schemaErr, decodeErr)
		}
	}
	if err := schemas.Validate("nonsense", []byte(`{}`)); err == nil {
		t.Error("an unknown schema validated")
	}
}
