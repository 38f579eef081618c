package http

import (
	"context"
	"maps"
	"slices"
	"strings"
	"unicode"

	"github.com/openbdp/bdp/rbac"
	"github.com/openbdp/bdp/store"
)

// hiddenID stands, in a log message shown to a caller, for a dataPointID
// the caller may not read (TagAuths), as a masked pin's source does.
const hiddenID = "(hidden)"

// logMasker rewrites log messages (of virtual datapoints, in their
// answers and in alerts) so that they name no datapoint the caller may
// not read: a message quotes sources freely ("read src: …", "Start
// failed: …"), and it is written once for every reader.
type logMasker struct {
	replacer *strings.Replacer // nil: nothing to hide
}

// logMaskerFor builds the masker of a caller for messages that may name
// the given sources (a configuration's pins, current ones) or any other
// datapoint of the project (the pins of an earlier configuration, say):
// the words of the messages that are dataPointIDs of the project count
// too. Company roles read everything, so their masker hides nothing.
func (s *Server) logMaskerFor(ctx context.Context, cl *call, sources, messages []string) (logMasker, error) {
	if cl.Perms.HasCompanyRole() || len(messages) == 0 {
		return logMasker{}, nil
	}
	names := map[string]bool{}
	for _, src := range sources {
		names[src] = true
	}
	for _, m := range messages {
		for _, w := range strings.FieldsFunc(m, notInWord) {
			names[w] = true
		}
	}
	stored, err := s.store.ProjectDatapoints(ctx, cl.ProjectID, slices.Collect(maps.Keys(names)))
	if err != nil {
		return logMasker{}, err
	}
	known := map[string]rbac.Datapoint{}
	for _, src := range sources {
		known[src] = rbac.Datapoint{ID: src} // by name, as vdpAnswer masks a pin never stored
	}
	for _, d := range stored {
		known[d.ID] = rbac.Datapoint{ID: d.ID, Tags: d.Tags}
	}
	ids := slices.Collect(maps.Keys(known))
	// Longest first: where a readable id contains a hidden one ("src_a"
	// and "src"), the longer match wins, and readable ids are replaced by
	// themselves so that no hidden id is found inside them.
	slices.SortFunc(ids, func(a, b string) int { return len(b) - len(a) })
	var pairs []string
	anyHidden := false
	for _, id := range ids {
		to := id
		if !cl.Perms.DatapointAccess(cl.ProjectID, known[id]).Read {
			to, anyHidden = hiddenID, true
		}
		pairs = append(pairs, id, to)
	}
	if !anyHidden {
		return logMasker{}, nil
	}
	return logMasker{replacer: strings.NewReplacer(pairs...)}, nil
}

// mask returns msg with every dataPointID the caller may not read
// replaced by hiddenID.
func (m logMasker) mask(msg string) string {
	if m.replacer == nil {
		return msg
	}
	return m.replacer.Replace(msg)
}

// notInWord separates the words of a log message that may be
// dataPointIDs: spaces and the punctuation messages put around them.
func notInWord(r rune) bool {
	return unicode.IsSpace(r) || strings.ContainsRune(`"'()[]{}:;,=`, r)
}

// logMessages lists the messages of log entries.
func logMessages(logs []store.VDPLog) []string {
	out := make([]string, len(logs))
	for i, l := range logs {
		out[i] = l.Message
	}
	return out
}
