package store

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// Project roles

func insertProjectRole(ctx context.Context, tx pgx.Tx, r ProjectRole) (ProjectRole, error) {
	err := tx.QueryRow(ctx, `
		INSERT INTO project_roles (project_id, name, description, authed_endpoints, is_admin)
		VALUES ($1, $2, $3, $4, $5) RETURNING id`,
		r.ProjectID, r.Name, r.Description, nonNil(r.AuthedEndpoints), r.IsAdmin).Scan(&r.ID)
	if err != nil {
		return r, err
	}
	r.AuthedTags, err = insertTags(ctx, tx, r.ID, r.AuthedTags)
	return r, err
}

func insertTags(ctx context.Context, tx pgx.Tx, roleID int64, tags []TagAuth) ([]TagAuth, error) {
	out := make([]TagAuth, 0, len(tags))
	for _, t := range tags {
		err := tx.QueryRow(ctx, `
			INSERT INTO project_role_tags (role_id, key, value, read, write) VALUES ($1, $2, $3, $4, $5) RETURNING id`,
			roleID, t.Key, t.Value, t.Read, t.Write).Scan(&t.ID)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// CreateProjectRole creates a role with its TagAuths.
func (s *Store) CreateProjectRole(ctx context.Context, r ProjectRole) (ProjectRole, error) {
	err := s.tx(ctx, func(tx pgx.Tx) error {
		var err error
		r, err = insertProjectRole(ctx, tx, r)
		return err
	})
	return r, translate(err, "project role")
}

// UpdateProjectRole replaces name, description, endpoints and TagAuths of
// a role of the project.
func (s *Store) UpdateProjectRole(ctx context.Context, r ProjectRole) (ProjectRole, error) {
	err := s.tx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `
			UPDATE project_roles SET name = $3, description = $4, authed_endpoints = $5
			WHERE id = $1 AND project_id = $2`,
			r.ID, r.ProjectID, r.Name, r.Description, nonNil(r.AuthedEndpoints))
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return pgx.ErrNoRows
		}
		if _, err := tx.Exec(ctx, `DELETE FROM project_role_tags WHERE role_id = $1`, r.ID); err != nil {
			return err
		}
		r.AuthedTags, err = insertTags(ctx, tx, r.ID, r.AuthedTags)
		return err
	})
	return r, translate(err, "project role")
}

// DeleteProjectRole removes a role of the project with its assignments.
func (s *Store) DeleteProjectRole(ctx context.Context, projectID, roleID int64) (ProjectRole, error) {
	r, err := s.ProjectRole(ctx, projectID, roleID)
	if err != nil {
		return r, err
	}
	_, err = s.pool.Exec(ctx, `DELETE FROM project_roles WHERE id = $1 AND project_id = $2`, roleID, projectID)
	return r, translate(err, "project role")
}

// ProjectRole returns one role of the project.
func (s *Store) ProjectRole(ctx context.Context, projectID, roleID int64) (ProjectRole, error) {
	roles, err := s.projectRoles(ctx, `r.id = $1 AND r.project_id = $2`, roleID, projectID)
	if err == nil && len(roles) == 0 {
		err = pgx.ErrNoRows
	}
	if err != nil {
		return ProjectRole{}, translate(err, "project role")
	}
	return roles[0], nil
}

// ProjectRoles lists the roles of a project.
func (s *Store) ProjectRoles(ctx context.Context, projectID int64) ([]ProjectRole, error) {
	return s.projectRoles(ctx, `r.project_id = $1`, projectID)
}

// projectRoles loads roles matching where, each with its TagAuths, in one
// query.
func (s *Store) projectRoles(ctx context.Context, where string, args ...any) ([]ProjectRole, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT r.id, r.name, r.description, r.project_id, r.authed_endpoints, r.is_admin,
		       COALESCE(json_agg(json_build_object('id', t.id, 'key', t.key, 'value', t.value, 'read', t.read, 'write', t.write)
		                ORDER BY t.id) FILTER (WHERE t.id IS NOT NULL), '[]')
		FROM project_roles r LEFT JOIN project_role_tags t ON t.role_id = r.id
		WHERE `+where+`
		GROUP BY r.id ORDER BY r.id`, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (ProjectRole, error) {
		var r ProjectRole
		err := row.Scan(&r.ID, &r.Name, &r.Description, &r.ProjectID, &r.AuthedEndpoints, &r.IsAdmin, &r.AuthedTags)
		return r, err
	})
}

func assignProjectRole(ctx context.Context, tx pgx.Tx, roleID, userID int64) error {
	_, err := tx.Exec(ctx, `INSERT INTO project_role_users (role_id, user_id) VALUES ($1, $2) ON CONFLICT DO NOTHING`, roleID, userID)
	return err
}

// AssignProjectRole gives a user a role; assigning twice is harmless.
func (s *Store) AssignProjectRole(ctx context.Context, roleID, userID int64) error {
	return translate(s.tx(ctx, func(tx pgx.Tx) error { return assignProjectRole(ctx, tx, roleID, userID) }), "assignment")
}

// UnassignProjectRole takes a role from a user; the role stays.
func (s *Store) UnassignProjectRole(ctx context.Context, roleID, userID int64) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM project_role_users WHERE role_id = $1 AND user_id = $2`, roleID, userID)
	if err == nil && tag.RowsAffected() == 0 {
		err = pgx.ErrNoRows
	}
	return translate(err, "assignment of the role to the user")
}

// Company roles

func insertCompanyRole(ctx context.Context, tx pgx.Tx, r CompanyRole) (CompanyRole, error) {
	err := tx.QueryRow(ctx, `
		INSERT INTO company_roles (company_id, name, description, authed_endpoints, is_admin)
		VALUES ($1, $2, $3, $4, $5) RETURNING id`,
		r.CompanyID, r.Name, r.Description, nonNil(r.AuthedEndpoints), r.IsAdmin).Scan(&r.ID)
	return r, err
}

const companyRoleColumns = `id, name, description, company_id, authed_endpoints, is_admin`

func scanCompanyRole(row pgx.Row) (CompanyRole, error) {
	var r CompanyRole
	err := row.Scan(&r.ID, &r.Name, &r.Description, &r.CompanyID, &r.AuthedEndpoints, &r.IsAdmin)
	return r, err
}

// CreateCompanyRole creates a company role.
func (s *Store) CreateCompanyRole(ctx context.Context, r CompanyRole) (CompanyRole, error) {
	err := s.tx(ctx, func(tx pgx.Tx) error {
		var err error
		r, err = insertCompanyRole(ctx, tx, r)
		return err
	})
	return r, translate(err, "company role")
}

// UpdateCompanyRole replaces name, description and endpoints of a role of
// the company.
func (s *Store) UpdateCompanyRole(ctx context.Context, r CompanyRole) (CompanyRole, error) {
	r, err := scanCompanyRole(s.pool.QueryRow(ctx, `
		UPDATE company_roles SET name = $3, description = $4, authed_endpoints = $5
		WHERE id = $1 AND company_id = $2 RETURNING `+companyRoleColumns,
		r.ID, r.CompanyID, r.Name, r.Description, nonNil(r.AuthedEndpoints)))
	return r, translate(err, "company role")
}

// CompanyRole returns one role of the company.
func (s *Store) CompanyRole(ctx context.Context, companyID, roleID int64) (CompanyRole, error) {
	r, err := scanCompanyRole(s.pool.QueryRow(ctx,
		`SELECT `+companyRoleColumns+` FROM company_roles WHERE id = $1 AND company_id = $2`, roleID, companyID))
	return r, translate(err, "company role")
}

// CompanyRoles lists the roles of a company.
func (s *Store) CompanyRoles(ctx context.Context, companyID int64) ([]CompanyRole, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+companyRoleColumns+` FROM company_roles WHERE company_id = $1 ORDER BY id`, companyID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (CompanyRole, error) { return scanCompanyRole(r) })
}

// DeleteCompanyRole removes a role of the company with its assignments.
func (s *Store) DeleteCompanyRole(ctx context.Context, companyID, roleID int64) (CompanyRole, error) {
	r, err := scanCompanyRole(s.pool.QueryRow(ctx,
		`DELETE FROM company_roles WHERE id = $1 AND company_id = $2 RETURNING `+companyRoleColumns, roleID, companyID))
	return r, translate(err, "company role")
}

// AssignCompanyRole gives a user a company role; assigning twice is harmless.
func (s *Store) AssignCompanyRole(ctx context.Context, roleID, userID int64) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO company_role_users (role_id, user_id) VALUES ($1, $2) ON CONFLICT DO NOTHING`, roleID, userID)
	return translate(err, "assignment")
}

// UnassignCompanyRole takes a company role from a user; the role stays.
// The last holder of a company admin role keeps it (conflict).
func (s *Store) UnassignCompanyRole(ctx context.Context, roleID, userID int64) error {
	err := s.tx(ctx, func(tx pgx.Tx) error {
		if err := refuseLastAdmin(ctx, tx, userID, roleID); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `DELETE FROM company_role_users WHERE role_id = $1 AND user_id = $2`, roleID, userID)
		if err == nil && tag.RowsAffected() == 0 {
			err = pgx.ErrNoRows
		}
		return err
	})
	return translate(err, "assignment of the role to the user")
}

// Principal loads a user with every role they hold.
func (s *Store) Principal(ctx context.Context, userID int64) (Principal, error) {
	var p Principal
	var err error
	if p.User, err = s.User(ctx, userID); err != nil {
		return p, err
	}
	rows, err := s.pool.Query(ctx, `
		SELECT `+prefixed("r.", companyRoleColumns)+` FROM company_roles r
		JOIN company_role_users a ON a.role_id = r.id WHERE a.user_id = $1 ORDER BY r.id`, userID)
	if err != nil {
		return p, err
	}
	p.CompanyRoles, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (CompanyRole, error) { return scanCompanyRole(r) })
	if err != nil {
		return p, err
	}
	p.ProjectRoles, err = s.projectRoles(ctx, `r.id IN (SELECT role_id FROM project_role_users WHERE user_id = $1)`, userID)
	return p, err
}

func nonNil(ids []int32) []int32 {
	if ids == nil {
		return []int32{}
	}
	return ids
}
