package actors

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// The actor library's logger passes on warnings and errors only, also
// through the attributes it is given (slog's With): the library's info
// lines are noise to operators.
func TestActorLibraryLogsWarningsOnly(t *testing.T) {
	var out bytes.Buffer
	log := slog.New(warnOnly{slog.NewTextHandler(&out, nil)}).With(slog.String("lib", "protoactor")).WithGroup("g")
	log.Info("actor system started")
	log.Warn("dead letter")
	if got := out.String(); strings.Contains(got, "started") || !strings.Contains(got, "dead letter") {
		t.Errorf("logged %q, want the warning only", got)
	}
}
