package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/openbdp/bdp/fault"
)

// FavoriteDatapoint is a datapoint a user marked as favorite: aedifion's
// DataPoint, and its tags, which TagAuths judge (not answered).
type FavoriteDatapoint struct {
	DatapointSetpoints
	Tags []DatapointTag `json:"-"`
}

// favoriteColumns select a FavoriteDatapoint from datapoints d.
const favoriteColumns = `d.datapoint_id, d.hash_id, d.id, d.project_id, d.setpoint_max_value, d.setpoint_min_value,
	COALESCE((SELECT json_agg(json_build_object('id', t.id, 'key', t.key, 'value', t.value, 'source', t.source) ORDER BY t.id)
	          FROM datapoint_tags t WHERE t.datapoint_id = d.id), '[]')`

func scanFavorite(row pgx.Row) (FavoriteDatapoint, error) {
	var f FavoriteDatapoint
	err := row.Scan(&f.DataPointID, &f.HashID, &f.ID, &f.ProjectID, &f.SetpointMax, &f.SetpointMin, &f.Tags)
	return f, err
}

// AddFavorite marks a datapoint of a project as the user's favorite; a
// favorite already is one (no error). fault.NotFound when the project has
// no such datapoint.
func (s *Store) AddFavorite(ctx context.Context, userID, projectID int64, dataPointID string) (FavoriteDatapoint, error) {
	f, err := scanFavorite(s.pool.QueryRow(ctx, `
		WITH d AS (SELECT * FROM datapoints WHERE project_id = $2 AND datapoint_id = $3),
		     ins AS (INSERT INTO datapoint_favorites (user_id, datapoint_id) SELECT $1, id FROM d ON CONFLICT DO NOTHING)
		SELECT `+favoriteColumns+` FROM d`, userID, projectID, dataPointID))
	if err != nil {
		return f, translate(err, fmt.Sprintf("datapoint %q in project %d", fault.Clip(dataPointID), projectID))
	}
	return f, nil
}

// RemoveFavorite takes a datapoint from the user's favorites.
// fault.NotFound when it is not one.
func (s *Store) RemoveFavorite(ctx context.Context, userID, projectID int64, dataPointID string) (FavoriteDatapoint, error) {
	f, err := scanFavorite(s.pool.QueryRow(ctx, `
		WITH del AS (
			DELETE FROM datapoint_favorites f USING datapoints x
			WHERE f.user_id = $1 AND f.datapoint_id = x.id AND x.project_id = $2 AND x.datapoint_id = $3
			RETURNING f.datapoint_id)
		SELECT `+favoriteColumns+` FROM datapoints d JOIN del ON del.datapoint_id = d.id`, userID, projectID, dataPointID))
	if err != nil {
		return f, translate(err, fmt.Sprintf("favorite datapoint %q in project %d", fault.Clip(dataPointID), projectID))
	}
	return f, nil
}

// Favorites lists the user's favorite datapoints, of one project when
// projectID is not 0, by project and dataPointID.
func (s *Store) Favorites(ctx context.Context, userID, projectID int64) ([]FavoriteDatapoint, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT `+favoriteColumns+` FROM datapoint_favorites f JOIN datapoints d ON d.id = f.datapoint_id
		WHERE f.user_id = $1 AND ($2 = 0 OR d.project_id = $2)
		ORDER BY d.project_id, d.datapoint_id`, userID, projectID)
	if err != nil {
		return nil, fmt.Errorf("list favorites: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (FavoriteDatapoint, error) { return scanFavorite(r) })
	if err != nil {
		return nil, fmt.Errorf("list favorites: %w", err)
	}
	return out, nil
}
