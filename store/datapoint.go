package store

import (
	"context"
	"fmt"
)

// DatapointSetpoints is a datapoint with its setpoint bounds (api.md 2.9),
// as PUT /v2/datapoint answers it.
type DatapointSetpoints struct {
	DataPointID string  `json:"dataPointID"`
	HashID      string  `json:"hash_id"`
	ID          int64   `json:"id"`
	ProjectID   int64   `json:"project_id"`
	SetpointMax float64 `json:"setpoint_max_value"`
	SetpointMin float64 `json:"setpoint_min_value"`
}

// SetDatapointSetpoints sets both setpoint bounds of an existing datapoint
// of a project; fault.NotFound when the project has no such dataPointID.
// The caller validates the values (finite, min <= max); the datapoint is
// not created here, since only an observation creates one (decisions.md 4).
func (s *Store) SetDatapointSetpoints(ctx context.Context, projectID int64, dataPointID string, minValue, maxValue float64) (DatapointSetpoints, error) {
	var d DatapointSetpoints
	err := s.pool.QueryRow(ctx, `
		UPDATE datapoints SET setpoint_min_value = $3, setpoint_max_value = $4
		WHERE project_id = $1 AND datapoint_id = $2
		RETURNING datapoint_id, hash_id, id, project_id, setpoint_max_value, setpoint_min_value`,
		projectID, dataPointID, minValue, maxValue).
		Scan(&d.DataPointID, &d.HashID, &d.ID, &d.ProjectID, &d.SetpointMax, &d.SetpointMin)
	if err != nil {
		return DatapointSetpoints{}, translate(err, fmt.Sprintf("datapoint %q", dataPointID))
	}
	return d, nil
}
