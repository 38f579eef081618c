package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// MarkResuming moves every virtual datapoint that was Running or Starting
// to Starting, with message in its log, and returns them in creation
// order (a source datapoint's own virtual datapoint usually comes first),
// each with its CatchUpFrom: what the engine must run again after a
// restart, and from where. One statement
// each for the update and the logs, so ten thousand datapoints show
// Starting at once rather than one after another.
func (s *Store) MarkResuming(ctx context.Context, message string) ([]VDP, error) {
	var out []VDP
	err := s.tx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `WITH u AS (UPDATE virtual_datapoints SET status_code = $1
			WHERE status_code = ANY($2) RETURNING id, project_id, datapoint_id, type, description, config, catch_up_from)
			SELECT * FROM u ORDER BY id`,
			StatusStarting, []int{StatusRunning, StatusStarting})
		if err != nil {
			return fmt.Errorf("mark virtual datapoints starting: %w", err)
		}
		var ids []int64
		out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (VDP, error) {
			var id int64
			var from *time.Time
			v := VDP{StatusCode: StatusStarting}
			err := r.Scan(&id, &v.ProjectID, &v.DataPointID, &v.Type, &v.Description, &v.Config, &from)
			if from != nil {
				v.CatchUpFrom = from.UTC()
			}
			ids = append(ids, id)
			return v, err
		})
		if err != nil || len(ids) == 0 {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO virtual_datapoint_logs (vdp_id, ts, type, status_code, status_text, message)
			SELECT id, $2, 'status_change', $3, $4, $5 FROM unnest($1::bigint[]) AS id`,
			ids, time.Now().UnixNano(), StatusStarting, StatusText(StatusStarting), message)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// MarkResumed moves the given virtual datapoints from Starting to Running,
// with message in each one's log, in one statement: a resume of 100,000
// datapoints recorded each in a transaction of its own spent more time
// in round trips than in starting them. It returns the ones it moved; one
// that is no longer Starting (stopped or deleted while it started) stays
// as it is, and its caller stops its actor.
func (s *Store) MarkResumed(ctx context.Context, vdps []VDP, message string) (moved []VDP, err error) {
	if len(vdps) == 0 {
		return nil, nil
	}
	projects, names := make([]int64, len(vdps)), make([]string, len(vdps))
	for i, v := range vdps {
		projects[i], names[i] = v.ProjectID, v.DataPointID
	}
	rows, err := s.pool.Query(ctx, `
		WITH moved AS (
			UPDATE virtual_datapoints v SET status_code = $3
			FROM unnest($1::bigint[], $2::text[]) AS k(project, name)
			WHERE v.project_id = k.project AND v.datapoint_id = k.name AND v.status_code = $4
			RETURNING v.id, v.project_id, v.datapoint_id),
		logged AS (
			INSERT INTO virtual_datapoint_logs (vdp_id, ts, type, status_code, status_text, message)
			SELECT id, $5, 'status_change', $3, $6, $7 FROM moved)
		SELECT project_id, datapoint_id FROM moved`,
		projects, names, StatusRunning, StatusStarting, time.Now().UnixNano(), StatusText(StatusRunning), message)
	if err != nil {
		return nil, fmt.Errorf("mark virtual datapoints running: %w", err)
	}
	done, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (VDP, error) {
		v := VDP{StatusCode: StatusRunning}
		return v, r.Scan(&v.ProjectID, &v.DataPointID)
	})
	if err != nil {
		return nil, fmt.Errorf("mark virtual datapoints running: %w", err)
	}
	return done, nil
}

// VDPsIn lists the virtual datapoints in one of the given statuses, in
// creation order, each with its CatchUpFrom, without changing them: in
// cluster mode, what the members divide among themselves
// (cluster.Reconciler), where one node's MarkResuming would take them
// all.
func (s *Store) VDPsIn(ctx context.Context, statuses ...int) ([]VDP, error) {
	rows, err := s.pool.Query(ctx, `SELECT project_id, datapoint_id, type, description, config, status_code, catch_up_from
		FROM virtual_datapoints WHERE status_code = ANY($1) ORDER BY id`, statuses)
	if err != nil {
		return nil, fmt.Errorf("list virtual datapoints by status: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (VDP, error) {
		var v VDP
		var from *time.Time
		err := r.Scan(&v.ProjectID, &v.DataPointID, &v.Type, &v.Description, &v.Config, &v.StatusCode, &from)
		if from != nil {
			v.CatchUpFrom = from.UTC()
		}
		return v, err
	})
	if err != nil {
		return nil, fmt.Errorf("list virtual datapoints by status: %w", err)
	}
	return out, nil
}
