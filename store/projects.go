package store

import (
	"context"
	"fmt"

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
		for _, table := range []string{"observations", "observation_chunks"} {
			if _, err := tx.Exec(ctx, `DELETE FROM `+table+` WHERE datapoint IN (SELECT id FROM datapoints WHERE project_id = $1)`, id); err != nil {
				return err
			}
		}
		var err error
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

// DatapointKey is a key datapoints can be looked up by (aedifion's
// DataPointKey): "name", the dataPointID, which TagAuths match by
// default, and every tag key in use in the project. A key has no row of
// its own; its id is that of the oldest tag with the key in the project
// (0 for name), stable while that tag lives.
type DatapointKey struct {
	ID          int64  `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description"`
	ProjectID   int64  `json:"project_id"`
}

// DatapointKeys lists the keys of each of the projects, "name" first,
// then the tag keys in alphabetical order; one query for all of them.
func (s *Store) DatapointKeys(ctx context.Context, projectIDs []int64) (map[int64][]DatapointKey, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT id, key, CASE WHEN rank = 0 THEN 'the dataPointID' ELSE 'tag key ' || key END, project_id FROM (
			SELECT 0::bigint AS id, 'name' AS key, 0 AS rank, p AS project_id FROM unnest($1::bigint[]) p
			UNION ALL
			SELECT min(t.id), t.key, 1, d.project_id FROM datapoint_tags t JOIN datapoints d ON d.id = t.datapoint_id
			WHERE d.project_id = ANY($1) AND t.key <> 'name' GROUP BY d.project_id, t.key
		) k ORDER BY project_id, rank, key`, projectIDs)
	if err != nil {
		return nil, err
	}
	keys, err := pgx.CollectRows(rows, pgx.RowToStructByPos[DatapointKey])
	if err != nil {
		return nil, fmt.Errorf("datapoint keys: %w", err)
	}
	out := make(map[int64][]DatapointKey, len(projectIDs))
	for _, k := range keys {
		out[k.ProjectID] = append(out[k.ProjectID], k)
	}
	return out, nil
}
