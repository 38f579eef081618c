package store

import (
	"context"
	"fmt"
)

// StorageFigures are the observations stored and their size on disk, in
// the head (rows) and sealed (chunks): what /metrics and bdp admin
// storage show.
type StorageFigures struct {
	Head, Sealed StateFigures
	Chunks       int64 // sealed chunks
}

// StateFigures are one state's observations and bytes (heap, TOAST and
// indexes).
type StateFigures struct {
	Observations int64
	Bytes        int64
}

// BytesPerObservation is Bytes over Observations, 0 without any.
func (f StateFigures) BytesPerObservation() float64 {
	if f.Observations == 0 {
		return 0
	}
	return float64(f.Bytes) / float64(f.Observations)
}

// StorageFigures reads the figures. The head's row count is PostgreSQL's
// estimate (as of the last ANALYZE) unless exact, which counts every row;
// the sealed count is exact, from the chunks' headers.
func (s *Store) StorageFigures(ctx context.Context, exact bool) (StorageFigures, error) {
	var f StorageFigures
	err := s.pool.QueryRow(ctx, `
		SELECT coalesce(sum(greatest(c.reltuples, 0)), 0)::bigint, coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint
		FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'observations'::regclass`).
		Scan(&f.Head.Observations, &f.Head.Bytes)
	if err != nil {
		return f, fmt.Errorf("storage figures: %w", err)
	}
	if exact {
		if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM observations`).Scan(&f.Head.Observations); err != nil {
			return f, fmt.Errorf("storage figures: %w", err)
		}
	}
	err = s.pool.QueryRow(ctx, `SELECT coalesce(sum(n), 0)::bigint, count(*), pg_total_relation_size('observation_chunks') FROM observation_chunks`).
		Scan(&f.Sealed.Observations, &f.Chunks, &f.Sealed.Bytes)
	if err != nil {
		return f, fmt.Errorf("storage figures: %w", err)
	}
	return f, nil
}
