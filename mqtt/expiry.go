package mqtt

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/openbdp/bdp/clock"
	"github.com/openbdp/bdp/fault"
	"github.com/openbdp/bdp/store"
)

// expiryRetry is how soon a failed look-up of the next expiry is retried.
const expiryRetry = time.Second

// runExpiry keeps one timer armed for the next valid_until of any MQTT
// user, not a poll of every user: when it fires, the expired users are
// deleted and their sessions closed (api.md 3.5), and the timer is armed
// for the next. A change of any user re-arms it.
func (e *Embedded) runExpiry(ctx context.Context) {
	for {
		var timer *clock.Timer
		next, ok, err := e.deps.Store.NextMQTTUserExpiry(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			e.log.Warn("mqtt expiry: look up next expiry", slog.Any("error", err))
			timer = e.timer(expiryRetry)
		case ok:
			timer = e.timer(max(next.Sub(e.cfg.Clock.Now()), 0))
		}
		var fired <-chan time.Time
		if timer != nil {
			fired = timer.C
		}
		select {
		case <-ctx.Done():
			if timer != nil {
				timer.Stop()
			}
			return
		case <-e.rearm:
			if timer != nil {
				timer.Stop()
			}
		case <-fired:
			if err == nil && !e.expireDue(ctx) {
				// The database failed: wait before the next try rather
				// than spin on an expiry that stays due.
				retry := e.timer(expiryRetry)
				select {
				case <-ctx.Done():
					retry.Stop()
					return
				case <-retry.C:
				}
			}
		}
	}
}

func (e *Embedded) timer(d time.Duration) *clock.Timer {
	t := clock.NewTimer(e.cfg.Clock, d)
	return &t
}

// expireDue deletes the users expired by now and ends their sessions; false
// when the database failed.
func (e *Embedded) expireDue(ctx context.Context) bool {
	now := e.cfg.Clock.Now()
	// Known as expired before their rows go: the deletion's notification
	// ends their sessions too (changed), maybe before this goroutine gets
	// on, and a client's next CONNECT must hear "expired", not "unknown".
	due, err := e.deps.Store.ExpiredMQTTUsers(ctx, now)
	if err != nil {
		if ctx.Err() == nil {
			e.log.Warn("mqtt expiry: look up expired users", slog.Any("error", err))
		}
		return false
	}
	for _, u := range due {
		e.expired.put(u, now)
	}
	gone, err := e.deps.Store.DeleteExpiredMQTTUsers(ctx, now)
	if err != nil {
		if ctx.Err() == nil {
			e.log.Warn("mqtt expiry: delete expired users", slog.Any("error", err))
		}
		return false
	}
	for _, u := range gone {
		e.creds.DropUser(u.ID)
		e.sessions.disconnect(u.ID, codeExpiredSession)
	}
	return true
}

// rearmExpiry wakes the expiry timer to look at the next expiry anew.
func (e *Embedded) rearmExpiry() {
	select {
	case e.rearm <- struct{}{}:
	default: // a wake-up is pending already
	}
}

// changed follows a committed change of an MQTT user (any process): the
// expiry timer is re-armed, the user's cached credentials are forgotten,
// and its sessions end when the user is gone, its password changed or its
// rights shrank. id 0 (the watch started listening; notifications may
// have been missed) does this for every user with a session.
func (e *Embedded) changed(id int64) {
	if id == 0 {
		e.listeningOnce.Do(func() { close(e.listening) })
	}
	users := e.sessions.users()
	if id == 0 {
		e.creds.DropAll()
	} else {
		e.creds.DropUser(id)
		project, ok := users[id]
		users = map[int64]int64{}
		if ok {
			users[id] = project
		}
	}
	e.rearmExpiry() // after the drop: a test sees the timer armed once the change is taken in
	ctx, cancel := context.WithTimeout(context.Background(), authTimeout)
	defer cancel()
	for userID, projectID := range users {
		e.recheck(ctx, userID, projectID)
	}
}

// recheck compares a user's sessions with its row as stored now.
func (e *Embedded) recheck(ctx context.Context, userID, projectID int64) {
	u, err := e.deps.Store.MQTTUser(ctx, projectID, userID)
	gone := fault.Is(err, fault.NotFound)
	if err != nil && !gone {
		e.log.Warn("mqtt: re-check user after a change", slog.Int64("mqtt_user", userID), slog.Any("error", err))
		return
	}
	now := e.cfg.Clock.Now()
	e.sessions.check(userID, func(a Account, hash string) (bool, packets.Code, Account) {
		switch {
		case gone && a.Expired(now):
			return true, codeExpiredSession, a
		case gone || u.PasswordHash != hash || a.Write && u.Rights != store.MQTTWrite:
			return true, packets.Code{Code: 0x98, Reason: "administrative action"}, a
		}
		updated := accountOf(u)
		updated.Username = a.Username
		return false, packets.Code{}, updated
	})
}

// expiredUsers remembers recently expired users for a while, so a client
// with the right password is told 0x87 (expired) rather than 0x86.
type expiredUsers struct {
	mu    sync.Mutex
	users map[string]expiredUser
}

type expiredUser struct {
	user store.MQTTUser
	at   time.Time
}

// Bounds of expiredUsers.
const (
	expiredMemory   = time.Hour
	expiredCapacity = 10_000
)

func newExpiredUsers() *expiredUsers { return &expiredUsers{users: map[string]expiredUser{}} }

func (x *expiredUsers) put(u store.MQTTUser, now time.Time) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if len(x.users) >= expiredCapacity {
		for name, g := range x.users {
			if now.Sub(g.at) > expiredMemory {
				delete(x.users, name)
			}
		}
		if len(x.users) >= expiredCapacity {
			return // the refusal then says 0x86, as for an unknown user
		}
	}
	x.users[u.Username] = expiredUser{user: u, at: now}
}

func (x *expiredUsers) get(username string, now time.Time) (store.MQTTUser, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	g, ok := x.users[username]
	if !ok || now.Sub(g.at) > expiredMemory {
		return store.MQTTUser{}, false
	}
	return g.user, true
}
