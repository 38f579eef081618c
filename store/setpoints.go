package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// SetpointOperation is an acknowledged setpoint write (api.md 2.12, 3.3).
type SetpointOperation struct {
	Reference        string
	ProjectID        int64
	DataPointID      string
	Value            *float64 // nil clears the slot
	Priority         int
	KeepOutOfService bool
	Acked            bool
	DryRun           bool
	State            string // initialized | requested | written | reported (a dry run) | failed
	Reason           string
	OldValue         *float64
	Source           string
	CreatedAt        time.Time
}

// SetpointLogEntry is one stage of an operation. Details holds what the
// stage adds (acked and dryrun at initialized; priorityArray and
// overwritten_value at written).
type SetpointLogEntry struct {
	Time    time.Time
	Stage   string
	Msg     string
	Details map[string]any
}

// CreateSetpointOperation stores an operation with its first log entry.
func (s *Store) CreateSetpointOperation(ctx context.Context, op SetpointOperation, first SetpointLogEntry) error {
	details, err := json.Marshal(first.Details)
	if err != nil {
		return fmt.Errorf("setpoint log details: %w", err)
	}
	err = s.tx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `
			INSERT INTO setpoint_operations (reference, project_id, datapoint_id, value, priority, keep_out_of_service,
				acked, dryrun, state, source, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
			op.Reference, op.ProjectID, op.DataPointID, op.Value, op.Priority, op.KeepOutOfService,
			op.Acked, op.DryRun, op.State, op.Source, op.CreatedAt); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO setpoint_operation_logs (reference, time, stage, msg, details) VALUES ($1, $2, $3, $4, $5)`,
			op.Reference, first.Time, first.Stage, first.Msg, details)
		return err
	})
	return translate(err, "setpoint operation")
}

// AdvanceSetpointOperation moves an operation that has not finished
// (initialized or requested) to state, with the stage's log entry; an
// operation that finished already stays as it is (false). oldValue, when
// set, is recorded as the overwritten value.
func (s *Store) AdvanceSetpointOperation(ctx context.Context, reference, state, reason string, oldValue *float64, entry SetpointLogEntry) (bool, error) {
	details, err := json.Marshal(entry.Details)
	if err != nil {
		return false, fmt.Errorf("setpoint log details: %w", err)
	}
	moved := false
	err = s.tx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `
			UPDATE setpoint_operations SET state = $2, reason = $3, old_value = COALESCE($4, old_value)
			WHERE reference = $1 AND state IN ('initialized', 'requested')`, reference, state, reason, oldValue)
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		moved = true
		_, err = tx.Exec(ctx, `INSERT INTO setpoint_operation_logs (reference, time, stage, msg, details) VALUES ($1, $2, $3, $4, $5)`,
			reference, entry.Time, entry.Stage, entry.Msg, details)
		return err
	})
	return moved, translate(err, "setpoint operation")
}

// FailOpenSetpointOperations fails every operation left unfinished, as
// after a restart: the process that waited for the device's answer is
// gone, and api.md 4.6 rule 4 attempts no recovery.
func (s *Store) FailOpenSetpointOperations(ctx context.Context, now time.Time, reason string) (int64, error) {
	var n int64
	err := s.tx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `
			UPDATE setpoint_operations SET state = 'failed', reason = $1
			WHERE state IN ('initialized', 'requested') RETURNING reference`, reason)
		if err != nil {
			return err
		}
		refs, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		n = int64(len(refs))
		if n == 0 {
			return nil
		}
		_, err = tx.Exec(ctx, `
			INSERT INTO setpoint_operation_logs (reference, time, stage, msg)
			SELECT r::uuid, $2, 'failed', $3 FROM unnest($1::text[]) AS r`, refs, now, reason)
		return err
	})
	return n, translate(err, "setpoint operations")
}

// SetpointOperation returns an operation with its log, oldest entry
// first; fault.NotFound when there is none with that reference.
func (s *Store) SetpointOperation(ctx context.Context, reference string) (SetpointOperation, []SetpointLogEntry, error) {
	var op SetpointOperation
	err := s.pool.QueryRow(ctx, `
		SELECT reference::text, project_id, datapoint_id, value, priority, keep_out_of_service, acked, dryrun,
			state, reason, old_value, source, created_at
		FROM setpoint_operations WHERE reference = $1`, reference).
		Scan(&op.Reference, &op.ProjectID, &op.DataPointID, &op.Value, &op.Priority, &op.KeepOutOfService, &op.Acked,
			&op.DryRun, &op.State, &op.Reason, &op.OldValue, &op.Source, &op.CreatedAt)
	if err != nil {
		return SetpointOperation{}, nil, translate(err, "setpoint operation")
	}
	rows, err := s.pool.Query(ctx, `
		SELECT time, stage, msg, details FROM setpoint_operation_logs WHERE reference = $1 ORDER BY id`, reference)
	if err != nil {
		return SetpointOperation{}, nil, translate(err, "setpoint operation log")
	}
	entries, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (SetpointLogEntry, error) {
		var e SetpointLogEntry
		err := r.Scan(&e.Time, &e.Stage, &e.Msg, &e.Details)
		return e, err
	})
	return op, entries, translate(err, "setpoint operation log")
}

// SetpointBounds returns a datapoint's setpoint bounds (nil when not
// configured); fault.NotFound when the project has no such datapoint.
func (s *Store) SetpointBounds(ctx context.Context, projectID int64, dataPointID string) (minValue, maxValue *float64, err error) {
	err = s.pool.QueryRow(ctx, `
		SELECT setpoint_min_value, setpoint_max_value FROM datapoints WHERE project_id = $1 AND datapoint_id = $2`,
		projectID, dataPointID).Scan(&minValue, &maxValue)
	return minValue, maxValue, translate(err, fmt.Sprintf("datapoint %q", dataPointID))
}

// EdgeProjects lists the projects that have edge device credentials.
func (s *Store) EdgeProjects(ctx context.Context) ([]int64, error) {
	rows, err := s.pool.Query(ctx, `SELECT project_id FROM mqtt_users WHERE edge ORDER BY project_id`)
	if err != nil {
		return nil, translate(err, "edge devices")
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	return ids, translate(err, "edge devices")
}
