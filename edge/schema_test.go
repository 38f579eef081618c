package edge

import (
	"strings"
	"testing"
)

// TestSchemasRefuse: the schemas refuse what the decoders refuse, so a
// device maker checking against them finds the same mistakes.
func TestSchemasRefuse(t *testing.T) {
	cases := []struct{ schema, payload, want string }{
		{SchemaRequest, `{"reference":"` + ref + `","operation":"explode"}`, "oneOf"},
		{SchemaRequest, `{"reference":"` + ref + `","operation":"write","dataPointID":"sp","value":1,"priority":17}`, "oneOf"},
		{SchemaRequest, `{"reference":"` + ref + `","operation":"write","dataPointID":"sp","priority":13}`, "oneOf"},
		{SchemaRequest, `{"reference":"12","operation":"ping"}`, "oneOf"},
		{SchemaRequest, `{"reference":"` + ref + `","operation":"ping","prority":1}`, "oneOf"},
		{SchemaResponse, `{"reference":"` + ref + `","status":"ok","priority_array":[1,2]}`, "2 items, want at least 17"},
		{SchemaResponse, `{"reference":"` + ref + `","status":"error"}`, "oneOf"},
		{SchemaResponse, `{"reference":"` + ref + `","status":"ok","present_value":"x"}`, "not of type"},
		{SchemaAlive, `{"time":"soon","apps":[]}`, "date-time"},
		{SchemaAlive, `{"time":"2026-11-24T11:00:00Z","apps":[],"events":[{"time":"2026-11-24T11:00:00Z","kind":"party"}]}`, "not one of"},
		{SchemaAlive, `{"time":"2026-11-24T11:00:00Z"}`, `"apps" missing`},
		{SchemaData, `{"dataPointID":"a","time":"2026-11-24T11:00:00Z"}`, "oneOf"},
		{SchemaData, `[]`, "oneOf"},
		{SchemaData, `not json`, "not JSON"},
	}
	for _, c := range cases {
		err := ValidateSchema(c.schema, []byte(c.payload))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %s: error %v, want it to contain %q", c.schema, c.payload, err, c.want)
		}
	}
	if err := ValidateSchema("nonsense", []byte(`{}`)); err == nil {
		t.Error("an unknown schema validated")
	}
}
