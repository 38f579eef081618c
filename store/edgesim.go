package store

import (
	"context"
	"errors"

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
// as kind "device" with the app's current status. It reports false, and
// logs nothing, when the project has no such app: a device may name apps
// the platform deleted, or ids of its own.
func (s *Store) LogDeviceEvent(ctx context.Context, projectID int64, appID, level, message string, detail any) (bool, error) {
	logged := false
	err := s.tx(ctx, func(tx pgx.Tx) error {
		var code int
		err := tx.QueryRow(ctx, `SELECT status_code FROM controls_apps WHERE id = $1::uuid AND project_id = $2`, appID, projectID).Scan(&code)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		logged = true
		return appLog(ctx, tx, appID, level, "device", code, message, detail)
	})
	return logged, translate(err, "controls app")
}
