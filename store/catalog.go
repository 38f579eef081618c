package store

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// Endpoint tags, as the catalog declares them.
const (
	TagMeta    = "meta"    // no credentials needed
	TagUser    = "user"    // any authenticated user, acting on themself
	TagCompany = "company" // company roles only
	TagProject = "project" // company roles, or project roles of the project
	// TagGeneral is for routes outside any project that any role may
	// grant (reference data such as the unit labels): api.md 5.4 leaves
	// a user without roles only the meta and user routes.
	TagGeneral = "general"
)

// SyncEndpoints makes sure every declared route has a persisted id and
// returns the declarations with their ids. A route seen for the first time
// gets a new id and is added to every admin role that may hold it (all
// company admin roles; project admin roles unless it is a company route),
// so admins keep holding everything as the API grows. Safe to run from
// several nodes at once: the table lock serialises them.
func (s *Store) SyncEndpoints(ctx context.Context, decls []Endpoint) ([]Endpoint, error) {
	out := make([]Endpoint, len(decls))
	err := s.tx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `LOCK TABLE endpoints IN SHARE ROW EXCLUSIVE MODE`); err != nil {
			return err
		}
		var added, addedProject []int32
		for i, d := range decls {
			err := tx.QueryRow(ctx, `SELECT id FROM endpoints WHERE request_method = $1 AND path = $2`,
				d.Method, d.Path).Scan(&d.ID)
			switch {
			case err == pgx.ErrNoRows:
				if err := tx.QueryRow(ctx, `INSERT INTO endpoints (request_method, path, tag) VALUES ($1, $2, $3) RETURNING id`,
					d.Method, d.Path, d.Tag).Scan(&d.ID); err != nil {
					return err
				}
				added = append(added, d.ID)
				if d.Tag != TagCompany {
					addedProject = append(addedProject, d.ID)
				}
			case err != nil:
				return err
			default:
				if _, err := tx.Exec(ctx, `UPDATE endpoints SET tag = $2 WHERE id = $1 AND tag <> $2`, d.ID, d.Tag); err != nil {
					return err
				}
			}
			out[i] = d
		}
		if len(added) == 0 {
			return nil
		}
		_, err := tx.Exec(ctx, `UPDATE company_roles SET authed_endpoints = authed_endpoints || $1::integer[] WHERE is_admin`, added)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE project_roles SET authed_endpoints = authed_endpoints || $1::integer[] WHERE is_admin`, addedProject)
		return err
	})
	return out, err
}

// EndpointIDs lists every persisted endpoint id: the grant of a company
// admin role made outside a running server (`bdp admin`). Routes
// persisted later join every admin role in SyncEndpoints.
func (s *Store) EndpointIDs(ctx context.Context) ([]int32, error) {
	rows, err := s.pool.Query(ctx, `SELECT id FROM endpoints ORDER BY id`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[int32])
}
