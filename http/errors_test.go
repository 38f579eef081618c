package http

import (
	"testing"

	"github.com/openbdp/bdp/fault"
)

// Every kind has its own status, from fault.Kinds, which holds every
// kind by construction: a kind that fell through to the default would
// answer 500 for a client error.
func TestStatusOfEveryKind(t *testing.T) {
	want := map[fault.Kind]int{
		fault.Internal: 500, fault.Invalid: 400, fault.Unauthenticated: 401, fault.Forbidden: 403,
		fault.NotFound: 404, fault.Conflict: 409, fault.TooLarge: 413, fault.Unprocessable: 422,
		fault.Unavailable: 503, fault.Throttled: 429,
	}
	for _, k := range fault.Kinds() {
		if _, ok := kindStatus[k]; !ok {
			t.Errorf("kind %s has no status in kindStatus", k)
		}
		if w, ok := want[k]; ok && statusOf(k) != w {
			t.Errorf("statusOf(%s) = %d, want %d", k, statusOf(k), w)
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
