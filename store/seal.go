package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/openbdp/bdp/store/chunkenc"
)

// Sealing moves a closed week of the head into chunks (chunks.go), a
// batch of datapoints per transaction: it deletes the batch's rows of that
// week's partition and the week's chunks they already have (a late write
// re-seals the week), merges them (the head wins at equal times), and
// writes the chunks anew. A row leaves the head only in the transaction
// that puts it in a chunk; a crash rolls the batch back whole, and the
// next pass starts it again. Unsealing moves chunks back into rows, for a
// rollback.

// SealBatchRows bounds the rows one seal transaction moves (and holds in
// memory): its datapoints are taken until their rows reach it, at least
// one.
const SealBatchRows = 250_000

// WeekRows is how many rows of one week a datapoint has in the head.
type WeekRows struct {
	Datapoint int64
	Rows      int64
}

// SealResult is what a seal transaction moved.
type SealResult struct {
	Datapoints int   // sealed (others were being sealed elsewhere)
	Rows       int64 // head rows moved into chunks
	Points     int64 // points in the chunks written (rows plus the chunks' points they joined)
	Chunks     int   // chunks written
	Bytes      int64 // their encoded size
}

// Weeks lists the weeks (Monday 00:00 UTC) of the head's partitions that
// end at or before horizon and hold rows: what a seal pass has to do.
func (s *Store) SealableWeeks(ctx context.Context, horizon time.Time) ([]time.Time, error) {
	weeks, err := s.partitionWeeks(ctx)
	if err != nil {
		return nil, err
	}
	var out []time.Time
	for _, w := range weeks {
		if w.AddDate(0, 0, 7).After(horizon) {
			continue
		}
		var any bool
		// The name comes from a time, never from input.
		if err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM `+partitionName(w)+`)`).Scan(&any); err != nil {
			return nil, fmt.Errorf("sealable weeks: %w", err)
		}
		if any {
			out = append(out, w)
		}
	}
	return out, nil
}

// partitionWeeks lists the weeks the head has partitions for, oldest
// first.
func (s *Store) partitionWeeks(ctx context.Context) ([]time.Time, error) {
	rows, err := s.pool.Query(ctx, `SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		WHERE i.inhparent = 'observations'::regclass`)
	if err != nil {
		return nil, fmt.Errorf("list partitions: %w", err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("list partitions: %w", err)
	}
	var weeks []time.Time
	for _, n := range names {
		if w, err := time.Parse("20060102", strings.TrimPrefix(n, "observations_w")); err == nil && partitionName(w) == n {
			weeks = append(weeks, w)
		}
	}
	slices.SortFunc(weeks, time.Time.Compare)
	return weeks, nil
}

// WeekRows lists the datapoints with head rows in a week, and how many.
func (s *Store) WeekRows(ctx context.Context, week time.Time) ([]WeekRows, error) {
	rows, err := s.pool.Query(ctx, `SELECT datapoint, count(*) FROM `+partitionName(weekStart(week))+` GROUP BY datapoint ORDER BY datapoint`)
	if err != nil {
		return nil, fmt.Errorf("rows of week %s: %w", week.Format(time.DateOnly), err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[WeekRows])
	if err != nil {
		return nil, fmt.Errorf("rows of week %s: %w", week.Format(time.DateOnly), err)
	}
	return out, nil
}

// SealBatches splits a week's datapoints into batches of about
// SealBatchRows rows.
func SealBatches(rows []WeekRows) [][]int64 {
	var out [][]int64
	var batch []int64
	var n int64
	for _, r := range rows {
		if len(batch) > 0 && n+r.Rows > SealBatchRows {
			out, batch, n = append(out, batch), nil, 0
		}
		batch, n = append(batch, r.Datapoint), n+r.Rows
	}
	if len(batch) > 0 {
		out = append(out, batch)
	}
	return out
}

// sealLock is the transaction lock a datapoint's chunks change under:
// sealing, unsealing and the replacement of a period (ReplaceOutputs).
const sealLock = `pg_advisory_xact_lock(hashtextextended('seal/' || $1::bigint::text, 0))`

// SealWeek seals one week of the given datapoints in one transaction;
// datapoints another transaction is sealing or unsealing are left out.
func (s *Store) SealWeek(ctx context.Context, week time.Time, datapoints []int64) (SealResult, error) {
	week = weekStart(week)
	codec, err := s.codecs.get()
	if err != nil {
		return SealResult{}, err
	}
	defer s.codecs.put(codec)
	var res SealResult
	err = s.tx(ctx, func(tx pgx.Tx) error {
		res = SealResult{}
		var locked []int64
		if err := tx.QueryRow(ctx, `SELECT coalesce(array_agg(dp), '{}') FROM unnest($1::bigint[]) dp
			WHERE pg_try_advisory_xact_lock(hashtextextended('seal/' || dp::text, 0))`, datapoints).Scan(&locked); err != nil {
			return err
		}
		if len(locked) == 0 {
			return nil
		}
		// The rows first, then the week's chunks: the order deletes of a
		// project or datapoint take them in, so neither waits for the
		// other in a circle.
		rowPoints, chunkPoints := map[int64][]chunkenc.Point{}, map[int64][]chunkenc.Point{}
		// Rows are deleted, and so locked, in key order, the order every
		// upsert of a late write locks them in (insertRows sorts): a seal
		// and a write that meet wait for each other instead of
		// deadlocking. A b-tree scan of datapoint = ANY(...) walks the
		// primary key in order (it sorts the array), so the plan must be
		// that scan; it is also the cheapest way (a FOR UPDATE pass before
		// the delete, as before, wrote every row twice and took 2-3 times
		// as long).
		part := partitionName(week)
		if _, err := tx.Exec(ctx, `SET LOCAL enable_seqscan = off; SET LOCAL enable_bitmapscan = off`); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `DELETE FROM `+part+` WHERE datapoint = ANY($1) RETURNING datapoint, time, value`, locked)
		if err != nil {
			return err
		}
		var dp int64
		var at time.Time
		var v float64
		_, err = pgx.ForEachRow(rows, []any{&dp, &at, &v}, func() error {
			rowPoints[dp] = append(rowPoints[dp], chunkenc.PointAt(at, v))
			res.Rows++
			return nil
		})
		if err != nil {
			return err
		}
		rows, err = tx.Query(ctx, `DELETE FROM observation_chunks WHERE datapoint = ANY($1) AND first_time >= $2 AND first_time < $3
			RETURNING datapoint, data`, locked, week, week.AddDate(0, 0, 7))
		if err != nil {
			return err
		}
		var data []byte
		_, err = pgx.ForEachRow(rows, []any{&dp, &data}, func() error {
			var err error
			chunkPoints[dp], err = codec.Decode(chunkPoints[dp], data)
			return err
		})
		if err != nil {
			return fmt.Errorf("read a sealed chunk: %w", err)
		}
		var out [][]any
		for _, dp := range locked {
			// The chunks' points, then the rows: at equal times the rows
			// (kept by the stable sort as the later) win.
			pts := append(chunkPoints[dp], rowPoints[dp]...)
			if len(pts) == 0 {
				continue
			}
			res.Datapoints++
			slices.SortStableFunc(pts, func(a, b chunkenc.Point) int { return cmp.Compare(a.UnixMicro, b.UnixMicro) })
			pts = lastOfEachTime(pts)
			res.Points += int64(len(pts))
			for part := range slices.Chunk(pts, ChunkPoints) {
				data, err := codec.Encode(nil, part)
				if err != nil {
					return err
				}
				out = append(out, []any{dp, part[0].Time(), part[len(part)-1].Time(), len(part), data})
				res.Chunks++
				res.Bytes += int64(len(data))
			}
		}
		_, err = tx.CopyFrom(ctx, pgx.Identifier{"observation_chunks"}, []string{"datapoint", "first_time", "last_time", "n", "data"}, pgx.CopyFromRows(out))
		return err
	})
	if err != nil {
		return SealResult{}, fmt.Errorf("seal week %s: %w", week.Format(time.DateOnly), err)
	}
	return res, nil
}

// lastOfEachTime keeps, of points sorted stably by time, the last at each
// time.
func lastOfEachTime(pts []chunkenc.Point) []chunkenc.Point {
	out := pts[:0]
	for i, p := range pts {
		if i+1 < len(pts) && pts[i+1].UnixMicro == p.UnixMicro {
			continue
		}
		out = append(out, p)
	}
	return out
}

// unsealRange moves the points of a datapoint's chunks that overlap
// [start, end) back into head rows, in tx, under the datapoint's seal
// lock: a period is then replaced (ReplaceOutputs) in the head alone. The
// head's own rows win at equal times.
func (s *Store) unsealRange(ctx context.Context, tx pgx.Tx, datapoint int64, start, end time.Time) error {
	if _, err := tx.Exec(ctx, `SELECT `+sealLock, datapoint); err != nil {
		return err
	}
	rows, err := tx.Query(ctx, `DELETE FROM observation_chunks WHERE datapoint = $1 AND first_time < $3 AND last_time >= $2 RETURNING data`,
		datapoint, start, end)
	if err != nil {
		return err
	}
	chunks, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
	if err != nil || len(chunks) == 0 {
		return err
	}
	return s.rowsFromChunks(ctx, tx, datapoint, chunks)
}

// rowsFromChunks writes the chunks' points as head rows of datapoint,
// leaving rows the head holds already.
func (s *Store) rowsFromChunks(ctx context.Context, tx pgx.Tx, datapoint int64, chunks [][]byte) error {
	codec, err := s.codecs.get()
	if err != nil {
		return err
	}
	defer s.codecs.put(codec)
	var pts []chunkenc.Point
	for _, c := range chunks {
		if pts, err = codec.Decode(pts, c); err != nil {
			return fmt.Errorf("read a sealed chunk: %w", err)
		}
	}
	if len(pts) == 0 {
		return nil
	}
	rows := make([]Row, len(pts))
	for i, p := range pts {
		rows[i] = Row{Datapoint: datapoint, Time: p.Time(), Value: p.Value}
	}
	if err := s.ensurePartitionsFor(ctx, rows); err != nil {
		return err
	}
	times, values := make([]time.Time, len(rows)), make([]float64, len(rows))
	for i, r := range rows {
		times[i], values[i] = r.Time, r.Value
	}
	_, err = tx.Exec(ctx, `INSERT INTO observations (datapoint, time, value)
		SELECT $1, t, v FROM unnest($2::timestamptz[], $3::float8[]) AS u(t, v)
		ON CONFLICT (datapoint, time) DO NOTHING`, datapoint, times, values)
	return err
}

// UnsealWeek moves one week of chunks back into head rows, a datapoint per
// transaction (the rollback of sealing); it answers the points moved.
func (s *Store) UnsealWeek(ctx context.Context, week time.Time) (int64, error) {
	week = weekStart(week)
	rows, err := s.pool.Query(ctx, `SELECT DISTINCT datapoint FROM observation_chunks WHERE first_time >= $1 AND first_time < $2`,
		week, week.AddDate(0, 0, 7))
	if err != nil {
		return 0, fmt.Errorf("unseal week %s: %w", week.Format(time.DateOnly), err)
	}
	dps, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return 0, fmt.Errorf("unseal week %s: %w", week.Format(time.DateOnly), err)
	}
	var moved int64
	for _, dp := range dps {
		err := s.tx(ctx, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `SELECT `+sealLock, dp); err != nil {
				return err
			}
			rows, err := tx.Query(ctx, `DELETE FROM observation_chunks WHERE datapoint = $1 AND first_time >= $2 AND first_time < $3 RETURNING n, data`,
				dp, week, week.AddDate(0, 0, 7))
			if err != nil {
				return err
			}
			var chunks [][]byte
			var n int64
			var data []byte
			if _, err := pgx.ForEachRow(rows, []any{&n, &data}, func() error {
				moved += n
				chunks = append(chunks, slices.Clone(data))
				return nil
			}); err != nil {
				return err
			}
			return s.rowsFromChunks(ctx, tx, dp, chunks)
		})
		if err != nil {
			return moved, fmt.Errorf("unseal week %s: %w", week.Format(time.DateOnly), err)
		}
	}
	return moved, nil
}

// TruncateIfEmpty empties a sealed week's partition, files and all, when
// it holds no live row (its deleted rows' space goes back at once, where
// VACUUM would leave the files their size); it waits at most a second
// for the lock and reports whether it truncated.
func (s *Store) TruncateIfEmpty(ctx context.Context, week time.Time) (bool, error) {
	part := partitionName(weekStart(week))
	truncated := false
	err := s.tx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SET LOCAL lock_timeout = '1s'`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `LOCK TABLE `+part+` IN ACCESS EXCLUSIVE MODE`); err != nil {
			return err
		}
		var any bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM `+part+`)`).Scan(&any); err != nil || any {
			return err
		}
		_, err := tx.Exec(ctx, `TRUNCATE `+part)
		truncated = err == nil
		return err
	})
	if isLockTimeout(err) {
		return false, nil // busy: the next pass tries again
	}
	if err != nil {
		return false, fmt.Errorf("truncate week %s: %w", week.Format(time.DateOnly), err)
	}
	return truncated, nil
}

func isLockTimeout(err error) bool {
	var pe interface{ SQLState() string }
	return errors.As(err, &pe) && pe.SQLState() == "55P03"
}

// SealedWeeks lists the weeks that have chunks, oldest first.
func (s *Store) SealedWeeks(ctx context.Context) ([]time.Time, error) {
	rows, err := s.pool.Query(ctx, `SELECT DISTINCT date_bin('7 days', first_time, '2000-01-03 00:00:00+00') AS w FROM observation_chunks ORDER BY w`)
	if err != nil {
		return nil, fmt.Errorf("sealed weeks: %w", err)
	}
	weeks, err := pgx.CollectRows(rows, pgx.RowTo[time.Time])
	if err != nil {
		return nil, fmt.Errorf("sealed weeks: %w", err)
	}
	return weeks, nil
}
