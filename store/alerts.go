package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// Alert types: what made a virtual datapoint need attention.
const (
	// AlertStatus: the virtual datapoint is in a failure state
	// (AlertStatuses).
	AlertStatus = "virtual_datapoint_status"
	// AlertCalculationError: a calculation emitted nothing because of an
	// error. It is also the type of the log entry the engine writes then
	// (actors.LogCalcErrors).
	AlertCalculationError = "calculation_error"
)

// AlertStatuses are the failure states of api.md 3.1: a virtual datapoint
// in one of them is an alert until it moves on.
var AlertStatuses = []int{StatusCreationFailed, StatusStartFailed, StatusStopFailed, StatusHealthCheckFails, StatusDeleteFailed}

// Alert is one item of GET /v2/project/{project_id}/alerts.
type Alert struct {
	Type        string `json:"type" doc:"virtual_datapoint_status (a failure state) or calculation_error"`
	DataPointID string `json:"dataPointID" doc:"the virtual datapoint"`
	StatusCode  int    `json:"status_code" doc:"virtual_datapoint_status: the current status; calculation_error: the status when the error was logged"`
	Status      string `json:"status" doc:"the text of status_code"`
	Message     string `json:"message" doc:"virtual_datapoint_status: the message of the change into that status; calculation_error: the error; a dataPointID the caller may not read (TagAuths) appears as (hidden)"`
	TS          string `json:"ts" doc:"unix time in nanoseconds: when the status was entered, or when the error was logged"`
}

// alertsSQL selects a project's alerts: one per virtual datapoint in a
// failure state, dated by the status change that put it there, and one
// per virtual datapoint whose newest calculation error was logged at or
// after $3 (unix nanoseconds). Both walk the log index (vdp_id, id)
// backwards and stop at the first entry of their type.
const alertsSQL = `
	WITH alerts AS (
		SELECT $4::text AS type, v.datapoint_id, v.status_code, COALESCE(l.message, '') AS message, COALESCE(l.ts, 0) AS ts
		FROM virtual_datapoints v
		LEFT JOIN LATERAL (SELECT ts, message FROM virtual_datapoint_logs
			WHERE vdp_id = v.id AND type = 'status_change' ORDER BY id DESC LIMIT 1) l ON true
		WHERE v.project_id = $1 AND v.status_code = ANY($2)
		UNION ALL
		SELECT $5::text, v.datapoint_id, l.status_code, l.message, l.ts
		FROM virtual_datapoints v
		CROSS JOIN LATERAL (SELECT ts, status_code, message FROM virtual_datapoint_logs
			WHERE vdp_id = v.id AND type = $5 ORDER BY id DESC LIMIT 1) l
		WHERE v.project_id = $1 AND l.ts >= $3
	)`

// ProjectAlerts pages through the alerts of a project, newest first (ties
// by type, then dataPointID), and answers their total. Calculation errors
// count when logged at or after since.
func (s *Store) ProjectAlerts(ctx context.Context, projectID int64, since time.Time, page, perPage int) ([]Alert, int, error) {
	args := []any{projectID, AlertStatuses, since.UnixNano(), AlertStatus, AlertCalculationError}
	var total int
	if err := s.pool.QueryRow(ctx, alertsSQL+` SELECT count(*) FROM alerts`, args...).Scan(&total); err != nil {
		return nil, 0, err
	}
	if page-1 > total/perPage { // past the end; (page-1)*perPage could overflow
		return []Alert{}, total, nil
	}
	rows, err := s.pool.Query(ctx, alertsSQL+` SELECT type, datapoint_id, status_code, message, ts::text FROM alerts
		ORDER BY ts DESC, type, datapoint_id LIMIT $6 OFFSET $7`, append(args, perPage, (page-1)*perPage)...)
	if err != nil {
		return nil, 0, err
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Alert, error) {
		var a Alert
		err := r.Scan(&a.Type, &a.DataPointID, &a.StatusCode, &a.Message, &a.TS)
		a.Status = StatusText(a.StatusCode)
		return a, err
	})
	return list, total, err
}
