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
