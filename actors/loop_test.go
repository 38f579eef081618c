package actors

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

func TestRefuseLoop(t *testing.T) {
	// formula is the stored configuration of a formula over the sources.
	formula := func(sources ...string) json.RawMessage {
		pins := map[string]any{}
		names := make([]string, len(sources))
		for i, s := range sources {
			names[i] = fmt.Sprintf("P%d", i+1)
			pins[names[i]] = map[string]any{"dataPointID": s}
		}
		body, err := json.Marshal(map[string]any{"pins": pins, "parameters": map[string]any{"formula": strings.Join(names, " + ")}})
		if err != nil {
			t.Fatal(err)
		}
		return marshalledConfig(t, TypeFormula, string(body))
	}
	cases := []struct {
		name    string
		sources []string // of "out", the configuration checked
		others  map[string]json.RawMessage
		loop    string // the path the error names; "" for none
	}{
		{name: "sources only", sources: []string{"a", "b"}},
		{name: "its own output", sources: []string{"a", "out"}, loop: "out <- out"},
		{name: "through another", sources: []string{"mid"},
			others: map[string]json.RawMessage{"mid": formula("out")}, loop: "out <- mid <- out"},
		{name: "a diamond without a loop", sources: []string{"l", "r"},
			others: map[string]json.RawMessage{"l": formula("a"), "r": formula("a"), "a": formula("x")}},
		{name: "its stored configuration is replaced", sources: []string{"a"},
			others: map[string]json.RawMessage{"out": formula("out")}},
		{name: "an unreadable configuration feeds nothing", sources: []string{"mid"},
			others: map[string]json.RawMessage{"mid": json.RawMessage(`{`)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var cfg Config
			if err := json.Unmarshal(formula(c.sources...), &cfg); err != nil {
				t.Fatal(err)
			}
			err := RefuseLoop("out", cfg, c.others)
			switch {
			case c.loop == "" && err != nil:
				t.Errorf("refused: %v", err)
			case c.loop != "" && (err == nil || !strings.Contains(err.Error(), c.loop)):
				t.Errorf("error %v, want one naming %s", err, c.loop)
			}
		})
	}
}
