package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// AnalysisResult is one run of an instance over a period, with what it
// needs to be shown: its instance's function and component.
type AnalysisResult struct {
	ID                   string // uuid
	InstanceID           int64
	ProjectID            int64
	FunctionID           int64
	ComponentInProjectID int64
	Start, End           time.Time
	Weekly               bool
	Status               string
	Info                 string
	AnalyticsVersion     string
	CreatedAt            time.Time
	FinishedAt           *time.Time
	// Function is the analysis function of the instance as persisted.
	FunctionAlphanumericID         string
	FunctionNameEN, FunctionNameDE string
	// Outcome is the stored analytics.Outcome as JSON; nil while running
	// and for a Failed run. Lists (AnalysisResultsOf, LatestAnalysisResults)
	// carry only its no_data, signal_color, interpretation and summary.
	Outcome json.RawMessage
}

// resultColumns selects a result row r of instance i with function f.
const resultColumns = `r.id::text, r.instance_id, r.project_id, i.function_id, i.componentinproject_id, r.period_start, r.period_end,
	r.weekly, r.status, r.info, r.analytics_version, r.created_at, r.finished_at, f.alphanumeric_id, f.name_en, f.name_de`

// resultFrom joins a result with its instance and function.
const resultFrom = ` FROM analysis_results r JOIN analysis_instances i ON i.id = r.instance_id
	JOIN analysis_functions f ON f.id = i.function_id `

// outcomeBrief is the part of the outcome the lists show.
const outcomeBrief = `CASE WHEN r.outcome IS NULL THEN NULL ELSE jsonb_build_object('no_data', r.outcome->'no_data',
	'signal_color', r.outcome->'signal_color', 'interpretation', r.outcome->'interpretation', 'summary', r.outcome->'summary') END`

// resultOrder is newest period first, then newest run.
const resultOrder = ` r.period_end DESC, r.created_at DESC, r.id`

func scanResult(r pgx.Row) (AnalysisResult, error) {
	var a AnalysisResult
	var outcome []byte
	err := r.Scan(&a.ID, &a.InstanceID, &a.ProjectID, &a.FunctionID, &a.ComponentInProjectID, &a.Start, &a.End,
		&a.Weekly, &a.Status, &a.Info, &a.AnalyticsVersion, &a.CreatedAt, &a.FinishedAt,
		&a.FunctionAlphanumericID, &a.FunctionNameEN, &a.FunctionNameDE, &outcome)
	if outcome != nil {
		a.Outcome = outcome
	}
	return a, err
}

func collectResults(rows pgx.Rows, err error) ([]AnalysisResult, error) {
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (AnalysisResult, error) { return scanResult(r) })
}

// CreateManualRun queues a run of the project's instance over [start, end)
// (the caller has checked the period): a result row with status running
// and a new id, whose insertion wakes the runners of every node
// (bdp_analysis_runs). fault.NotFound when the project has no such
// instance.
func (s *Store) CreateManualRun(ctx context.Context, projectID, instanceID int64, start, end time.Time) (AnalysisResult, error) {
	var id string
	err := s.pool.QueryRow(ctx, `INSERT INTO analysis_results (id, instance_id, project_id, period_start, period_end, weekly, status)
		SELECT gen_random_uuid(), id, project_id, $3, $4, false, 'running' FROM analysis_instances WHERE project_id = $1 AND id = $2
		RETURNING id::text`, projectID, instanceID, start, end).Scan(&id)
	if err != nil {
		return AnalysisResult{}, translate(err, instanceWhat(instanceID))
	}
	return s.AnalysisResult(ctx, projectID, instanceID, id)
}

// AnalysisResult is one result of the project's instance with its whole
// outcome; fault.NotFound when the instance has no result with this id.
// id must be a uuid in text form.
func (s *Store) AnalysisResult(ctx context.Context, projectID, instanceID int64, id string) (AnalysisResult, error) {
	a, err := scanResult(s.pool.QueryRow(ctx, `SELECT `+resultColumns+`, r.outcome`+resultFrom+`
		WHERE r.project_id = $1 AND r.instance_id = $2 AND r.id = $3::uuid`, projectID, instanceID, id))
	return a, translate(err, fmt.Sprintf("result %s of analysis instance %d", id, instanceID))
}

// AnalysisResultsOf lists the results of one instance of the project,
// newest period first, each with the brief of its outcome; fault.NotFound
// when the project has no such instance.
func (s *Store) AnalysisResultsOf(ctx context.Context, projectID, instanceID int64) ([]AnalysisResult, error) {
	if _, err := s.AnalysisInstance(ctx, projectID, instanceID); err != nil {
		return nil, err
	}
	return collectResults(s.pool.Query(ctx, `SELECT `+resultColumns+`, `+outcomeBrief+resultFrom+`
		WHERE r.project_id = $1 AND r.instance_id = $2 ORDER BY`+resultOrder, projectID, instanceID))
}

// LatestAnalysisResults answers, for every instance of the project that
// has a result (of one mapped component only when componentInProjectID is
// above 0), its latest one: the one over the newest period, of those the
// newest run, whatever its status; each with the brief of its outcome,
// ordered by component and instance.
func (s *Store) LatestAnalysisResults(ctx context.Context, projectID, componentInProjectID int64) ([]AnalysisResult, error) {
	return collectResults(s.pool.Query(ctx, `SELECT * FROM (SELECT DISTINCT ON (r.instance_id) `+resultColumns+`, `+outcomeBrief+resultFrom+`
		WHERE r.project_id = $1 AND ($2::bigint = 0 OR i.componentinproject_id = $2::bigint) ORDER BY r.instance_id,`+resultOrder+`) latest
		ORDER BY componentinproject_id, instance_id`, projectID, componentInProjectID))
}

// AnalysisResultIDs answers the result ids of every instance of one mapped
// component of the project, by instance, newest period first.
func (s *Store) AnalysisResultIDs(ctx context.Context, projectID, componentInProjectID int64) (map[int64][]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT r.instance_id, r.id::text FROM analysis_results r
		JOIN analysis_instances i ON i.id = r.instance_id
		WHERE r.project_id = $1 AND i.componentinproject_id = $2 ORDER BY r.instance_id,`+resultOrder, projectID, componentInProjectID)
	if err != nil {
		return nil, err
	}
	out := map[int64][]string{}
	var instance int64
	var id string
	_, err = pgx.ForEachRow(rows, []any{&instance, &id}, func() error {
		out[instance] = append(out[instance], id)
		return nil
	})
	return out, err
}
