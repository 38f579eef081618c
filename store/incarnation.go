package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// incarnationClass is the first key of every incarnation's advisory lock
// (class, id). The two-key form is a key space of its own, apart from the
// one-key locks of TryLock and of the migrations.
const incarnationClass = 0x62647069 // "bdpi"

// liveIncarnations selects the ids of the incarnations whose lock some
// session of this database holds. Advisory locks are per database, and
// pg_locks shows those of every database. pg_locks is read rather than
// probed with pg_try_advisory_lock: one query answers for every row, and
// no lock can stay behind on a session that fails between lock and unlock.
var liveIncarnations = fmt.Sprintf(`SELECT objid::bigint AS id FROM pg_locks
	WHERE locktype = 'advisory' AND granted AND objsubid = 2 AND classid = %d
	  AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`, incarnationClass)

// incarnationCheck is how often an Incarnation checks the connection that
// holds its lock, and takes the lock again when the connection was lost.
const incarnationCheck = 5 * time.Second

// incarnationTimeout bounds one check or one taking of the lock.
const incarnationTimeout = 5 * time.Second

// incarnationKeepalives make the server end the lock's session within
// about 25 s when the process's machine vanishes (power, network), which
// closes no socket: the server would otherwise keep the session, and the
// process's uploads would look alive, until its TCP gives up (two hours
// with Linux's defaults). Ignored on a Unix socket, which cannot vanish so.
const incarnationKeepalives = `SET tcp_keepalives_idle = 10; SET tcp_keepalives_interval = 5; SET tcp_keepalives_count = 3`

// Incarnation is one process's lifetime on the database, so that other
// processes on it (the nodes of a cluster, the next start of this one)
// can tell what a live process is still doing from what a dead one left:
// the rows it writes carry its ID, and it holds PostgreSQL's session
// advisory lock on the ID, on a connection of its own, until Close. The
// lock ends with the session, and so with the process however it ends:
// on kill -9 the server sees the socket close. IDs come from a sequence,
// so a new process never takes the ID of a dead one, whose leftovers
// would then look alive.
type Incarnation struct {
	id    int64
	cfg   *pgx.ConnConfig
	log   *slog.Logger
	every time.Duration
	// ctx ends at Close; conn is used by watch alone until done is closed.
	ctx    context.Context
	cancel context.CancelFunc
	conn   *pgx.Conn
	done   chan struct{}
	once   sync.Once
}

// StartIncarnation takes a new incarnation and its lock, and keeps the
// lock until Close: when the connection holding it is lost (the database
// restarted, the network failed), it connects again and takes the lock
// back. In between, other processes see this one as dead.
func (s *Store) StartIncarnation(ctx context.Context, log *slog.Logger) (*Incarnation, error) {
	return s.startIncarnation(ctx, log, incarnationCheck)
}

func (s *Store) startIncarnation(ctx context.Context, log *slog.Logger, every time.Duration) (*Incarnation, error) {
	var id int64
	if err := s.pool.QueryRow(ctx, `SELECT nextval('incarnations')`).Scan(&id); err != nil {
		return nil, fmt.Errorf("incarnation: %w", err)
	}
	inc := &Incarnation{id: id, cfg: s.pool.Config().ConnConfig, log: log, every: every, done: make(chan struct{})}
	conn, err := inc.lock(ctx)
	if err != nil {
		return nil, err
	}
	inc.conn = conn
	inc.ctx, inc.cancel = context.WithCancel(context.Background())
	go inc.watch()
	return inc, nil
}

// ID is the incarnation's number, which the rows it writes carry.
func (inc *Incarnation) ID() int64 { return inc.id }

// lock connects and takes the incarnation's lock on that connection.
func (inc *Incarnation) lock(ctx context.Context) (*pgx.Conn, error) {
	conn, err := pgx.ConnectConfig(ctx, inc.cfg)
	if err != nil {
		return nil, fmt.Errorf("incarnation %d: connect: %w", inc.id, err)
	}
	var ok bool
	if _, err = conn.Exec(ctx, incarnationKeepalives); err == nil {
		err = conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1::int, $2::int)`, incarnationClass, inc.id).Scan(&ok)
	}
	if err == nil && !ok {
		// Only this process takes its id; a session of it that the
		// server has not yet found dead may still hold the lock.
		err = errors.New("the lock is held by another session")
	}
	if err != nil {
		_ = conn.Close(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("incarnation %d: lock: %w", inc.id, err)
	}
	return conn, nil
}

// watch checks the lock's connection every inc.every until Close.
func (inc *Incarnation) watch() {
	defer close(inc.done)
	tick := time.NewTicker(inc.every)
	defer tick.Stop()
	for {
		select {
		case <-inc.ctx.Done():
			return
		case <-tick.C:
		}
		inc.check()
	}
}

// check takes the lock again when its connection no longer answers.
func (inc *Incarnation) check() {
	ctx, cancel := context.WithTimeout(inc.ctx, incarnationTimeout)
	defer cancel()
	if inc.conn != nil {
		err := inc.conn.Ping(ctx)
		if err == nil || inc.ctx.Err() != nil {
			return
		}
		inc.log.Warn("lost the connection holding this process's incarnation lock: until it is back, "+
			"a starting node's file repair takes this process's uploads in flight for a dead process's",
			slog.Int64("incarnation", inc.id), slog.Any("error", err))
		_ = inc.conn.Close(ctx)
		inc.conn = nil
	}
	conn, err := inc.lock(ctx)
	if err != nil {
		if inc.ctx.Err() == nil {
			inc.log.Warn("taking the incarnation lock again", slog.Int64("incarnation", inc.id), slog.Any("error", err))
		}
		return
	}
	inc.conn = conn
	inc.log.Info("incarnation lock held again", slog.Int64("incarnation", inc.id))
}

// Close ends the lock's session, and with it the lock: from then on other
// processes see this one as dead, as they would after a kill -9 (the
// server ends the session's backend a moment after the connection
// closes). Call it once nothing of the process is in flight any more;
// later calls do nothing.
func (inc *Incarnation) Close() {
	inc.once.Do(func() {
		inc.cancel()
		<-inc.done
		if inc.conn != nil {
			ctx, cancel := context.WithTimeout(context.Background(), incarnationTimeout)
			defer cancel()
			_ = inc.conn.Close(ctx)
		}
	})
}

// IncarnationLive tells whether a session holds the lock of incarnation
// id: its process is running (or lost the lock's connection only a moment
// ago and has not yet taken it back).
func (s *Store) IncarnationLive(ctx context.Context, id int64) (bool, error) {
	var live bool
	err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM (`+liveIncarnations+`) l WHERE l.id = $1)`, id).Scan(&live)
	if err != nil {
		return false, fmt.Errorf("incarnation %d: %w", id, err)
	}
	return live, nil
}
