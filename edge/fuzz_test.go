package edge_test

import (
	"os"
	"regexp"
	"testing"

	"github.com/openbdp/bdp/edge/edgetest"
)

// FuzzDecodersAgreeWithSchemas: the strict decoders never panic, and what
// they accept their schema accepts too, so a device maker validating
// against the schemas and bdp decoding agree.
func FuzzDecodersAgreeWithSchemas(f *testing.F) {
	doc, err := os.ReadFile("../docs/edge-protocol.md")
	if err != nil {
		f.Fatal(err)
	}
	for _, m := range regexp.MustCompile("(?s)```json (\\w+)\n(.*?)```").FindAllSubmatch(doc, -1) {
		f.Add(m[2])
	}
	schemas := edgetest.CompileSchemas(f)
	f.Fuzz(func(t *testing.T, payload []byte) {
		for _, name := range []string{"request", "response", "alive", "data"} {
			if decode(name, payload) == nil {
				if err := schemas.Validate(name, payload); err != nil {
					t.Errorf("%s decoded but refused by the schema: %s: %v", name, payload, err)
				}
			}
		}
	})
}
