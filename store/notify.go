package store

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// credentialsChannel is the PostgreSQL notification channel of changes to
// users, roles and role assignments. Triggers send on it, within the
// changing transaction (migration 00006), whoever makes the change.
const credentialsChannel = "bdp_credentials"

// rolesChanged is the payload of a change to roles or role assignments.
const rolesChanged = "roles"

// projectDeleted starts the payload of a deleted project, its id after it.
const projectDeleted = "project:"

// AccessChange is what a notification on credentialsChannel says changed.
type AccessChange struct {
	// UserID is the user whose row changed or who was deleted: their
	// cached credentials and roles are stale. 0 with Roles false: any
	// user's (notices may have been lost).
	UserID int64
	// Roles: roles or role assignments changed; cached passwords stay valid.
	Roles bool
	// ProjectID is a deleted project: what is cached of it is gone
	// (00017). Cached passwords stay valid.
	ProjectID int64
}

// ListenCredentialsChanged calls changed with every AccessChange committed
// on this database, by any process, until ctx ends. It holds one
// connection of its own and makes a new one when it is lost (the database
// restarting); notifications of the gap are lost then, so after every
// reconnection it calls changed with the zero AccessChange, meaning any
// user. changed runs on this goroutine.
func (s *Store) ListenCredentialsChanged(ctx context.Context, changed func(AccessChange)) {
	s.listenChannel(ctx, credentialsChannel, func(again bool) {
		if again {
			changed(AccessChange{})
		}
	},
		func(payload string) { changed(parseAccessChange(payload)) })
}

// listenChannel calls notified with the payload of every notification on
// channel until ctx ends, reconnecting with backoff when its connection is
// lost. It calls listening each time LISTEN is in effect, with again set
// after a reconnection: what was sent in the gap is lost.
func (s *Store) listenChannel(ctx context.Context, channel string, listening func(again bool), notified func(payload string)) {
	const minBackoff, maxBackoff = 250 * time.Millisecond, 10 * time.Second
	backoff, listened := minBackoff, false
	for {
		err := s.listen(ctx, channel, func() {
			listening(listened)
			listened, backoff = true, minBackoff
		}, notified)
		if ctx.Err() != nil || err == nil {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// listen runs one LISTEN session until its connection fails or ctx ends.
func (s *Store) listen(ctx context.Context, channel string, listening func(), notified func(string)) error {
	pc, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	// Taken out of the pool, so that Close does not wait for it.
	conn := pc.Hijack()
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		conn.Close(cctx)
	}()
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{channel}.Sanitize()); err != nil {
		return err
	}
	listening()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		notified(n.Payload)
	}
}

func parseAccessChange(payload string) AccessChange {
	if payload == rolesChanged {
		return AccessChange{Roles: true}
	}
	if rest, ok := strings.CutPrefix(payload, projectDeleted); ok {
		if id, err := strconv.ParseInt(rest, 10, 64); err == nil && id > 0 {
			return AccessChange{ProjectID: id}
		}
		return AccessChange{}
	}
	id, err := strconv.ParseInt(payload, 10, 64)
	if err != nil || id <= 0 {
		return AccessChange{} // not ours to read: any user, to be safe
	}
	return AccessChange{UserID: id}
}
