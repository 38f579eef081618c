package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/openbdp/bdp/fault"
)

// PlotView is a saved plot of a project (aedifion's PlotView): its
// datapoints in their order, the hidden ones apart, the time range, the
// sample rate and an optional zoom. It belongs to the user who saved it.
type PlotView struct {
	ID         string
	ProjectID  int64
	UserID     int64
	Name       string
	Start, End time.Time
	Samplerate string
	ZoomStart  *time.Time
	ZoomEnd    *time.Time
	Datapoints []PlotViewDatapoint // in order
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

// PlotViewDatapoint is one datapoint of a plot view, with the tags
// TagAuths judge.
type PlotViewDatapoint struct {
	ID     string
	Hidden bool
	Tags   []DatapointTag
}

const plotViewColumns = `v.id::text, v.project_id, v.user_id, v.name, v.start_at, v.end_at, v.samplerate, v.zoom_start, v.zoom_end,
	v.created_at, v.updated_at,
	COALESCE((SELECT json_agg(json_build_object('ID', d.datapoint_id, 'Hidden', pd.hidden,
	          'Tags', COALESCE((SELECT json_agg(json_build_object('id', t.id, 'key', t.key, 'value', t.value, 'source', t.source) ORDER BY t.id)
	                            FROM datapoint_tags t WHERE t.datapoint_id = d.id), '[]')) ORDER BY pd.position)
	          FROM plot_view_datapoints pd JOIN datapoints d ON d.id = pd.datapoint_id WHERE pd.view_id = v.id), '[]')`

func scanPlotView(row pgx.Row) (PlotView, error) {
	var v PlotView
	err := row.Scan(&v.ID, &v.ProjectID, &v.UserID, &v.Name, &v.Start, &v.End, &v.Samplerate, &v.ZoomStart, &v.ZoomEnd,
		&v.CreatedAt, &v.UpdatedAt, &v.Datapoints)
	return v, err
}

// SavePlotView creates a plot view (v.ID empty) or replaces one of the
// project (its owner is kept; the caller checks that it may change it),
// with its datapoints, in one transaction: a datapoint the project does
// not have fails it all with fault.Invalid naming it.
func (s *Store) SavePlotView(ctx context.Context, v PlotView) (PlotView, error) {
	var out PlotView
	err := s.tx(ctx, func(tx pgx.Tx) error {
		var id string
		var err error
		if v.ID == "" {
			err = tx.QueryRow(ctx, `
				INSERT INTO plot_views (project_id, user_id, name, start_at, end_at, samplerate, zoom_start, zoom_end)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id::text`,
				v.ProjectID, v.UserID, v.Name, v.Start, v.End, v.Samplerate, v.ZoomStart, v.ZoomEnd).Scan(&id)
		} else {
			err = tx.QueryRow(ctx, `
				UPDATE plot_views SET name = $3, start_at = $4, end_at = $5, samplerate = $6, zoom_start = $7, zoom_end = $8,
					updated_at = now()
				WHERE id = $1 AND project_id = $2 RETURNING id::text`,
				v.ID, v.ProjectID, v.Name, v.Start, v.End, v.Samplerate, v.ZoomStart, v.ZoomEnd).Scan(&id)
			if err == nil {
				_, err = tx.Exec(ctx, `DELETE FROM plot_view_datapoints WHERE view_id = $1`, id)
			}
		}
		if err != nil {
			return translate(err, "plot view")
		}
		names := make([]string, len(v.Datapoints))
		hidden := make([]bool, len(v.Datapoints))
		for i, d := range v.Datapoints {
			names[i], hidden[i] = d.ID, d.Hidden
		}
		var missing *string
		err = tx.QueryRow(ctx, `
			SELECT n FROM unnest($2::text[]) n
			WHERE NOT EXISTS (SELECT 1 FROM datapoints WHERE project_id = $1 AND datapoint_id = n) LIMIT 1`,
			v.ProjectID, names).Scan(&missing)
		if err == nil {
			return fault.Invalidf("project %d has no datapoint %q", v.ProjectID, fault.Clip(*missing))
		}
		if err != pgx.ErrNoRows {
			return fmt.Errorf("check plot view datapoints: %w", err)
		}
		if _, err := tx.Exec(ctx, `
			INSERT INTO plot_view_datapoints (view_id, datapoint_id, position, hidden)
			SELECT $1, d.id, u.ord, u.hidden
			FROM unnest($3::text[], $4::boolean[]) WITH ORDINALITY AS u(name, hidden, ord)
			JOIN datapoints d ON d.project_id = $2 AND d.datapoint_id = u.name`,
			id, v.ProjectID, names, hidden); err != nil {
			return translate(err, "plot view datapoints")
		}
		out, err = scanPlotView(tx.QueryRow(ctx, `SELECT `+plotViewColumns+` FROM plot_views v WHERE v.id = $1`, id))
		return err
	})
	if err != nil {
		return PlotView{}, translate(err, "plot view")
	}
	return out, nil
}

// PlotView reads a plot view of a project. fault.NotFound when the project
// has none with this id (a uuid: the caller checks).
func (s *Store) PlotView(ctx context.Context, projectID int64, id string) (PlotView, error) {
	v, err := scanPlotView(s.pool.QueryRow(ctx, `SELECT `+plotViewColumns+` FROM plot_views v WHERE v.id = $1 AND v.project_id = $2`,
		id, projectID))
	return v, translate(err, "plot view "+id)
}

// PlotViews lists the user's plot views of a project, newest change first.
func (s *Store) PlotViews(ctx context.Context, projectID, userID int64) ([]PlotView, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+plotViewColumns+` FROM plot_views v WHERE v.project_id = $1 AND v.user_id = $2
		ORDER BY v.updated_at DESC, v.id`, projectID, userID)
	if err != nil {
		return nil, fmt.Errorf("list plot views: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (PlotView, error) { return scanPlotView(r) })
	if err != nil {
		return nil, fmt.Errorf("list plot views: %w", err)
	}
	return out, nil
}

// DeletePlotView deletes a plot view of a project and answers it as it
// was. fault.NotFound when the project has none with this id.
func (s *Store) DeletePlotView(ctx context.Context, projectID int64, id string) (PlotView, error) {
	var v PlotView
	err := s.tx(ctx, func(tx pgx.Tx) error {
		var err error
		v, err = scanPlotView(tx.QueryRow(ctx, `SELECT `+plotViewColumns+` FROM plot_views v WHERE v.id = $1 AND v.project_id = $2 FOR UPDATE`,
			id, projectID))
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `DELETE FROM plot_views WHERE id = $1`, id)
		return err
	})
	return v, translate(err, "plot view "+id)
}
