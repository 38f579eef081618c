package edgetest

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/openbdp/bdp/edge"
)

// Schemas are the edge protocol's published JSON schemas (edge.Schemas),
// compiled by a maintained JSON Schema (2020-12) validator, date-time
// formats asserted, so that tests hold the decoders, the simulator and
// the test device to what a device maker reads.
type Schemas map[string]*jsonschema.Schema

// CompileSchemas compiles every schema of edge.Schemas; a schema that does
// not compile fails the test.
func CompileSchemas(t testing.TB) Schemas {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	s := Schemas{}
	for _, name := range []string{"request", "response", "alive", "data"} { // one per topic
		url := "https://openbdp.org/schemas/edge/" + name + ".json" // each schema's $id
		raw, err := edge.Schemas.ReadFile("schemas/" + name + ".json")
		if err != nil {
			t.Fatal(err)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			t.Fatalf("schema %s: %v", name, err)
		}
		if err := c.AddResource(url, doc); err != nil {
			t.Fatalf("schema %s: %v", name, err)
		}
		if s[name], err = c.Compile(url); err != nil {
			t.Fatalf("schema %s: %v", name, err)
		}
	}
	return s
}

// Validate checks payload, one JSON value, against the named schema.
func (s Schemas) Validate(name string, payload []byte) error {
	sch, ok := s[name]
	if !ok {
		return fmt.Errorf("no edge schema %q", name)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(payload))
	if err != nil {
		return fmt.Errorf("%s message is not JSON: %w", name, err)
	}
	return sch.Validate(doc)
}
