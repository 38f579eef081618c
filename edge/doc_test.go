package edge

import (
	"os"
	"regexp"
	"testing"
)

// TestDocExamples: every example of docs/edge-protocol.md satisfies its
// schema and the package's strict decoder, and every schema has examples.
func TestDocExamples(t *testing.T) {
	doc, err := os.ReadFile("../docs/edge-protocol.md")
	if err != nil {
		t.Fatal(err)
	}
	decoders := map[string]func([]byte) error{
		SchemaRequest:  func(b []byte) error { _, err := DecodeRequest(b); return err },
		SchemaResponse: func(b []byte) error { _, err := DecodeResponse(b); return err },
		SchemaAlive:    func(b []byte) error { _, err := DecodeAlive(b); return err },
		SchemaData:     func(b []byte) error { _, err := DecodeData(b); return err },
	}
	seen := map[string]int{}
	for _, m := range regexp.MustCompile("(?s)```json (\\w+)\n(.*?)```").FindAllSubmatch(doc, -1) {
		name, example := string(m[1]), m[2]
		decode, ok := decoders[name]
		if !ok {
			t.Errorf("example for unknown schema %q", name)
			continue
		}
		seen[name]++
		if err := ValidateSchema(name, example); err != nil {
			t.Errorf("%s example %s: schema: %v", name, example, err)
		}
		if err := decode(example); err != nil {
			t.Errorf("%s example %s: decoder: %v", name, example, err)
		}
	}
	for name := range decoders {
		if seen[name] < 2 {
			t.Errorf("schema %s has %d examples in the doc, want at least 2", name, seen[name])
		}
	}
}
