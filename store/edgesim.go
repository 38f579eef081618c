package store

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// SetpointWritingProjects lists, by id, the projects with setpoint writing
// enabled: BDP_EDGE_SIMULATOR=1 runs a simulated edge device for each.
func (s *Store) SetpointWritingProjects(ctx context.Context) ([]int64, error) {
	rows, err := s.pool.Query(ctx, `SELECT project_id FROM project_settings WHERE setpoint_writing_enabled ORDER BY project_id`)
	if err != nil {
		return nil, translate(err, "project settings")
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	return ids, translate(err, "project settings")
}

// LogDeviceEvent appends an event an edge device reported (crash, reload,
// reset, recovered) to the log of a controls app of the device's project,
// as kind "device" with the app's current status, once: eventKey names
// the event (its kind and the device's time), and an event already in the
// app's log is not logged again, since in a cluster every node hears the
// heartbeat that carries it. It reports false, and logs nothing, when
// the event is logged already or the project has no such app: a device
// may name apps the platform deleted, or ids of its own.
func (s *Store) LogDeviceEvent(ctx context.Context, projectID int64, appID, eventKey, level, message string, detail any) (bool, error) {
	raw, err := json.Marshal(detail)
	if err != nil {
		return false, fmt.Errorf("device event detail: %w", err)
	}
	tag, err := s.pool.Exec(ctx, `INSERT INTO controls_app_logs (app_id, log_level, kind, status_code, message, detail, event_key)
		SELECT id, $3, 'device', status_code, $4, $5, $6 FROM controls_apps WHERE id = $1::uuid AND project_id = $2
		ON CONFLICT (app_id, event_key) WHERE event_key IS NOT NULL DO NOTHING`, appID, projectID, level, message, raw, eventKey)
	if err != nil {
		return false, translate(err, "controls app")
	}
	return tag.RowsAffected() == 1, nil
}
