package bench

import (
	"bytes"
	"testing"
)

// The last line is one JSON object; a figure table's keys come first, in
// the table's order, and key_order itself is not printed.
func TestReportKeyOrder(t *testing.T) {
	for _, c := range []struct {
		name   string
		result map[string]any
		want   string
	}{
		{"sorted", map[string]any{"b": 1, "a": "x"}, `{"a":"x","b":1}`},
		{"table first", map[string]any{"key_order": []string{"z", "missing", "b"}, "a": 1, "b": 2, "z": 3}, `{"z":3,"b":2,"a":1}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := Report(&buf, c.result); err != nil {
				t.Fatal(err)
			}
			if got := buf.String(); got != c.want+"\n" {
				t.Fatalf("got %s, want %s", got, c.want)
			}
		})
	}
}
