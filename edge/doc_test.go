package edge_test

import (
	"os"
	"regexp"
	"testing"

	"github.com/openbdp/bdp/edge/edgetest"
)

// TestDocExamples: every example of docs/edge-protocol.md satisfies its
// schema and the package's strict decoder, and every schema has examples.
func TestDocExamples(t *testing.T) {
	doc, err := os.ReadFile("../docs/edge-protocol.md")
	if err != nil {
		t.Fatal(err)
	}
	schemas := edgetest.CompileSchemas(t)
	seen := map[string]int{}
	for _, m := range regexp.MustCompile("(?s)```json (\\w+)\n(.*?)```").FindAllSubmatch(doc, -1) {
		name, example := string(m[1]), m[2]
		if _, ok := schemas[name]; !ok {
			t.Errorf("example for unknown schema %q", name)
			continue
		}
		seen[name]++
		if err := schemas.Validate(name, example); err != nil {
			t.Errorf("%s example %s: schema: %v", name, example, err)
		}
		if err := decode(name, example); err != nil {
			t.Errorf("%s example %s: decoder: %v", name, example, err)
		}
	}
	for name := range schemas {
		if seen[name] < 2 {
			t.Errorf("schema %s has %d examples in the doc, want at least 2", name, seen[name])
		}
	}
}
