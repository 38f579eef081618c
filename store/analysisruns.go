package store

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
)

// The execution side of analysis runs (migration 00011): an
// analysis_results row with status 'running' is a run waiting in the
// queue; a worker claims it, reads what the run needs, and finishes it.
// Several nodes share the queue through FOR UPDATE SKIP LOCKED.

// analysisRunsChannel is where the trigger of migration 00011 announces
// every new 'running' row.
const analysisRunsChannel = "bdp_analysis_runs"

// Result statuses (migration 00011).
const (
	AnalysisRunning = "running"
	AnalysisSuccess = "Success"
	AnalysisFailed  = "Failed"
)

// AnalysisRun is a claimed run.
type AnalysisRun struct {
	ResultID   string
	InstanceID int64
	ProjectID  int64
	Start, End time.Time
	Weekly     bool
	// Attempts counts the claims of the row, this one included: more than
	// one means a worker took it before and never finished it (a crash).
	Attempts int
	// Waited is how long the row waited from its creation to this claim.
	Waited time.Duration
}

// ClaimAnalysisRuns claims up to limit waiting runs, those requested by
// hand before the weekly ones, each kind oldest first (and of runs queued
// together, the earlier period first: migration 00012): rows
// with status 'running' that no worker holds, or whose claim is older
// than stale (its worker is gone: a crash). It sets their claimed_at and
// counts the attempt. Rows other transactions are claiming are skipped,
// not waited for. Times are the database's, so nodes with skewed clocks
// agree on what is stale.
func (s *Store) ClaimAnalysisRuns(ctx context.Context, limit int, stale time.Duration) ([]AnalysisRun, error) {
	if limit <= 0 {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, `
		UPDATE analysis_results r SET claimed_at = now(), attempts = r.attempts + 1
		FROM (SELECT id FROM analysis_results
		      WHERE status = 'running' AND (claimed_at IS NULL OR claimed_at < now() - make_interval(secs => $2))
		      ORDER BY weekly, created_at, period_start LIMIT $1 FOR UPDATE SKIP LOCKED) w
		WHERE r.id = w.id
		RETURNING r.id::text, r.instance_id, r.project_id, r.period_start, r.period_end, r.weekly, r.attempts,
		          extract(epoch FROM r.claimed_at - r.created_at)::float8`, limit, stale.Seconds())
	if err != nil {
		return nil, fmt.Errorf("claim analysis runs: %w", err)
	}
	runs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (AnalysisRun, error) {
		var a AnalysisRun
		var waited float64
		err := r.Scan(&a.ResultID, &a.InstanceID, &a.ProjectID, &a.Start, &a.End, &a.Weekly, &a.Attempts, &waited)
		a.Waited = time.Duration(max(waited, 0) * float64(time.Second))
		return a, err
	})
	if err != nil {
		return nil, fmt.Errorf("claim analysis runs: %w", err)
	}
	return runs, nil
}

// AnalysisRunEnd is how a run ended.
type AnalysisRunEnd struct {
	Status  string // AnalysisSuccess or AnalysisFailed
	Info    string
	Outcome []byte // the outcome as JSON; nil for a failure
	Version string // analytics_version: the binary's version
}

// FinishAnalysisRun writes how a run ended, if the row is still
// 'running': the first of two workers to finish a run (one that took a
// stale claim over, say) wins. ok tells whether this call wrote it.
func (s *Store) FinishAnalysisRun(ctx context.Context, resultID string, end AnalysisRunEnd) (ok bool, err error) {
	if end.Status != AnalysisSuccess && end.Status != AnalysisFailed {
		return false, fmt.Errorf("finish analysis run: status %q is not %s or %s", end.Status, AnalysisSuccess, AnalysisFailed)
	}
	tag, err := s.pool.Exec(ctx, `UPDATE analysis_results SET status = $2, info = $3, outcome = $4,
		analytics_version = $5, finished_at = now() WHERE id = $1::uuid AND status = 'running'`,
		resultID, end.Status, end.Info, end.Outcome, end.Version)
	if err != nil {
		return false, fmt.Errorf("finish analysis run %s: %w", resultID, err)
	}
	return tag.RowsAffected() == 1, nil
}

// ReleaseAnalysisRun gives a claimed run back to the queue uncounted: a
// run cut short by shutdown is taken again at once, by another node or at
// the next start, instead of waiting until its claim is stale.
func (s *Store) ReleaseAnalysisRun(ctx context.Context, resultID string) error {
	_, err := s.pool.Exec(ctx, `UPDATE analysis_results SET claimed_at = NULL, attempts = greatest(attempts - 1, 0)
		WHERE id = $1::uuid AND status = 'running'`, resultID)
	if err != nil {
		return fmt.Errorf("release analysis run %s: %w", resultID, err)
	}
	return nil
}

// AnalysisRunSetup is what a run reads besides the series.
type AnalysisRunSetup struct {
	FunctionID int64
	// Component is the alphanumeric id of the mapped component's catalog
	// component.
	Component string
	// Pins maps the alphanumeric id of every mapped pin to its datapoint's
	// row id.
	Pins map[string]int64
	// Attributes maps the key of every filled-in attribute to its value.
	Attributes map[string]string
	// Previous is the outcome (JSON) of the newest Success of the same
	// instance over the period of equal length that ends where this run
	// starts; nil when there is none.
	Previous []byte
}

// AnalysisRunSetup reads, in one query, what run needs besides the
// series; fault.NotFound when its instance is gone.
func (s *Store) AnalysisRunSetup(ctx context.Context, run AnalysisRun) (AnalysisRunSetup, error) {
	setup := AnalysisRunSetup{Pins: map[string]int64{}, Attributes: map[string]string{}}
	prevStart := run.Start.Add(-run.End.Sub(run.Start))
	err := s.pool.QueryRow(ctx, `
		SELECT i.function_id, c.alphanumeric_id,
		       COALESCE((SELECT json_object_agg(p.alphanumeric_id, m.datapoint_id) FROM component_pin_mappings m
		                 JOIN component_pins p ON p.id = m.pin_id WHERE m.componentinproject_id = cip.id), '{}'),
		       COALESCE((SELECT json_object_agg(d.key, v.value) FROM component_attribute_values v
		                 JOIN component_attribute_definitions d ON d.id = v.attribute_definition_id
		                 WHERE v.componentinproject_id = cip.id), '{}'),
		       (SELECT r.outcome FROM analysis_results r WHERE r.instance_id = i.id AND r.status = 'Success'
		               AND r.period_start = $2 AND r.period_end = $3 ORDER BY r.finished_at DESC LIMIT 1)
		FROM analysis_instances i
		JOIN components_in_project cip ON cip.id = i.componentinproject_id
		JOIN components c ON c.id = cip.component_id
		WHERE i.id = $1`, run.InstanceID, prevStart, run.Start).
		Scan(&setup.FunctionID, &setup.Component, &setup.Pins, &setup.Attributes, &setup.Previous)
	if err != nil {
		return AnalysisRunSetup{}, translate(err, fmt.Sprintf("analysis instance %d", run.InstanceID))
	}
	return setup, nil
}

// ReadAnalysisSeries reads the stored series of datapoints (by a name the
// caller chooses, a pin) over [start, end], each with the last point
// before start, which sets the value at start. A point at end describes
// no time of the period, but it is a meter's reading that closes it: the
// consumption of a month read at midnight on its first and last day
// includes the last day. Every read of every series goes in one round
// trip; each is an index-only range scan.
func (s *Store) ReadAnalysisSeries(ctx context.Context, datapoints map[string]int64, start, end time.Time) (map[string][]Point, error) {
	out := make(map[string][]Point, len(datapoints))
	if len(datapoints) == 0 {
		return out, nil
	}
	names := make([]string, 0, len(datapoints))
	b := &pgx.Batch{}
	for name, dp := range datapoints {
		names = append(names, name)
		// The last before start, then [start, end] (end + 1 µs exclusive),
		// each over the head and the sealed chunks (chunks.go).
		b.Queue(mergedQuery("DESC"), dp, "-infinity", start, 1)
		b.Queue(mergedQuery("ASC"), dp, start, end.Add(time.Microsecond), nil)
	}
	br := s.pool.SendBatch(ctx, b)
	defer br.Close()
	for _, name := range names {
		var pts []Point
		for i, r := range []struct {
			from, to time.Time
			newest   bool
			limit    int
		}{{time.Time{}, start, true, 1}, {start, end.Add(time.Microsecond), false, 0}} {
			rows, err := br.Query()
			if err != nil {
				return nil, fmt.Errorf("read series of %s: %w", name, err)
			}
			head, chunks, err := collectMerged(rows, 0)
			if err != nil {
				return nil, fmt.Errorf("read series of %s: %w", name, err)
			}
			if i == 0 {
				slices.Reverse(head)
			}
			part, err := s.finishMerged(head, chunks, r.from, r.to, r.newest, r.limit)
			if err != nil {
				return nil, fmt.Errorf("read series of %s: %w", name, err)
			}
			pts = append(pts, part...)
		}
		out[name] = pts
	}
	return out, br.Close()
}

// decodePoint decodes a (time, value) row in PostgreSQL's binary format,
// which pgx asks for with these column types: a big-endian int64 of
// microseconds since 2000-01-01 UTC and a big-endian float64. Decoded by
// hand, 4 weeks of 1-minute data (40,320 rows) read in about 19 ms
// instead of 29 ms with Scan (medians of 5 runs of
// BenchmarkAnalysisSeriesRead on 2 shared cores).
func decodePoint(raw [][]byte) (Point, error) {
	if len(raw) != 2 || len(raw[0]) != 8 || len(raw[1]) != 8 {
		return Point{}, errors.New("unexpected binary (time, value) row")
	}
	us := int64(binary.BigEndian.Uint64(raw[0])) + microsecondsToY2K
	return Point{Time: time.UnixMicro(us).UTC(), Value: math.Float64frombits(binary.BigEndian.Uint64(raw[1]))}, nil
}

// ScheduleWeeklyAnalysisRuns makes the weekly runs of every enabled
// instance for each week that starts at from, from + 7 days, ... up to
// to (Mondays 00:00 UTC; a week is [Monday, next Monday)), except weeks
// that ended before the instance was created and weeks it was already
// made for. The partial unique index analysis_results_weekly is what
// keeps a week from being run twice, across restarts and nodes: a second
// scheduler, at once or later, inserts nothing. It returns how many runs
// it made.
func (s *Store) ScheduleWeeklyAnalysisRuns(ctx context.Context, from, to time.Time) (int64, error) {
	// 168 hours, not 7 days: an interval in days follows the session's
	// time zone across daylight-saving changes.
	tag, err := s.pool.Exec(ctx, `
		INSERT INTO analysis_results (id, instance_id, project_id, period_start, period_end, weekly)
		SELECT gen_random_uuid(), i.id, i.project_id, w.start, w.start + interval '168 hours', true
		FROM analysis_instances i
		CROSS JOIN generate_series($1::timestamptz, $2::timestamptz, interval '168 hours') w(start)
		WHERE i.enabled AND w.start + interval '168 hours' > i.created_at
		ORDER BY w.start, i.id
		ON CONFLICT (instance_id, period_start) WHERE weekly DO NOTHING`, from, to)
	if err != nil {
		return 0, fmt.Errorf("schedule weekly analysis runs: %w", err)
	}
	return tag.RowsAffected(), nil
}

// ListenAnalysisRuns calls wake when a run may be waiting: for every new
// run any node announces, and each time its LISTEN connection is
// (re)established, since announcements of a gap are lost, until ctx ends.
// wake runs on this goroutine and must not block.
func (s *Store) ListenAnalysisRuns(ctx context.Context, wake func()) {
	s.listenChannel(ctx, analysisRunsChannel, func(bool) { wake() }, func(string) { wake() })
}
