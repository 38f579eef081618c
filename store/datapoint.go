package store

import (
	"context"
	"fmt"
)

// DatapointSetpoints is a datapoint with its setpoint bounds (api.md 2.9),
// as PUT /v2/datapoint answers it; null bounds are cleared ones.
type DatapointSetpoints struct {
	DataPointID string   `json:"dataPointID"`
	HashID      string   `json:"hash_id"`
	ID          int64    `json:"id"`
	ProjectID   int64    `json:"project_id"`
	SetpointMax *float64 `json:"setpoint_max_value" nullable:"true"`
	SetpointMin *float64 `json:"setpoint_min_value" nullable:"true"`
}

// SetDatapointSetpoints sets both setpoint bounds of a project's datapoint,
// creating the datapoint when it has no data yet: bounds are set before
// the first setpoint is written, and a setpoint datapoint may report
// nothing until it is written. The caller validates the values (finite,
// min <= max).
func (s *Store) SetDatapointSetpoints(ctx context.Context, projectID int64, dataPointID string, minValue, maxValue float64) (DatapointSetpoints, error) {
	var d DatapointSetpoints
	err := s.pool.QueryRow(ctx, `
		INSERT INTO datapoints (project_id, datapoint_id, hash_id, setpoint_min_value, setpoint_max_value) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (project_id, datapoint_id) DO UPDATE SET setpoint_min_value = EXCLUDED.setpoint_min_value,
			setpoint_max_value = EXCLUDED.setpoint_max_value
		RETURNING `+setpointColumns, projectID, dataPointID, newHashID(), minValue, maxValue).
		Scan(&d.DataPointID, &d.HashID, &d.ID, &d.ProjectID, &d.SetpointMax, &d.SetpointMin)
	return d, translate(err, fmt.Sprintf("datapoint %q", dataPointID))
}

// ClearDatapointSetpoints removes both setpoint bounds of a project's
// datapoint: every setpoint to it is refused again. fault.NotFound when
// the project has no such datapoint.
func (s *Store) ClearDatapointSetpoints(ctx context.Context, projectID int64, dataPointID string) (DatapointSetpoints, error) {
	var d DatapointSetpoints
	err := s.pool.QueryRow(ctx, `
		UPDATE datapoints SET setpoint_min_value = NULL, setpoint_max_value = NULL
		WHERE project_id = $1 AND datapoint_id = $2
		RETURNING `+setpointColumns, projectID, dataPointID).
		Scan(&d.DataPointID, &d.HashID, &d.ID, &d.ProjectID, &d.SetpointMax, &d.SetpointMin)
	return d, translate(err, fmt.Sprintf("datapoint %q", dataPointID))
}

const setpointColumns = `datapoint_id, hash_id, id, project_id, setpoint_max_value, setpoint_min_value`

// DatapointSetpointsOf reads a project's datapoint with its setpoint
// bounds (GET /v2/datapoint); fault.NotFound when the project has no such
// datapoint.
func (s *Store) DatapointSetpointsOf(ctx context.Context, projectID int64, dataPointID string) (DatapointSetpoints, error) {
	var d DatapointSetpoints
	err := s.pool.QueryRow(ctx, `SELECT `+setpointColumns+` FROM datapoints WHERE project_id = $1 AND datapoint_id = $2`, projectID, dataPointID).
		Scan(&d.DataPointID, &d.HashID, &d.ID, &d.ProjectID, &d.SetpointMax, &d.SetpointMin)
	return d, translate(err, fmt.Sprintf("datapoint %q", dataPointID))
}
