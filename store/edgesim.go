package store

import (
	"context"

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
