package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// The hold of a project's edge connection is the fence of issue 20 item
// 5: one cluster member runs a project's connection, but during a change
// of membership two may briefly believe they do (protoactor activates an
// identity on two members for a moment). Each start of a connection takes
// the hold with a new token; a request is published to the device, and an
// acked setpoint operation recorded, only while the sender's token is the
// current one, so the superseded holder's writes are refused at the point
// of writing and each value reaches the device once.

// EdgeHoldLost refuses a write of a holder whose token is no longer the
// project's current one: another node, or a later start of this one, took
// the project's edge connection over.
type EdgeHoldLost struct {
	ProjectID int64
	Token     int64  // the refused writer's
	Holder    string // the current holder; empty when the project has none
	Current   int64  // the current token; 0 when none
}

func (e *EdgeHoldLost) Error() string {
	if e.Holder == "" {
		return fmt.Sprintf("edge hold of project %d: token %d is not held (nobody holds the project)", e.ProjectID, e.Token)
	}
	return fmt.Sprintf("edge hold of project %d: token %d was superseded by %q with token %d", e.ProjectID, e.Token, e.Holder, e.Current)
}

// AcquireEdgeHold makes holder the holder of a project's edge connection
// under a new token, and fails, with reason, the project's open setpoint
// operations recorded under an older token: their follower was the
// previous holder (another node, or this one before a restart), which
// will record nothing more.
func (s *Store) AcquireEdgeHold(ctx context.Context, projectID int64, holder string, now time.Time, reason string) (token, failed int64, err error) {
	err = s.tx(ctx, func(tx pgx.Tx) error {
		// The row lock of the update waits for a write of the previous
		// holder in progress (WithEdgeHold, a fenced insert): once the new
		// token is answered, no write under an older one can follow.
		if err := tx.QueryRow(ctx, `
			INSERT INTO edge_holders (project_id, holder, token, since) VALUES ($1, $2, 1, $3)
			ON CONFLICT (project_id) DO UPDATE SET holder = EXCLUDED.holder, token = edge_holders.token + 1, since = EXCLUDED.since
			RETURNING token`, projectID, holder, now).Scan(&token); err != nil {
			return err
		}
		failed, err = failOpen(ctx, tx, `project_id = $2 AND (hold_token IS NULL OR hold_token < $3)`, now, reason, projectID, token)
		return err
	})
	if err != nil {
		return 0, 0, fmt.Errorf("acquire the edge hold of project %d: %w", projectID, translate(err, "project"))
	}
	return token, failed, nil
}

// WithEdgeHold runs fn, the publication of a request to a project's edge
// device, while token is the project's current one; *EdgeHoldLost when it
// is not, and fn does not run. The row stays locked (FOR SHARE) until fn
// returns, so a take-over waits for it rather than overtake it.
func (s *Store) WithEdgeHold(ctx context.Context, projectID, token int64, fn func() error) error {
	return s.tx(ctx, func(tx pgx.Tx) error {
		lost := &EdgeHoldLost{ProjectID: projectID, Token: token}
		err := tx.QueryRow(ctx, `SELECT holder, token FROM edge_holders WHERE project_id = $1 FOR SHARE`, projectID).
			Scan(&lost.Holder, &lost.Current)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return lost
		case err != nil:
			return fmt.Errorf("edge hold of project %d: %w", projectID, err)
		case lost.Current != token:
			return lost
		}
		return fn()
	})
}

// EdgeHolds answers the current token of each of the projects that has a
// holder.
func (s *Store) EdgeHolds(ctx context.Context, projectIDs []int64) (map[int64]int64, error) {
	rows, err := s.pool.Query(ctx, `SELECT project_id, token FROM edge_holders WHERE project_id = ANY($1)`, projectIDs)
	if err != nil {
		return nil, fmt.Errorf("edge holds: %w", err)
	}
	out := make(map[int64]int64, len(projectIDs))
	var id, token int64
	_, err = pgx.ForEachRow(rows, []any{&id, &token}, func() error { out[id] = token; return nil })
	if err != nil {
		return nil, fmt.Errorf("edge holds: %w", err)
	}
	return out, nil
}

// EdgeHolder answers who holds a project's edge connection, and its
// token; empty and 0 when nobody does.
func (s *Store) EdgeHolder(ctx context.Context, projectID int64) (holder string, token int64, err error) {
	err = s.pool.QueryRow(ctx, `SELECT holder, token FROM edge_holders WHERE project_id = $1`, projectID).Scan(&holder, &token)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", 0, nil
	}
	if err != nil {
		return "", 0, fmt.Errorf("edge holder of project %d: %w", projectID, err)
	}
	return holder, token, nil
}

// heldLost is the refusal of a fenced insert: who holds the project now.
func heldLost(ctx context.Context, tx pgx.Tx, projectID, token int64) error {
	lost := &EdgeHoldLost{ProjectID: projectID, Token: token}
	err := tx.QueryRow(ctx, `SELECT holder, token FROM edge_holders WHERE project_id = $1`, projectID).Scan(&lost.Holder, &lost.Current)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return err
	}
	return lost
}
