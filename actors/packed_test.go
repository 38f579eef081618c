package actors

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/openbdp/bdp/pipeline/formula"
)

// TestPackedConfigRoundTrip: unpacking gives exactly what json.Unmarshal
// gave, for every type and kind of range, and for the nil and empty maps a
// stored JSON may hold.
func TestPackedConfigRoundTrip(t *testing.T) {
	for _, raw := range []string{
		`{"pins":{"P1":{"dataPointID":"s1","data_range":{"count":10},"aggregate":"mean","trigger":"every_value"},"P2":{"dataPointID":"s2","data_range":{"time":"5m"},"aggregate":"max","trigger":"every_minute"}},"parameters":{"formula":"(P1 + P2) / 2"}}`,
		`{"pins":{"input":{"dataPointID":"ä/ü","data_range":{"start":"0 0 * * *","end":"0 12 * * *"},"aggregate":"integral","trigger":"every_hour"}},"parameters":{"factorization":-2.5e-300}}`,
		`{"pins":{"relative_humidity":{"dataPointID":"rh","data_range":{"count":-3},"aggregate":"last","trigger":""},"temperature":{"dataPointID":"t","data_range":{}}},"parameters":{"relative_humidity_unit":"percent","temperature_unit":"kelvin","pressure_unit":"hPa"}}`,
		`{"pins":null,"parameters":null}`,
		`{"pins":{},"parameters":{}}`,
		`{}`,
	} {
		var want Config
		if err := json.Unmarshal([]byte(raw), &want); err != nil {
			t.Fatal(err)
		}
		packed, ok := packConfig(want)
		if !ok {
			t.Fatalf("%s: not packed", raw)
		}
		if len(packed) >= len(raw) && len(raw) > 40 {
			t.Errorf("%s: packed into %d bytes, no fewer than the JSON", raw, len(packed))
		}
		got, err := unpackConfig(packed)
		if err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: unpacked %#v, want %#v", raw, got, want)
		}
		// A truncated one is an error, never a wrong configuration.
		for n := 1; n < len(packed); n++ {
			if _, err := unpackConfig(packed[:n]); err == nil {
				t.Errorf("%s: no error for the first %d of %d bytes", raw, n, len(packed))
			}
		}
	}
}

// TestPackedConfigKeepsJSON: a parameter packing does not know keeps the
// stored JSON, from which the calculator is built as before.
func TestPackedConfigKeepsJSON(t *testing.T) {
	raw := `{"pins":{"P1":{"dataPointID":"s1","data_range":{"count":1},"aggregate":"max","trigger":"every_value"}},"parameters":{"formula":"P1","extra":[true]}}`
	var cfg Config
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		t.Fatal(err)
	}
	if _, ok := packConfig(cfg); ok {
		t.Fatal("packed a list parameter")
	}
	def, err := buildDefinition(formula.NewCache(), 1, "v", TypeFormula, json.RawMessage(raw))
	if err != nil {
		t.Fatal(err)
	}
	calc, err := def.NewCalculator()
	if err != nil {
		t.Fatal(err)
	}
	if src := calc.Sources(); len(src) != 1 || src[0].DataPointID != "s1" || src[0].Count != 1 {
		t.Errorf("sources %+v, want s1's latest", src)
	}
}
