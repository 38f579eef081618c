package actors

import (
	"encoding/json"
	"strings"

	"github.com/openbdp/bdp/fault"
)

// RefuseLoop rejects cfg, the configuration of the virtual datapoint id,
// when its sources reach its own output, directly or through other
// virtual datapoints of the project: a derived series feeding itself
// would grow without end. others are the project's stored configurations
// by output (id's own, if stored, is replaced by cfg); one that does not
// parse feeds nothing.
func RefuseLoop(id string, cfg Config, others map[string]json.RawMessage) error {
	feeds := map[string][]string{} // output -> its sources
	for out, raw := range others {
		var other Config
		if json.Unmarshal(raw, &other) == nil {
			feeds[out] = other.SourceIDs()
		}
	}
	feeds[id] = cfg.SourceIDs()
	seen := map[string]bool{}
	var visit func(dp string, path []string) error
	visit = func(dp string, path []string) error {
		if dp == id && len(path) > 0 {
			return fault.Invalidf("config: the sources reach the output %q (%s)", id, strings.Join(append(path, dp), " <- "))
		}
		if seen[dp] {
			return nil
		}
		seen[dp] = true
		for _, src := range feeds[dp] {
			if err := visit(src, append(path, dp)); err != nil {
				return err
			}
		}
		return nil
	}
	return visit(id, nil)
}
