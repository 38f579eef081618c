package http

import (
	"context"
	"testing"
	"time"

	"github.com/openbdp/bdp/auth"
	"github.com/openbdp/bdp/store"
)

// A password reset by another process (bdp admin) reaches a running
// server at once: the old password, cached, and the tokens issued with it
// stop working, and the new password works.
func TestPasswordResetElsewhereTakesEffectAtOnce(t *testing.T) {
	e := newTestEnv(t) // credentials cached for a minute
	c := e.newCompany()
	e.do("GET", "/v2/user", c.Admin, nil).want(t, 200) // now in the cache
	tok := bearer(e.do("POST", "/v2/auth/token", c.Admin, nil).want(t, 200).JSON["access_token"].(string))
	e.do("GET", "/v2/user", tok, nil).want(t, 200)

	ctx := context.Background()
	other, err := store.Open(ctx, e.dbURL) // as bdp admin does: its own pool
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	u, err := ResetPassword(ctx, other, auth.NewHasher(fastHash, 1), c.Admin.email, "a-brand-new-password")
	if err != nil {
		t.Fatal(err)
	}
	if err := other.NotifyCredentialsChanged(ctx, u.ID); err != nil {
		t.Fatal(err)
	}
	e.do("GET", "/v2/user", basic{c.Admin.email, "a-brand-new-password"}, nil).want(t, 200)
	// The notice travels asynchronously; "at once" is well under a second.
	deadline := time.Now().Add(2 * time.Second)
	for {
		oldPw := e.do("GET", "/v2/user", c.Admin, nil).Status
		oldTok := e.do("GET", "/v2/user", tok, nil).Status
		if oldPw == 401 && oldTok == 401 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("2 s after the reset: old password %d, old token %d; want 401 for both", oldPw, oldTok)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
