package edge

import (
	"os"
	"regexp"
	"testing"
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
	f.Fuzz(func(t *testing.T, payload []byte) {
		if _, err := DecodeRequest(payload); err == nil {
			if err := ValidateSchema(SchemaRequest, payload); err != nil {
				t.Errorf("request decoded but refused by the schema: %s: %v", payload, err)
			}
		}
		if _, err := DecodeResponse(payload); err == nil {
			if err := ValidateSchema(SchemaResponse, payload); err != nil {
				t.Errorf("response decoded but refused by the schema: %s: %v", payload, err)
			}
		}
		if _, err := DecodeAlive(payload); err == nil {
			if err := ValidateSchema(SchemaAlive, payload); err != nil {
				t.Errorf("alive decoded but refused by the schema: %s: %v", payload, err)
			}
		}
		if _, err := DecodeData(payload); err == nil {
			if err := ValidateSchema(SchemaData, payload); err != nil {
				t.Errorf("data decoded but refused by the schema: %s: %v", payload, err)
			}
		}
	})
}
