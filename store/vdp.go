package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/openbdp/bdp/fault"
)

// Virtual datapoint status codes (api.md 3.1).
const (
	StatusCreated          = 100
	StatusCreationFailed   = 101
	StatusReadyToStart     = 102
	StatusStarting         = 200
	StatusStartFailed      = 201
	StatusRunning          = 202
	StatusStopping         = 300
	StatusStopFailed       = 301
	StatusStopped          = 302
	StatusMaintenance      = 303
	StatusHealthCheckFails = 304
	StatusDeleting         = 500
	StatusDeleteFailed     = 501
)

// StatusText is the text of a status code (api.md 3.1).
func StatusText(code int) string {
	switch code {
	case StatusCreated:
		return "Created"
	case StatusCreationFailed:
		return "Creation failed"
	case StatusReadyToStart:
		return "Ready to start"
	case StatusStarting:
		return "Starting"
	case StatusStartFailed:
		return "Start failed"
	case StatusRunning:
		return "Running"
	case StatusStopping:
		return "Stopping"
	case StatusStopFailed:
		return "Stop failed"
	case StatusStopped:
		return "Stopped"
	case StatusMaintenance:
		return "Stopped due to technical maintenance"
	case StatusHealthCheckFails:
		return "Health check failed"
	case StatusDeleting:
		return "Deleting"
	case StatusDeleteFailed:
		return "Delete failed"
	}
	return fmt.Sprintf("Status %d", code)
}

// VDPLog is one log entry of a virtual datapoint.
type VDPLog struct {
	Message    string `json:"message" doc:"a dataPointID the caller may not read (TagAuths) appears as (hidden)"`
	StatusCode int    `json:"status_code"`
	StatusText string `json:"status_text"`
	TS         string `json:"ts" doc:"unix time in nanoseconds"`
	Type       string `json:"type"`
}

// VDP is a stored virtual datapoint.
type VDP struct {
	ProjectID   int64
	DataPointID string
	Type        string
	Description string
	Config      json.RawMessage // {pins, parameters} with defaults filled in
	StatusCode  int
	Logs        []VDPLog
	// CatchUpFrom is where its current run's live calculation began, in
	// event time (actors.Engine.Start); zero when unknown. Only
	// MarkResuming and VDPsIn read it.
	CatchUpFrom time.Time
}

// StatusChange is one move of the state table, with its log message.
type StatusChange struct {
	Code    int
	Message string
	// CatchUpFrom, when not zero, is stored with the change as where the
	// run that the change records began to calculate (VDP.CatchUpFrom).
	CatchUpFrom time.Time
}

func insertLog(ctx context.Context, tx pgx.Tx, vdpID int64, c StatusChange) error {
	_, err := tx.Exec(ctx, `INSERT INTO virtual_datapoint_logs (vdp_id, ts, type, status_code, status_text, message)
		VALUES ($1, $2, 'status_change', $3, $4, $5)`, vdpID, time.Now().UnixNano(), c.Code, StatusText(c.Code), c.Message)
	return err
}

// CreateVDP stores a new virtual datapoint and walks it through the given
// status changes (Created, then Ready to start), all in one transaction.
func (s *Store) CreateVDP(ctx context.Context, v VDP, changes ...StatusChange) (VDP, error) {
	err := s.tx(ctx, func(tx pgx.Tx) error {
		var id int64
		final := changes[len(changes)-1].Code
		err := tx.QueryRow(ctx, `INSERT INTO virtual_datapoints (project_id, datapoint_id, type, description, config, status_code)
			VALUES ($1, $2, $3, $4, $5, $6) RETURNING id`, v.ProjectID, v.DataPointID, v.Type, v.Description, v.Config, final).Scan(&id)
		if err != nil {
			return translate(err, fmt.Sprintf("virtual datapoint %q", v.DataPointID))
		}
		for _, c := range changes {
			if err := insertLog(ctx, tx, id, c); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return VDP{}, translate(err, "virtual datapoint")
	}
	return s.VDP(ctx, v.ProjectID, v.DataPointID)
}

// VDP returns a virtual datapoint with its logs, oldest first.
func (s *Store) VDP(ctx context.Context, projectID int64, dataPointID string) (VDP, error) {
	v := VDP{ProjectID: projectID, DataPointID: dataPointID}
	var id int64
	err := s.pool.QueryRow(ctx, `SELECT id, type, description, config, status_code FROM virtual_datapoints
		WHERE project_id = $1 AND datapoint_id = $2`, projectID, dataPointID).
		Scan(&id, &v.Type, &v.Description, &v.Config, &v.StatusCode)
	if err != nil {
		return v, translate(err, fmt.Sprintf("virtual datapoint %q", dataPointID))
	}
	rows, err := s.pool.Query(ctx, `SELECT message, status_code, status_text, ts::text, type
		FROM virtual_datapoint_logs WHERE vdp_id = $1 ORDER BY id`, id)
	if err != nil {
		return v, err
	}
	v.Logs, err = pgx.CollectRows(rows, pgx.RowToStructByPos[VDPLog])
	return v, err
}

// ChangeVDPStatus moves a virtual datapoint to a new status and logs it,
// but only from one of the given statuses (none: from any); otherwise it
// answers a conflict naming the current status. State changes are
// persisted before anyone is told.
func (s *Store) ChangeVDPStatus(ctx context.Context, projectID int64, dataPointID string, c StatusChange, from ...int) (VDP, error) {
	err := s.tx(ctx, func(tx pgx.Tx) error {
		var id int64
		var current int
		err := tx.QueryRow(ctx, `SELECT id, status_code FROM virtual_datapoints
			WHERE project_id = $1 AND datapoint_id = $2 FOR UPDATE`, projectID, dataPointID).Scan(&id, &current)
		if err != nil {
			return translate(err, fmt.Sprintf("virtual datapoint %q", dataPointID))
		}
		if len(from) > 0 && !containsInt(from, current) {
			return fault.Conflictf("virtual datapoint %q is %s (%d); it cannot move to %s", dataPointID,
				StatusText(current), current, StatusText(c.Code))
		}
		var from *time.Time
		if !c.CatchUpFrom.IsZero() {
			from = &c.CatchUpFrom
		}
		if _, err := tx.Exec(ctx, `UPDATE virtual_datapoints SET status_code = $2, catch_up_from = coalesce($3, catch_up_from)
			WHERE id = $1`, id, c.Code, from); err != nil {
			return err
		}
		return insertLog(ctx, tx, id, c)
	})
	if err != nil {
		return VDP{}, err
	}
	return s.VDP(ctx, projectID, dataPointID)
}

func containsInt(list []int, x int) bool {
	for _, v := range list {
		if v == x {
			return true
		}
	}
	return false
}

// UpdateVDPDescription changes only the description; the status stays.
func (s *Store) UpdateVDPDescription(ctx context.Context, projectID int64, dataPointID, description string) (VDP, error) {
	tag, err := s.pool.Exec(ctx, `UPDATE virtual_datapoints SET description = $3 WHERE project_id = $1 AND datapoint_id = $2`,
		projectID, dataPointID, description)
	if err == nil && tag.RowsAffected() == 0 {
		err = pgx.ErrNoRows
	}
	if err != nil {
		return VDP{}, translate(err, fmt.Sprintf("virtual datapoint %q", dataPointID))
	}
	return s.VDP(ctx, projectID, dataPointID)
}

// DeleteVDP removes a virtual datapoint that is not active (Starting,
// Running or Stopping answer a conflict). With purge its output datapoint
// goes too, with its tags and observations, in the same transaction as
// the record (aedifion's purge); without, the output's stored timeseries
// stays. It returns the record as it was last, with status Deleting.
func (s *Store) DeleteVDP(ctx context.Context, projectID int64, dataPointID string, message string, purge bool) (VDP, error) {
	v, err := s.ChangeVDPStatus(ctx, projectID, dataPointID, StatusChange{Code: StatusDeleting, Message: message},
		StatusCreated, StatusCreationFailed, StatusReadyToStart, StatusStartFailed, StatusStopFailed, StatusStopped,
		StatusMaintenance, StatusHealthCheckFails, StatusDeleteFailed)
	if err != nil {
		return v, err
	}
	err = s.tx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM virtual_datapoints WHERE project_id = $1 AND datapoint_id = $2`, projectID, dataPointID); err != nil {
			return err
		}
		if !purge {
			return nil
		}
		// Observations have no foreign key (it would slow ingestion), so
		// they go by the id the datapoint had; its tags cascade.
		var id int64
		err := tx.QueryRow(ctx, `DELETE FROM datapoints WHERE project_id = $1 AND datapoint_id = $2 RETURNING id`, projectID, dataPointID).Scan(&id)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		// The head first, then the chunks, each its own statement: a seal
		// of the datapoint that commits meanwhile is then seen by the
		// second (the order a seal takes its rows in, so neither waits
		// for the other in a circle).
		for _, table := range []string{"observations", "observation_chunks"} {
			if _, err := tx.Exec(ctx, `DELETE FROM `+table+` WHERE datapoint = $1`, id); err != nil {
				return err
			}
		}
		return nil
	})
	return v, translate(err, "virtual datapoint")
}

// VDPSummary is a list item.
type VDPSummary struct {
	DataPointID string `json:"dataPointID"`
	Status      string `json:"status"`
	StatusCode  int    `json:"status_code"`
}

// ListVDPs pages through a project's virtual datapoints, ordered by
// dataPointID; search matches within dataPointID and description (case
// insensitive), status filters by code when not nil.
func (s *Store) ListVDPs(ctx context.Context, projectID int64, search string, status *int, page, perPage int) ([]VDPSummary, int, error) {
	var total int
	where := `project_id = $1 AND ($2 = '' OR strpos(lower(datapoint_id || ' ' || description), lower($2)) > 0)
		AND ($3::bigint IS NULL OR status_code = $3)`
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM virtual_datapoints WHERE `+where, projectID, search, status).Scan(&total); err != nil {
		return nil, 0, err
	}
	if page-1 > total/perPage { // past the end; (page-1)*perPage could overflow
		return []VDPSummary{}, total, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT datapoint_id, status_code FROM virtual_datapoints WHERE `+where+`
		ORDER BY datapoint_id LIMIT $4 OFFSET $5`, projectID, search, status, perPage, (page-1)*perPage)
	if err != nil {
		return nil, 0, err
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (VDPSummary, error) {
		var v VDPSummary
		err := r.Scan(&v.DataPointID, &v.StatusCode)
		v.Status = StatusText(v.StatusCode)
		return v, err
	})
	return list, total, err
}

// ProjectVDPConfigs returns the configuration of every virtual datapoint
// of a project by its dataPointID, for loop detection.
func (s *Store) ProjectVDPConfigs(ctx context.Context, projectID int64) (map[string]json.RawMessage, error) {
	rows, err := s.pool.Query(ctx, `SELECT datapoint_id, config FROM virtual_datapoints WHERE project_id = $1`, projectID)
	if err != nil {
		return nil, err
	}
	out := map[string]json.RawMessage{}
	var id string
	var cfg json.RawMessage
	_, err = pgx.ForEachRow(rows, []any{&id, &cfg}, func() error {
		out[id] = append(json.RawMessage(nil), cfg...)
		return nil
	})
	return out, err
}

// AddVDPLog appends a log entry of another type than status_change (a
// calculation error, say); status_code and status_text are the current
// status, so every entry has the shape api.md 2.10 describes.
func (s *Store) AddVDPLog(ctx context.Context, projectID int64, dataPointID, typ, message string) error {
	var id int64
	var code int
	err := s.pool.QueryRow(ctx, `SELECT id, status_code FROM virtual_datapoints WHERE project_id = $1 AND datapoint_id = $2`,
		projectID, dataPointID).Scan(&id, &code)
	if err != nil {
		return translate(err, fmt.Sprintf("virtual datapoint %q", dataPointID))
	}
	_, err = s.pool.Exec(ctx, `INSERT INTO virtual_datapoint_logs (vdp_id, ts, type, status_code, status_text, message)
		VALUES ($1, $2, $3, $4, $5, $6)`, id, time.Now().UnixNano(), typ, code, StatusText(code), message)
	return err
}
