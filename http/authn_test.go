package http

import (
	"context"
	"testing"

	"github.com/openbdp/bdp/auth"
)

// An unknown email must cost a full hash like a wrong password does, or
// response times would tell which emails exist.
func TestDummyHashIsARealHash(t *testing.T) {
	h := auth.NewHasher(auth.DefaultHashParams, 1)
	ok, err := h.Verify(context.Background(), "anything", dummyHash)
	if err != nil {
		t.Fatalf("dummy hash does not parse, so unknown emails skip the hash: %v", err)
	}
	if ok {
		t.Fatal("dummy hash matched a password")
	}
}

func TestParseBasic(t *testing.T) {
	tests := []struct {
		cred, email, password string
		ok                    bool
	}{
		{"YWRhQHguaW86cHc=", "ada@x.io", "pw", true},  // ada@x.io:pw
		{"YWRhQHguaW86cDpx", "ada@x.io", "p:q", true}, // colons in the password
		{"dXNlcm9ubHk=", "", "", false},               // no colon
		{"OnB3", "", "", false},                       // empty email
		{"!!!not-base64!!!", "", "", false},
		{"IGFkYUB4LmlvIDpwdyA=", "ada@x.io", "pw ", true}, // " ada@x.io :pw ": the email is trimmed as stored, the password kept
		{"ICA6cHc=", "", "", false},                       // a blank email
	}
	for _, tt := range tests {
		email, pw, ok := parseBasic(tt.cred)
		if ok != tt.ok || (ok && (email != tt.email || pw != tt.password)) {
			t.Errorf("parseBasic(%q) = %q, %q, %v", tt.cred, email, pw, ok)
		}
	}
}
