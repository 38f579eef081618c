package http

import (
	"testing"

	"github.com/openbdp/bdp/fault"
)

// Every kind must have its own status; a kind that fell through to the
// default would answer 500 for a client error.
func TestStatusOfEveryKind(t *testing.T) {
	want := map[fault.Kind]int{
		fault.Internal: 500, fault.Invalid: 400, fault.Unauthenticated: 401, fault.Forbidden: 403,
		fault.NotFound: 404, fault.Conflict: 409, fault.TooLarge: 413, fault.Unprocessable: 422,
		fault.Unavailable: 503, fault.Throttled: 429,
	}
	if len(want) != len(fault.Kinds) {
		t.Fatalf("table covers %d kinds, fault has %d: add the new kind here and to statusOf", len(want), len(fault.Kinds))
	}
	for _, k := range fault.Kinds {
		got, ok := want[k]
		if !ok {
			t.Fatalf("kind %s missing from the table", k)
		}
		if s := statusOf(k); s != got {
			t.Errorf("statusOf(%s) = %d, want %d", k, s, got)
		}
	}
}

func TestInternalErrorsDoNotLeak(t *testing.T) {
	err := fault.Wrap(fault.Internal, errString("pq: duplicate key value violates unique constraint"), "boom")
	if m := fault.Message(err); m != "internal error" {
		t.Fatalf("internal message leaks: %q", m)
	}
	if m := fault.Message(errString("SELECT * FROM users")); m != "internal error" {
		t.Fatalf("plain error leaks: %q", m)
	}
}

type errString string

func (e errString) Error() string { return string(e) }
