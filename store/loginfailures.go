package store

import (
	"context"
	"fmt"
)

// loginFailuresChannel is the PostgreSQL notification channel on which
// the processes of one database tell each other of failed logins, so that
// the login throttle's limits hold across them (auth.Share writes and
// reads the payloads; the store only carries them).
const loginFailuresChannel = "bdp_login_failures"

// MaxLoginFailurePayload is the longest payload PublishLoginFailure
// sends, in bytes: well under PostgreSQL's 8000, and above the longest
// auth.Share makes (a clipped account of 254 bytes, each escaped to at
// most 6, is about 1.6 KB).
const MaxLoginFailurePayload = 4000

// PublishLoginFailure sends payload to every process listening on this
// database (ListenLoginFailures), this one included. The notice is not
// kept: a process not listening at that moment never gets it. Payloads
// must be valid UTF-8 without NUL, as PostgreSQL text, and at most
// MaxLoginFailurePayload bytes.
func (s *Store) PublishLoginFailure(ctx context.Context, payload string) error {
	if len(payload) > MaxLoginFailurePayload {
		return fmt.Errorf("publish login failure: payload of %d bytes, at most %d", len(payload), MaxLoginFailurePayload)
	}
	// pg_notify rather than NOTIFY, which takes no parameters; outside a
	// transaction it is sent at once.
	if _, err := s.pool.Exec(ctx, "SELECT pg_notify($1, $2)", loginFailuresChannel, payload); err != nil {
		return fmt.Errorf("publish login failure: %w", err)
	}
	return nil
}

// ListenLoginFailures calls notified with the payload of every
// PublishLoginFailure on this database, by any process, until ctx ends.
// Like ListenCredentialsChanged it holds a connection of its own and
// makes a new one when it is lost; it calls listening each time LISTEN is
// in effect, again set after a reconnection (the notices of the gap are
// lost). Both run on this goroutine.
func (s *Store) ListenLoginFailures(ctx context.Context, listening func(again bool), notified func(payload string)) {
	s.listenChannel(ctx, loginFailuresChannel, listening, notified)
}
