package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/openbdp/bdp/fault"
)

// The store side of the exact recompute of a virtual datapoint: paged
// reads of its sources, the replacement of its outputs over a period, and
// log entries that do not move its status.

// LogRecompute is the log entry type of recompute progress and results.
const LogRecompute = "recompute"

// ReadPage answers up to limit observations of one datapoint in
// [from, to), ascending. A caller pages through a long range by asking
// again from just after the last time it got: timestamptz has microsecond
// resolution, so the last time plus one microsecond skips nothing.
func (s *Store) ReadPage(ctx context.Context, datapoint int64, from, to time.Time, limit int) ([]Point, error) {
	if limit <= 0 || !to.After(from) {
		return nil, nil
	}
	pts, err := s.readMerged(ctx, datapoint, from, to, false, limit)
	if err != nil {
		return nil, fmt.Errorf("read observations: %w", err)
	}
	return pts, nil
}

// ReadPageBefore answers up to limit observations of one datapoint in
// [from, before), newest first: a window refill pages backwards from its
// end by asking again before the oldest time it got (keyset pagination,
// no OFFSET and no row cap on the whole read). A zero from leaves that
// side open.
func (s *Store) ReadPageBefore(ctx context.Context, datapoint int64, from, before time.Time, limit int) ([]Point, error) {
	if limit <= 0 || (!from.IsZero() && !before.After(from)) {
		return nil, nil
	}
	pts, err := s.readMerged(ctx, datapoint, from, before, true, limit)
	if err != nil {
		return nil, fmt.Errorf("read observations: %w", err)
	}
	return pts, nil
}

// ReplaceOutputs makes points the only observations of a datapoint in
// [start, end): in one transaction it deletes what is stored there and
// writes points, so a reader sees the old period or the new one, never a
// half-replaced one. Other datapoints are not touched. Points outside
// [start, end) are refused; of several at one time the last counts, as in
// any write (decisions.md 4).
//
// A concurrent writer of the same datapoint (the live actor) may commit a
// row inside the period after the delete: the write then upserts rather
// than failing, and the last commit at each time wins.
func (s *Store) ReplaceOutputs(ctx context.Context, projectID int64, dataPointID string, start, end time.Time, points []Point) error {
	if !end.After(start) {
		return fault.Invalidf("end must be after start")
	}
	for _, p := range points {
		if p.Time.Before(start) || !p.Time.Before(end) {
			return fault.Invalidf("output at %s is outside [%s, %s)", p.Time.Format(time.RFC3339Nano),
				start.Format(time.RFC3339Nano), end.Format(time.RFC3339Nano))
		}
	}
	id, found, err := s.outputDatapoint(ctx, projectID, dataPointID, len(points) > 0)
	if err != nil || !found {
		return err
	}
	rows := uniqueRows(id, points)
	if err := s.ensurePartitionsFor(ctx, rows); err != nil {
		return err
	}
	return s.tx(ctx, func(tx pgx.Tx) error {
		// Sealed chunks that overlap the period go back to rows first, so
		// the period is replaced in the head alone (the sealer seals it
		// again later).
		if err := s.unsealRange(ctx, tx, id, start, end); err != nil {
			return fmt.Errorf("unseal outputs: %w", err)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM observations WHERE datapoint = $1 AND time >= $2 AND time < $3`,
			id, start, end); err != nil {
			return fmt.Errorf("delete outputs: %w", err)
		}
		if len(rows) == 0 {
			return nil
		}
		// The upsert fallback matters when a live write got a row in after
		// the delete.
		return insertRows(ctx, tx, rows)
	})
}

// outputDatapoint is the row id of the output datapoint. With create, the
// datapoint is created when missing (the first output creates it, as any
// first observation does); without, a missing one has nothing to replace.
func (s *Store) outputDatapoint(ctx context.Context, projectID int64, dataPointID string, create bool) (int64, bool, error) {
	if create {
		ids, err := s.EnsureDatapoints(ctx, projectID, []string{dataPointID})
		if err != nil {
			return 0, false, err
		}
		id, ok := ids[dataPointID]
		if !ok {
			return 0, false, fmt.Errorf("datapoint %q was not created", dataPointID)
		}
		return id, true, nil
	}
	var id int64
	err := s.pool.QueryRow(ctx, `SELECT id FROM datapoints WHERE project_id = $1 AND datapoint_id = $2`,
		projectID, dataPointID).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false, nil
	}
	return id, err == nil, err
}

// uniqueRows turns points into rows in primary-key order, keeping the last
// point of each time: COPY would fail on a repeated key.
func uniqueRows(datapoint int64, points []Point) []Row {
	rows := make([]Row, len(points))
	for i, p := range points {
		rows[i] = Row{Datapoint: datapoint, Time: p.Time, Value: p.Value}
	}
	slices.SortStableFunc(rows, func(a, b Row) int { return a.Time.Compare(b.Time) })
	out := rows[:0]
	for _, r := range rows {
		if n := len(out); n > 0 && out[n-1].Time.Equal(r.Time) {
			out[n-1] = r
			continue
		}
		out = append(out, r)
	}
	return out
}

// AppendVDPLog adds a log entry of type typ to a virtual datapoint without
// changing its status. The entry carries the current status code and
// text, so every entry has the shape api.md 2.10 describes; the row lock
// keeps a concurrent status change from slipping in between.
func (s *Store) AppendVDPLog(ctx context.Context, projectID int64, dataPointID, typ, message string) error {
	return s.tx(ctx, func(tx pgx.Tx) error {
		var id int64
		var code int
		err := tx.QueryRow(ctx, `SELECT id, status_code FROM virtual_datapoints
			WHERE project_id = $1 AND datapoint_id = $2 FOR SHARE`, projectID, dataPointID).Scan(&id, &code)
		if err != nil {
			return translate(err, fmt.Sprintf("virtual datapoint %q", dataPointID))
		}
		_, err = tx.Exec(ctx, `INSERT INTO virtual_datapoint_logs (vdp_id, ts, type, status_code, status_text, message)
			VALUES ($1, $2, $3, $4, $5, $6)`, id, time.Now().UnixNano(), typ, code, StatusText(code), message)
		return err
	})
}
