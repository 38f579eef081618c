package store

import (
	"context"
	"fmt"
)

// TryLock takes PostgreSQL's session advisory lock named key, if no
// session holds it: work that must run once across every node of a
// cluster (a recompute of one virtual datapoint, say) runs while it holds
// the lock. The lock keeps one pooled connection until unlock; a node that
// dies loses its session, and the lock with it. ok is false when another
// session holds the lock.
func (s *Store) TryLock(ctx context.Context, key string) (unlock func(), ok bool, err error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("lock %q: %w", key, err)
	}
	// hashtextextended: the 64-bit key of the name; two names meeting on
	// one key would only make one wait for the other's end.
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock(hashtextextended($1, 0))`, key).Scan(&ok); err != nil || !ok {
		conn.Release()
		if err != nil {
			return nil, false, fmt.Errorf("lock %q: %w", key, err)
		}
		return nil, false, nil
	}
	return func() {
		// A failed unlock leaves the lock on a connection that goes back
		// to the pool; closing that connection ends its session instead.
		if _, err := conn.Exec(context.Background(), `SELECT pg_advisory_unlock(hashtextextended($1, 0))`, key); err != nil {
			_ = conn.Conn().Close(context.Background())
		}
		conn.Release()
	}, true, nil
}
