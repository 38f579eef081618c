package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// AnalysisInstance is an analysis function configured on a mapped
// component of a project (api.md 2.16). At most one exists per function
// and component; Enabled ones also run every week.
type AnalysisInstance struct {
	ID, ProjectID        int64
	FunctionID           int64
	ComponentInProjectID int64
	Name, Description    string
	Enabled              bool
	CreatedAt            time.Time
}

// NewAnalysisInstance is what an instance is created from; the caller has
// checked that the function exists and fits the component.
type NewAnalysisInstance struct {
	FunctionID, ComponentInProjectID int64
	Name, Description                string
	Enabled                          bool
}

// AnalysisInstancePatch holds the changeable fields; nil keeps one as is.
// Function and component are fixed: the results of an instance belong to
// both.
type AnalysisInstancePatch struct {
	Name, Description *string
	Enabled           *bool
}

const instanceColumns = `id, project_id, function_id, componentinproject_id, name, description, enabled, created_at`

func scanInstance(r pgx.Row) (AnalysisInstance, error) {
	var a AnalysisInstance
	err := r.Scan(&a.ID, &a.ProjectID, &a.FunctionID, &a.ComponentInProjectID, &a.Name, &a.Description, &a.Enabled, &a.CreatedAt)
	return a, err
}

// instanceWhat names the instance the way every read and write of one
// reports its absence.
func instanceWhat(id int64) string { return fmt.Sprintf("analysis instance %d", id) }

// CreateAnalysisInstance creates an instance on a component mapped into the
// same project: fault.NotFound when the project has no such mapped
// component (or the function row is gone), fault.Conflict naming both ids
// when the pair has an instance already.
func (s *Store) CreateAnalysisInstance(ctx context.Context, projectID int64, n NewAnalysisInstance) (AnalysisInstance, error) {
	if _, err := s.ComponentInProjectExists(ctx, projectID, n.ComponentInProjectID); err != nil {
		return AnalysisInstance{}, err
	}
	a, err := scanInstance(s.pool.QueryRow(ctx, `INSERT INTO analysis_instances
		(project_id, function_id, componentinproject_id, name, description, enabled)
		VALUES ($1, $2, $3, $4, $5, $6) RETURNING `+instanceColumns,
		projectID, n.FunctionID, n.ComponentInProjectID, n.Name, n.Description, n.Enabled))
	if err != nil {
		return AnalysisInstance{}, translate(err, fmt.Sprintf("an analysis instance for componentinproject_id %d and analysisfunction_id %d",
			n.ComponentInProjectID, n.FunctionID))
	}
	return a, nil
}

// AnalysisInstance is one instance of the project; fault.NotFound when the
// project has none with this id.
func (s *Store) AnalysisInstance(ctx context.Context, projectID, id int64) (AnalysisInstance, error) {
	a, err := scanInstance(s.pool.QueryRow(ctx, `SELECT `+instanceColumns+` FROM analysis_instances
		WHERE project_id = $1 AND id = $2`, projectID, id))
	return a, translate(err, instanceWhat(id))
}

// AnalysisInstances lists the project's instances by id.
func (s *Store) AnalysisInstances(ctx context.Context, projectID int64) ([]AnalysisInstance, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+instanceColumns+` FROM analysis_instances WHERE project_id = $1 ORDER BY id`, projectID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (AnalysisInstance, error) { return scanInstance(r) })
}

// UpdateAnalysisInstance changes the given fields and answers the
// instance as it is then.
func (s *Store) UpdateAnalysisInstance(ctx context.Context, projectID, id int64, p AnalysisInstancePatch) (AnalysisInstance, error) {
	a, err := scanInstance(s.pool.QueryRow(ctx, `UPDATE analysis_instances SET name = COALESCE($3, name),
		description = COALESCE($4, description), enabled = COALESCE($5, enabled)
		WHERE project_id = $1 AND id = $2 RETURNING `+instanceColumns, projectID, id, p.Name, p.Description, p.Enabled))
	return a, translate(err, instanceWhat(id))
}

// DeleteAnalysisInstance removes an instance with its results (a run still
// waiting or computing goes too: its row is gone when the worker writes,
// which changes nothing) and answers what it was.
func (s *Store) DeleteAnalysisInstance(ctx context.Context, projectID, id int64) (AnalysisInstance, error) {
	a, err := scanInstance(s.pool.QueryRow(ctx, `DELETE FROM analysis_instances WHERE project_id = $1 AND id = $2
		RETURNING `+instanceColumns, projectID, id))
	return a, translate(err, instanceWhat(id))
}

// MappedDatapoints answers the dataPointIDs mapped on the pins of each of
// the project's mapped components that has any: what its analyses read.
func (s *Store) MappedDatapoints(ctx context.Context, projectID int64) (map[int64][]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT m.componentinproject_id, d.datapoint_id FROM component_pin_mappings m
		JOIN components_in_project c ON c.id = m.componentinproject_id JOIN datapoints d ON d.id = m.datapoint_id
		WHERE c.project_id = $1 ORDER BY 1, 2`, projectID)
	if err != nil {
		return nil, err
	}
	out := map[int64][]string{}
	var cip int64
	var dp string
	_, err = pgx.ForEachRow(rows, []any{&cip, &dp}, func() error {
		out[cip] = append(out[cip], dp)
		return nil
	})
	return out, err
}
