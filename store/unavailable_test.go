package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// A database that is down or restarting answers 503 upstream; a request's
// own faults and cancellations do not.
func TestIsUnavailable(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"connection refused", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, true},
		{"connection lost mid-query", fmt.Errorf("query: %w", io.ErrUnexpectedEOF), true},
		{"reset", fmt.Errorf("read: %w", syscall.ECONNRESET), true},
		{"starting up (57P03)", &pgconn.PgError{Code: "57P03"}, true},
		{"crash shutdown (57P02)", &pgconn.PgError{Code: "57P02"}, true},
		{"admin shutdown (57P01)", fmt.Errorf("wrapped: %w", &pgconn.PgError{Code: "57P01"}), true},
		{"connection failure (08006)", &pgconn.PgError{Code: "08006"}, true},
		{"too many connections", &pgconn.PgError{Code: "53300"}, true},
		{"unique violation", &pgconn.PgError{Code: "23505"}, false},
		{"syntax error", &pgconn.PgError{Code: "42601"}, false},
		{"no rows", pgx.ErrNoRows, false},
		{"client went away", context.Canceled, false},
		{"plain bug", errors.New("nil map"), false},
		{"nil", nil, false},
	}
	for _, tt := range tests {
		if got := IsUnavailable(tt.err); got != tt.want {
			t.Errorf("%s: IsUnavailable = %v, want %v", tt.name, got, tt.want)
		}
	}
	// The real thing: a server that is not there.
	_, err := pgx.Connect(context.Background(), "postgres://bdp:x@127.0.0.1:1/bdp?sslmode=disable&connect_timeout=2")
	if err == nil || !IsUnavailable(err) {
		t.Fatalf("a refused connection is not unavailable: %v", err)
	}
}
