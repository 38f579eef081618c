package store

import (
	"context"

	"github.com/jackc/pgx/v5"
)

const projectColumns = `id, company_id, name, description`

func scanProject(row pgx.Row) (Project, error) {
	var p Project
	err := row.Scan(&p.ID, &p.CompanyID, &p.Name, &p.Description)
	return p, err
}

func collectProjects(rows pgx.Rows, err error) ([]Project, error) {
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Project, error) { return scanProject(r) })
}

// CreateProject creates a project with its admin role (adminEndpoints and
// the TagAuth name=* read+write), assigns that role to the creator and
// sets up default settings and quota, all in one transaction.
func (s *Store) CreateProject(ctx context.Context, creatorID int64, p Project, adminEndpoints []int32) (Project, ProjectRole, error) {
	var role ProjectRole
	err := s.tx(ctx, func(tx pgx.Tx) error {
		var err error
		p, err = scanProject(tx.QueryRow(ctx, `
			INSERT INTO projects (company_id, name, description) VALUES ($1, $2, $3) RETURNING `+projectColumns,
			p.CompanyID, p.Name, p.Description))
		if err != nil {
			return err
		}
		role = ProjectRole{ProjectID: p.ID, Name: "admin", Description: "all permissions of the project",
			AuthedEndpoints: adminEndpoints, IsAdmin: true,
			AuthedTags: []TagAuth{{Key: "name", Value: "*", Read: true, Write: true}}}
		if role, err = insertProjectRole(ctx, tx, role); err != nil {
			return err
		}
		if err := assignProjectRole(ctx, tx, role.ID, creatorID); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO project_settings (project_id) VALUES ($1)`, p.ID)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO project_quotas (project_id) VALUES ($1)`, p.ID)
		return err
	})
	if err != nil {
		return Project{}, ProjectRole{}, translate(err, "project")
	}
	return p, role, nil
}

// Project returns one project.
func (s *Store) Project(ctx context.Context, id int64) (Project, error) {
	p, err := scanProject(s.pool.QueryRow(ctx, `SELECT `+projectColumns+` FROM projects WHERE id = $1`, id))
	return p, translate(err, "project")
}

// ProjectCompany returns the company a project belongs to; authorization
// calls it on every project-scoped request.
func (s *Store) ProjectCompany(ctx context.Context, projectID int64) (int64, error) {
	var c int64
	err := s.pool.QueryRow(ctx, `SELECT company_id FROM projects WHERE id = $1`, projectID).Scan(&c)
	return c, translate(err, "project")
}

// UpdateProject changes name and description; nil keeps a field.
func (s *Store) UpdateProject(ctx context.Context, id int64, name, description *string) (Project, error) {
	p, err := scanProject(s.pool.QueryRow(ctx, `
		UPDATE projects SET name = COALESCE($2, name), description = COALESCE($3, description)
		WHERE id = $1 RETURNING `+projectColumns, id, name, description))
	return p, translate(err, "project")
}

// DeleteProject removes a project with everything that hangs off it:
// roles, assignments, settings, datapoints and their tags.
func (s *Store) DeleteProject(ctx context.Context, id int64) (Project, error) {
	var p Project
	err := s.tx(ctx, func(tx pgx.Tx) error {
		// Observations have no foreign key (it would slow ingestion), so
		// they go first, by hand.
		_, err := tx.Exec(ctx, `DELETE FROM observations WHERE datapoint IN (SELECT id FROM datapoints WHERE project_id = $1)`, id)
		if err != nil {
			return err
		}
		p, err = scanProject(tx.QueryRow(ctx, `DELETE FROM projects WHERE id = $1 RETURNING `+projectColumns, id))
		return err
	})
	return p, translate(err, "project")
}

// CompanyProjects lists the projects of a company by id.
func (s *Store) CompanyProjects(ctx context.Context, companyID int64) ([]Project, error) {
	return collectProjects(s.pool.Query(ctx, `SELECT `+projectColumns+` FROM projects WHERE company_id = $1 ORDER BY id`, companyID))
}

// ProjectsByID lists the projects with the given ids.
func (s *Store) ProjectsByID(ctx context.Context, ids []int64) ([]Project, error) {
	return collectProjects(s.pool.Query(ctx, `SELECT `+projectColumns+` FROM projects WHERE id = ANY($1) ORDER BY id`, ids))
}

// ProjectDatapointIDs lists the dataPointIDs of a project.
func (s *Store) ProjectDatapointIDs(ctx context.Context, projectID int64) ([]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT datapoint_id FROM datapoints WHERE project_id = $1 ORDER BY datapoint_id`, projectID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// DatapointWithTags is a dataPointID with every tag of the datapoint, as
// access checks need it.
type DatapointWithTags struct {
	ID   string
	Tags []DatapointTag
}

// ProjectDatapoints lists the datapoints of a project with their tags,
// ordered by dataPointID: those named, or all when names is nil.
func (s *Store) ProjectDatapoints(ctx context.Context, projectID int64, names []string) ([]DatapointWithTags, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT d.datapoint_id,
		       COALESCE(json_agg(json_build_object('id', t.id, 'key', t.key, 'value', t.value, 'source', t.source)
		                ORDER BY t.id) FILTER (WHERE t.id IS NOT NULL), '[]')
		FROM datapoints d LEFT JOIN datapoint_tags t ON t.datapoint_id = d.id
		WHERE d.project_id = $1 AND ($2::text[] IS NULL OR d.datapoint_id = ANY($2))
		GROUP BY d.id ORDER BY d.datapoint_id`, projectID, names)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowToStructByPos[DatapointWithTags])
}

// DatapointTagKeys lists the distinct tag keys of a project's datapoints;
// "name" (the dataPointID, what TagAuths match by default) comes first.
func (s *Store) DatapointTagKeys(ctx context.Context, projectID int64) ([]string, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT key FROM (
			SELECT 'name' AS key, 0 AS rank
			UNION
			SELECT DISTINCT t.key, 1 FROM datapoint_tags t JOIN datapoints d ON d.id = t.datapoint_id
			WHERE d.project_id = $1 AND t.key <> 'name'
		) k ORDER BY rank, key`, projectID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}
