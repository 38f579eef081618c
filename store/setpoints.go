package store

import (
	"context"
	"encoding/json"
	"errors"
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
	// HoldToken is the edge hold (AcquireEdgeHold) of the connection that
	// sends the operation: it is recorded only while that token is the
	// project's current one (*EdgeHoldLost otherwise). 0: not fenced, for
	// tools and tests.
	HoldToken int64
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

// CreateSetpointOperation stores an operation with its first log entry;
// with op.HoldToken, only while that token holds the project's edge
// connection (*EdgeHoldLost otherwise: the writer's node was superseded).
func (s *Store) CreateSetpointOperation(ctx context.Context, op SetpointOperation, first SetpointLogEntry) error {
	details, err := json.Marshal(first.Details)
	if err != nil {
		return fmt.Errorf("setpoint log details: %w", err)
	}
	var token *int64
	if op.HoldToken != 0 {
		token = &op.HoldToken
	}
	err = s.tx(ctx, func(tx pgx.Tx) error {
		// The check is part of the insert, and locks the hold's row until
		// commit: a take-over waits for the record, then fails it as an
		// operation of the old token (AcquireEdgeHold).
		tag, err := tx.Exec(ctx, `
			INSERT INTO setpoint_operations (reference, project_id, datapoint_id, value, priority, keep_out_of_service,
				acked, dryrun, state, source, created_at, hold_token)
			SELECT $1::uuid, $2::bigint, $3::text, $4::float8, $5::integer, $6::boolean, $7::boolean, $8::boolean, $9::text, $10::text,
				$11::timestamptz, $12::bigint
			WHERE $12::bigint IS NULL OR EXISTS (SELECT 1 FROM edge_holders WHERE project_id = $2 AND token = $12 FOR SHARE)`,
			op.Reference, op.ProjectID, op.DataPointID, op.Value, op.Priority, op.KeepOutOfService,
			op.Acked, op.DryRun, op.State, op.Source, op.CreatedAt, token)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return heldLost(ctx, tx, op.ProjectID, op.HoldToken)
		}
		_, err = tx.Exec(ctx, `INSERT INTO setpoint_operation_logs (reference, time, stage, msg, details) VALUES ($1, $2, $3, $4, $5)`,
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

// FailOpenSetpointOperations fails every operation left unfinished whose
// follower is gone, as after a restart: those recorded under an edge hold
// that is no longer current, or under none. api.md 4.6 rule 4 attempts no
// recovery. The operations of connections that other nodes of a cluster
// hold now go on.
func (s *Store) FailOpenSetpointOperations(ctx context.Context, now time.Time, reason string) (int64, error) {
	var n int64
	err := s.tx(ctx, func(tx pgx.Tx) error {
		var err error
		n, err = failOpen(ctx, tx, `NOT EXISTS (SELECT 1 FROM edge_holders h
			WHERE h.project_id = setpoint_operations.project_id AND h.token = setpoint_operations.hold_token)`, now, reason)
		return err
	})
	return n, translate(err, "setpoint operations")
}

// failOpen fails the unfinished operations that also meet cond (SQL on
// setpoint_operations; its arguments are $2 on) with reason, logged.
func failOpen(ctx context.Context, tx pgx.Tx, cond string, now time.Time, reason string, args ...any) (int64, error) {
	rows, err := tx.Query(ctx, `
		UPDATE setpoint_operations SET state = 'failed', reason = $1
		WHERE state IN ('initialized', 'requested') AND `+cond+` RETURNING reference::text`,
		append([]any{reason}, args...)...)
	if err != nil {
		return 0, err
	}
	refs, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(refs) == 0 {
		return 0, err
	}
	_, err = tx.Exec(ctx, `
		INSERT INTO setpoint_operation_logs (reference, time, stage, msg)
		SELECT r::uuid, $2, 'failed', $3 FROM unnest($1::text[]) AS r`, refs, now, reason)
	return int64(len(refs)), err
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

// HasEdgeDevice tells whether a project has edge device credentials.
func (s *Store) HasEdgeDevice(ctx context.Context, projectID int64) (bool, error) {
	var ok bool
	err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM mqtt_users WHERE project_id = $1 AND edge)`, projectID).Scan(&ok)
	return ok, translate(err, "edge devices")
}

// LastSetpointWrite returns the newest setpoint operation of a project
// that source sent ("app:<id>" for a controls app), dry runs aside;
// false when it sent none.
func (s *Store) LastSetpointWrite(ctx context.Context, projectID int64, source string) (SetpointOperation, bool, error) {
	var op SetpointOperation
	err := s.pool.QueryRow(ctx, `
		SELECT reference::text, project_id, datapoint_id, value, priority, state, source, created_at
		FROM setpoint_operations WHERE project_id = $1 AND source = $2 AND NOT dryrun
		ORDER BY created_at DESC LIMIT 1`, projectID, source).
		Scan(&op.Reference, &op.ProjectID, &op.DataPointID, &op.Value, &op.Priority, &op.State, &op.Source, &op.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return SetpointOperation{}, false, nil
	}
	if err != nil {
		return SetpointOperation{}, false, translate(err, "setpoint operation")
	}
	return op, true, nil
}
