package fault

import (
	"errors"
	"fmt"
	"testing"
)

func TestKindSurvivesWrapping(t *testing.T) {
	tests := []struct {
		name string
		err  error
		kind Kind
		msg  string
	}{
		{"plain", errors.New("disk on fire"), Internal, "internal error"},
		{"invalid", Invalidf("field %s is required", "name"), Invalid, "field name is required"},
		{"wrapped with %w", fmt.Errorf("create user: %w", Conflictf("user exists")), Conflict, "user exists"},
		{"wrap keeps cause hidden", Wrap(NotFound, errors.New("no rows in result set"), "project not found"), NotFound, "project not found"},
		{"nil-safe Is", nil, Internal, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.err == nil {
				if Is(nil, Internal) {
					t.Fatal("Is(nil) must be false")
				}
				return
			}
			if k := KindOf(tt.err); k != tt.kind {
				t.Fatalf("KindOf = %s, want %s", k, tt.kind)
			}
			if m := Message(tt.err); m != tt.msg {
				t.Fatalf("Message = %q, want %q", m, tt.msg)
			}
		})
	}
}

func TestEveryKindHasAName(t *testing.T) {
	seen := map[string]bool{}
	for _, k := range Kinds() {
		if k.String() == "" {
			t.Fatalf("kind %d has no name in kindNames", k)
		}
		if seen[k.String()] {
			t.Fatalf("two kinds share the name %q", k)
		}
		seen[k.String()] = true
	}
}
