package store

import (
	"context"
	"log/slog"
	"testing"
	"time"
)

// waitFor polls cond until it is true, failing t after a deadline: the
// server ends a closed session's backend, and its locks, a moment after
// the connection closes.
func waitFor(t *testing.T, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ok, err := cond()
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not %s after 10 s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func dead(s *Store, id int64) func() (bool, error) {
	return func() (bool, error) {
		l, err := s.IncarnationLive(context.Background(), id)
		return !l, err
	}
}

func startIncarnation(t *testing.T, s *Store, every time.Duration) *Incarnation {
	t.Helper()
	inc, err := s.startIncarnation(context.Background(), slog.New(slog.DiscardHandler), every)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(inc.Close)
	return inc
}

// An incarnation is live from its start until its session ends, however
// it ends; ids are never handed out twice; the lock belongs to one
// database.
func TestIncarnationLivesWithItsSession(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	other := newTestStore(t) // another database of the same server
	for _, tc := range []struct {
		name string
		end  func(t *testing.T, inc *Incarnation)
	}{
		{"closed", func(t *testing.T, inc *Incarnation) { inc.Close() }},
		{"killed", func(t *testing.T, inc *Incarnation) {
			// What kill -9 leaves: no watch to take the lock back, and
			// the socket closed without a word to the server.
			inc.cancel()
			<-inc.done
			if err := inc.conn.PgConn().Conn().Close(); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := startIncarnation(t, s, time.Hour)
			b := startIncarnation(t, s, time.Hour)
			if a.ID() == b.ID() || a.ID() <= 0 {
				t.Fatalf("incarnations %d and %d", a.ID(), b.ID())
			}
			for _, inc := range []*Incarnation{a, b} {
				if ok, err := s.IncarnationLive(ctx, inc.ID()); err != nil || !ok {
					t.Fatalf("incarnation %d live: %v, %v", inc.ID(), ok, err)
				}
				// The other database's sequence hands out the same
				// numbers; its incarnations are its own.
				if ok, err := other.IncarnationLive(ctx, inc.ID()); err != nil || ok {
					t.Fatalf("incarnation %d live in another database: %v, %v", inc.ID(), ok, err)
				}
			}
			tc.end(t, a)
			waitFor(t, "dead", dead(s, a.ID()))
			if ok, err := s.IncarnationLive(ctx, b.ID()); err != nil || !ok {
				t.Fatalf("incarnation %d live after the other's end: %v, %v", b.ID(), ok, err)
			}
		})
	}
}

// A lost connection (the database restarted, the network failed) costs
// the process its lock only until the next check takes it back.
func TestIncarnationTakesItsLockBack(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	inc := startIncarnation(t, s, 20*time.Millisecond)
	holder := func() (int32, error) {
		var pid int32
		err := s.pool.QueryRow(ctx, `SELECT COALESCE(max(pid), 0) FROM pg_locks
			WHERE locktype = 'advisory' AND granted AND classid = $1 AND objid = $2 AND objsubid = 2`,
			incarnationClass, inc.ID()).Scan(&pid)
		return pid, err
	}
	first, err := holder()
	if err != nil || first == 0 {
		t.Fatalf("holder of the lock: %d, %v", first, err)
	}
	if _, err := s.pool.Exec(ctx, `SELECT pg_terminate_backend($1)`, first); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "held again by a new session", func() (bool, error) {
		pid, err := holder()
		return pid != 0 && pid != first, err
	})
	inc.Close()
	waitFor(t, "dead after Close", dead(s, inc.ID()))
}
