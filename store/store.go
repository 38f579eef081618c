// Package store keeps bdp's state in PostgreSQL.
//
// A *Store is safe for concurrent use by many goroutines. Every method takes
// a context first and returns errors of the kinds in package fault: unknown
// rows become fault.NotFound and unique violations fault.Conflict here, at
// the boundary, so no caller ever inspects a driver error.
package store

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"github.com/openbdp/bdp/fault"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Store is the PostgreSQL-backed state of the platform.
type Store struct {
	pool *pgxpool.Pool
	// means serves sampled means (querySampled): its connections read a
	// datapoint's rows in time order (timeOrderedParams).
	means  *pgxpool.Pool
	parts  partitions
	codecs codecPool // for sealed chunks (chunks.go)
}

// Open connects to the database at url and checks that it answers.
func Open(ctx context.Context, url string) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("parse database url: %w", err)
	}
	if !strings.Contains(url, "pool_max_conns") {
		// pgx's default, the CPU count and at least 4, lets a resume's
		// batched history reads (actors.ReadBatcher), the pipeline's
		// commits and HTTP reads wait for each other's round trips; a
		// connection mostly waits for the network, not a CPU.
		cfg.MaxConns = int32(max(16, 4*runtime.NumCPU()))
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to database: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connect to database: %w", err)
	}
	meansCfg := cfg.Copy()
	for name, value := range timeOrderedParams() {
		meansCfg.ConnConfig.RuntimeParams[name] = value
	}
	// As many at once as the main pool, where means were read before;
	// connections open as means are read: a node that serves none holds
	// none.
	meansCfg.MinConns = 0
	means, err := pgxpool.NewWithConfig(ctx, meansCfg)
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("connect to database: %w", err)
	}
	return &Store{pool: pool, means: means, parts: partitions{known: map[time.Time]bool{}}, codecs: newCodecPool(2 * runtime.NumCPU())}, nil
}

// Close waits for queries in flight and closes every connection.
func (s *Store) Close() {
	s.means.Close()
	s.pool.Close()
}

// Ping tells whether the database answers; /readyz uses it.
func (s *Store) Ping(ctx context.Context) error { return s.pool.Ping(ctx) }

// Migrate applies every embedded migration not yet applied. It returns the
// schema version reached.
func (s *Store) Migrate(ctx context.Context) (int64, error) {
	db := stdlib.OpenDBFromPool(s.pool)
	defer db.Close()
	return migrate(ctx, db)
}

func migrate(ctx context.Context, db *sql.DB) (int64, error) {
	// Under PostgreSQL's session advisory lock: nodes that start together
	// on one database migrate one after the other, and the later ones find
	// nothing left to apply.
	locker, err := lock.NewPostgresSessionLocker()
	if err != nil {
		return 0, fmt.Errorf("migration lock: %w", err)
	}
	p, err := goose.NewProvider(goose.DialectPostgres, db, mustSub(migrations, "migrations"), goose.WithSessionLocker(locker))
	if err != nil {
		return 0, fmt.Errorf("load migrations: %w", err)
	}
	if _, err := p.Up(ctx); err != nil {
		return 0, fmt.Errorf("apply migrations: %w", err)
	}
	v, err := p.GetDBVersion(ctx)
	if err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	return v, nil
}

// tx runs fn in one transaction: committed when fn returns nil, rolled back
// otherwise, so a failed request never leaves half of its writes behind.
func (s *Store) tx(ctx context.Context, fn func(pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, s.pool, fn)
}

// IsRejected reports whether err is PostgreSQL refusing the data of a
// write (a value out of range, a constraint, one row touched twice), as
// opposed to the database being unreachable or failing: the same data
// would be refused again, other data would not.
func IsRejected(err error) bool {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || len(pe.Code) < 2 {
		return false
	}
	switch pe.Code[:2] {
	case "21", "22", "23", "54": // cardinality, data exception, integrity, program limit
		return true
	}
	return false
}

// translate turns driver errors into fault kinds. what names the thing
// looked for, for the client message of not-found and conflict answers.
func translate(err error, what string) error {
	if err == nil {
		return nil
	}
	var fe *fault.Error
	if errors.As(err, &fe) {
		return err
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return fault.Wrap(fault.NotFound, err, what+" not found")
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "23505": // unique_violation
			return fault.Wrap(fault.Conflict, err, what+" already exists")
		case "23503": // foreign_key_violation
			return fault.Wrap(fault.NotFound, err, what+" refers to something that does not exist")
		case "23514", "22001", "22003": // check_violation, string too long, numeric out of range
			return fault.Wrap(fault.Invalid, err, "invalid "+what)
		case "22021": // character_not_in_repertoire: a NUL character in text
			return fault.Wrap(fault.Invalid, err, "invalid "+what+": text must not contain NUL characters")
		}
	}
	return err
}
