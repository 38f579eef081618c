package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/openbdp/bdp/fault"
)

// ComponentInProject is a catalog component mapped into a project.
type ComponentInProject struct {
	ID, ProjectID, ComponentID  int64
	NameEN, NameDE, DisplayName string
	// Pins maps a pin id to the dataPointID mapped onto it; Attributes an
	// attribute definition id to its value. Filled by ComponentInProject
	// (the detail), empty in lists.
	Pins       map[int64]string
	Attributes map[int64]string
}

// ComponentInProjectNames are the changeable fields; nil leaves one as is.
type ComponentInProjectNames struct {
	NameEN, NameDE, DisplayName *string
}

const cipColumns = `id, project_id, component_id, name_en, name_de, display_name`

func scanCIP(r pgx.Row) (ComponentInProject, error) {
	var c ComponentInProject
	err := r.Scan(&c.ID, &c.ProjectID, &c.ComponentID, &c.NameEN, &c.NameDE, &c.DisplayName)
	return c, err
}

// CreateComponentInProject maps a catalog component into a project.
func (s *Store) CreateComponentInProject(ctx context.Context, projectID, componentID int64, n ComponentInProjectNames) (ComponentInProject, error) {
	c, err := scanCIP(s.pool.QueryRow(ctx, `INSERT INTO components_in_project (project_id, component_id, name_en, name_de, display_name)
		VALUES ($1, $2, COALESCE($3, ''), COALESCE($4, ''), COALESCE($5, '')) RETURNING `+cipColumns,
		projectID, componentID, n.NameEN, n.NameDE, n.DisplayName))
	if err != nil {
		return ComponentInProject{}, translate(err, fmt.Sprintf("component %d", componentID))
	}
	c.Pins, c.Attributes = map[int64]string{}, map[int64]string{}
	return c, nil
}

// ComponentInProject is one mapped component with its pin mappings and
// attribute values; fault.NotFound when the project has no such one.
func (s *Store) ComponentInProject(ctx context.Context, projectID, id int64) (ComponentInProject, error) {
	c, err := scanCIP(s.pool.QueryRow(ctx, `SELECT `+cipColumns+` FROM components_in_project WHERE project_id = $1 AND id = $2`,
		projectID, id))
	if err != nil {
		return ComponentInProject{}, translate(err, fmt.Sprintf("component in project %d", id))
	}
	c.Pins, c.Attributes = map[int64]string{}, map[int64]string{}
	rows, err := s.pool.Query(ctx, `SELECT m.pin_id, d.datapoint_id FROM component_pin_mappings m
		JOIN datapoints d ON d.id = m.datapoint_id WHERE m.componentinproject_id = $1`, id)
	if err != nil {
		return ComponentInProject{}, err
	}
	var key int64
	var value string
	if _, err := pgx.ForEachRow(rows, []any{&key, &value}, func() error { c.Pins[key] = value; return nil }); err != nil {
		return ComponentInProject{}, err
	}
	rows, err = s.pool.Query(ctx, `SELECT attribute_definition_id, value FROM component_attribute_values
		WHERE componentinproject_id = $1`, id)
	if err != nil {
		return ComponentInProject{}, err
	}
	if _, err := pgx.ForEachRow(rows, []any{&key, &value}, func() error { c.Attributes[key] = value; return nil }); err != nil {
		return ComponentInProject{}, err
	}
	return c, nil
}

// ComponentsInProject lists a project's mapped components by id, without
// their pins and attributes.
func (s *Store) ComponentsInProject(ctx context.Context, projectID int64) ([]ComponentInProject, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+cipColumns+` FROM components_in_project WHERE project_id = $1 ORDER BY id`, projectID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (ComponentInProject, error) { return scanCIP(r) })
}

// UpdateComponentInProject changes the given names.
func (s *Store) UpdateComponentInProject(ctx context.Context, projectID, id int64, n ComponentInProjectNames) error {
	tag, err := s.pool.Exec(ctx, `UPDATE components_in_project SET name_en = COALESCE($3, name_en),
		name_de = COALESCE($4, name_de), display_name = COALESCE($5, display_name) WHERE project_id = $1 AND id = $2`,
		projectID, id, n.NameEN, n.NameDE, n.DisplayName)
	return affected(tag.RowsAffected(), err, fmt.Sprintf("component in project %d", id))
}

// DeleteComponentInProject removes a mapped component with its mappings,
// attribute values and the controls apps on it; fault.Conflict while one
// of those apps runs.
func (s *Store) DeleteComponentInProject(ctx context.Context, projectID, id int64) error {
	return s.tx(ctx, func(tx pgx.Tx) error {
		if err := refuseWhileAppRuns(ctx, tx, projectID, id); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `DELETE FROM components_in_project WHERE project_id = $1 AND id = $2`, projectID, id)
		return affected(tag.RowsAffected(), err, fmt.Sprintf("component in project %d", id))
	})
}

// refuseWhileAppRuns answers fault.Conflict, naming the app, while a
// controls app on the mapped component is Starting, Running or Stopping:
// a running app keeps the pins and attributes it started with, so a
// change would silently not reach it. The apps' rows stay locked until tx
// ends, so none of them moves to Starting before the change is committed
// (a start prepares its plan again once it is Starting).
func refuseWhileAppRuns(ctx context.Context, tx pgx.Tx, projectID, cipID int64) error {
	rows, err := tx.Query(ctx, `SELECT id::text, status_code FROM controls_apps WHERE project_id = $1 AND componentinproject_id = $2
		ORDER BY created_at, id FOR UPDATE`, projectID, cipID)
	if err != nil {
		return err
	}
	var id, running string
	var code int
	if _, err := pgx.ForEachRow(rows, []any{&id, &code}, func() error {
		if running == "" && AppActive(code) {
			running = id
		}
		return nil
	}); err != nil {
		return err
	}
	if running != "" {
		return fault.Conflictf("controls app %s runs on component in project %d and keeps the pins and attributes it started with: "+
			"stop it first (POST /v2/controls/app/%s/run?run=false), change the component, then run it again", running, cipID, running)
	}
	return nil
}

// Mapping says how a pin mapping or attribute value is written: MapCreate
// refuses one that exists (fault.Conflict), MapReplace one that does not
// (fault.NotFound).
type Mapping int

const (
	MapCreate Mapping = iota
	MapReplace
)

// MapPin maps the project's datapoint onto a pin of a mapped component.
// The pin must belong to the component (fault.NotFound otherwise), the
// datapoint to the project; fault.Conflict while a controls app on the
// component runs.
func (s *Store) MapPin(ctx context.Context, projectID, cipID, pinID int64, dataPointID string, how Mapping) error {
	var dpID int64
	err := s.pool.QueryRow(ctx, `SELECT id FROM datapoints WHERE project_id = $1 AND datapoint_id = $2`, projectID, dataPointID).Scan(&dpID)
	if err != nil {
		return translate(err, fmt.Sprintf("datapoint %q", dataPointID))
	}
	if err := s.requirePin(ctx, projectID, cipID, pinID); err != nil {
		return err
	}
	what := fmt.Sprintf("mapping of pin %d", pinID)
	return s.tx(ctx, func(tx pgx.Tx) error {
		if err := refuseWhileAppRuns(ctx, tx, projectID, cipID); err != nil {
			return err
		}
		if how == MapCreate {
			_, err := tx.Exec(ctx, `INSERT INTO component_pin_mappings (componentinproject_id, pin_id, datapoint_id) VALUES ($1, $2, $3)`,
				cipID, pinID, dpID)
			return translate(err, what)
		}
		tag, err := tx.Exec(ctx, `UPDATE component_pin_mappings SET datapoint_id = $3 WHERE componentinproject_id = $1 AND pin_id = $2`,
			cipID, pinID, dpID)
		return affected(tag.RowsAffected(), err, what)
	})
}

// UnmapPin removes a pin's mapping; fault.NotFound when it has none,
// fault.Conflict while a controls app on the component runs.
func (s *Store) UnmapPin(ctx context.Context, projectID, cipID, pinID int64) error {
	if err := s.requirePin(ctx, projectID, cipID, pinID); err != nil {
		return err
	}
	return s.tx(ctx, func(tx pgx.Tx) error {
		if err := refuseWhileAppRuns(ctx, tx, projectID, cipID); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `DELETE FROM component_pin_mappings WHERE componentinproject_id = $1 AND pin_id = $2`, cipID, pinID)
		return affected(tag.RowsAffected(), err, fmt.Sprintf("mapping of pin %d", pinID))
	})
}

// requirePin checks that the project has the mapped component and that its
// catalog component has the pin.
func (s *Store) requirePin(ctx context.Context, projectID, cipID, pinID int64) error {
	var hasPin bool
	err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM component_pins p WHERE p.id = $3 AND p.component_id = c.component_id)
		FROM components_in_project c WHERE c.project_id = $1 AND c.id = $2`, projectID, cipID, pinID).Scan(&hasPin)
	if err != nil {
		return translate(err, fmt.Sprintf("component in project %d", cipID))
	}
	if !hasPin {
		return fault.NotFoundf("pin %d not found on the component of component in project %d", pinID, cipID)
	}
	return nil
}

// SetAttribute writes the value of an attribute definition of a mapped
// component (checked against its value_type by the caller); fault.Conflict
// while a controls app on the component runs.
func (s *Store) SetAttribute(ctx context.Context, projectID, cipID, definitionID int64, value string, how Mapping) error {
	if _, err := s.ComponentInProjectExists(ctx, projectID, cipID); err != nil {
		return err
	}
	what := fmt.Sprintf("value of attribute %d", definitionID)
	return s.tx(ctx, func(tx pgx.Tx) error {
		if err := refuseWhileAppRuns(ctx, tx, projectID, cipID); err != nil {
			return err
		}
		if how == MapCreate {
			_, err := tx.Exec(ctx, `INSERT INTO component_attribute_values (componentinproject_id, attribute_definition_id, value)
				VALUES ($1, $2, $3)`, cipID, definitionID, value)
			return translate(err, what)
		}
		tag, err := tx.Exec(ctx, `UPDATE component_attribute_values SET value = $3
			WHERE componentinproject_id = $1 AND attribute_definition_id = $2`, cipID, definitionID, value)
		return affected(tag.RowsAffected(), err, what)
	})
}

// DeleteAttribute removes an attribute's value; fault.NotFound when unset,
// fault.Conflict while a controls app on the component runs.
func (s *Store) DeleteAttribute(ctx context.Context, projectID, cipID, definitionID int64) error {
	if _, err := s.ComponentInProjectExists(ctx, projectID, cipID); err != nil {
		return err
	}
	return s.tx(ctx, func(tx pgx.Tx) error {
		if err := refuseWhileAppRuns(ctx, tx, projectID, cipID); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `DELETE FROM component_attribute_values WHERE componentinproject_id = $1 AND attribute_definition_id = $2`,
			cipID, definitionID)
		return affected(tag.RowsAffected(), err, fmt.Sprintf("value of attribute %d", definitionID))
	})
}

// ComponentInProjectExists answers the catalog component id of a mapped
// component of the project; fault.NotFound when there is none.
func (s *Store) ComponentInProjectExists(ctx context.Context, projectID, cipID int64) (int64, error) {
	var componentID int64
	err := s.pool.QueryRow(ctx, `SELECT component_id FROM components_in_project WHERE project_id = $1 AND id = $2`,
		projectID, cipID).Scan(&componentID)
	return componentID, translate(err, fmt.Sprintf("component in project %d", cipID))
}

// affected turns "no row changed" into fault.NotFound naming what.
func affected(n int64, err error, what string) error {
	if err != nil {
		return translate(err, what)
	}
	if n == 0 {
		return fault.NotFoundf("%s not found", what)
	}
	return nil
}
