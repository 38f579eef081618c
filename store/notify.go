package store

import (
	"context"
	"strconv"
	"time"
)

// credentialsChannel is the PostgreSQL notification channel of password
// changes made outside the server that caches credentials (`bdp admin`).
const credentialsChannel = "bdp_credentials"

// NotifyCredentialsChanged tells every server on this database that a
// user's password changed, so that they drop what they cached about the
// user at once instead of when their caches expire.
func (s *Store) NotifyCredentialsChanged(ctx context.Context, userID int64) error {
	_, err := s.pool.Exec(ctx, `SELECT pg_notify($1, $2)`, credentialsChannel, strconv.FormatInt(userID, 10))
	return err
}

// ListenCredentialsChanged calls changed with the user id of every
// NotifyCredentialsChanged, until ctx ends. It holds one connection of its
// own and makes a new one when it is lost (the database restarting);
// notifications of the gap are lost then, so after every reconnection it
// calls changed(0), meaning any user. changed runs on this goroutine.
func (s *Store) ListenCredentialsChanged(ctx context.Context, changed func(userID int64)) {
	const minBackoff, maxBackoff = 250 * time.Millisecond, 10 * time.Second
	backoff, listened := minBackoff, false
	for {
		err := s.listen(ctx, func() {
			if listened {
				changed(0)
			}
			listened, backoff = true, minBackoff
		}, changed)
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
func (s *Store) listen(ctx context.Context, listening func(), changed func(int64)) error {
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
	if _, err := conn.Exec(ctx, "LISTEN "+credentialsChannel); err != nil {
		return err
	}
	listening()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		id, err := strconv.ParseInt(n.Payload, 10, 64)
		if err != nil {
			id = 0 // not ours to read: drop everything, to be safe
		}
		changed(id)
	}
}
