package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/openbdp/bdp/fault"
)

// ControlsApp is a stored controls app (api.md 2.13). Its status codes
// are those of virtual datapoints (StatusText); Starting and Running are
// also its desired state across restarts.
type ControlsApp struct {
	ID                   string
	ProjectID            int64
	ComponentInProjectID int64
	Algorithm            string
	Variation            string
	Name                 string
	Description          string
	Config               json.RawMessage
	StatusCode           int
	CreatedAt            time.Time
}

// ControlsAppLog is one entry of an app's log.
type ControlsAppLog struct {
	ID         int64
	CreatedAt  time.Time
	Level      string // info, warning or error
	Kind       string // status_change, write, device
	StatusCode int
	Message    string
	Detail     json.RawMessage // nil or a JSON object
	// Write is, for a write entry of an acked write, where its setpoint
	// operation stands now: what the device answered.
	Write *SetpointOperation
}

// AppTarget is a datapoint an app writes, at a priority.
type AppTarget struct {
	DataPointID string
	Priority    int
}

// Log levels of controls app logs, least severe first.
const (
	LogInfo    = "info"
	LogWarning = "warning"
	LogError   = "error"
)

// AppActive tells whether a status is one of a running app (Starting,
// Running, Stopping): such an app holds its targets and cannot be deleted.
func AppActive(code int) bool {
	return code == StatusStarting || code == StatusRunning || code == StatusStopping
}

const appColumns = `id::text, project_id, componentinproject_id, algorithm, variation, name, description, config, status_code, created_at`

func scanApp(r pgx.Row) (ControlsApp, error) {
	var a ControlsApp
	err := r.Scan(&a.ID, &a.ProjectID, &a.ComponentInProjectID, &a.Algorithm, &a.Variation, &a.Name, &a.Description,
		&a.Config, &a.StatusCode, &a.CreatedAt)
	return a, err
}

func appLog(ctx context.Context, tx pgx.Tx, id string, level, kind string, code int, message string, detail any) error {
	var raw []byte
	if detail != nil {
		var err error
		if raw, err = json.Marshal(detail); err != nil {
			return err
		}
	}
	_, err := tx.Exec(ctx, `INSERT INTO controls_app_logs (app_id, log_level, kind, status_code, message, detail)
		VALUES ($1, $2, $3, $4, $5, $6)`, id, level, kind, code, message, raw)
	return err
}

// CreateControlsApp stores a new app in status Created with its first log
// entry; the component must be mapped in the app's project.
func (s *Store) CreateControlsApp(ctx context.Context, a ControlsApp, message string) (ControlsApp, error) {
	if len(a.Config) == 0 {
		a.Config = json.RawMessage(`{}`)
	}
	var out ControlsApp
	err := s.tx(ctx, func(tx pgx.Tx) error {
		var err error
		out, err = scanApp(tx.QueryRow(ctx, `INSERT INTO controls_apps (project_id, componentinproject_id, algorithm, variation, name, description, config, status_code)
			SELECT $1, c.id, $3, $4, $5, $6, $7, $8 FROM components_in_project c WHERE c.project_id = $1 AND c.id = $2
			RETURNING `+appColumns, a.ProjectID, a.ComponentInProjectID, a.Algorithm, a.Variation, a.Name, a.Description, a.Config, StatusCreated))
		if err != nil {
			return translate(err, fmt.Sprintf("component in project %d", a.ComponentInProjectID))
		}
		return appLog(ctx, tx, out.ID, LogInfo, "status_change", StatusCreated, message, nil)
	})
	return out, err
}

// ControlsApp is one app of a project; fault.NotFound when the project has
// none with this id (id must be a uuid: the caller checks).
func (s *Store) ControlsApp(ctx context.Context, projectID int64, id string) (ControlsApp, error) {
	a, err := scanApp(s.pool.QueryRow(ctx, `SELECT `+appColumns+` FROM controls_apps WHERE project_id = $1 AND id = $2`, projectID, id))
	return a, translate(err, fmt.Sprintf("controls app %s", id))
}

// ControlsApps lists a project's apps, oldest first.
func (s *Store) ControlsApps(ctx context.Context, projectID int64) ([]ControlsApp, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+appColumns+` FROM controls_apps WHERE project_id = $1 ORDER BY created_at, id`, projectID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (ControlsApp, error) { return scanApp(r) })
}

// ActiveControlsApps lists the apps of every project whose desired state
// is running (Starting or Running): bdp serve starts them again.
func (s *Store) ActiveControlsApps(ctx context.Context) ([]ControlsApp, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+appColumns+` FROM controls_apps WHERE status_code IN ($1, $2) ORDER BY project_id, id`,
		StatusStarting, StatusRunning)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (ControlsApp, error) { return scanApp(r) })
}

// AppChange is one move of an app's status.
type AppChange struct {
	Code    int
	Level   string // log level; info when empty
	Message string
	// From, when not empty, lists the statuses the move may start from;
	// from any other the change is not made and Changed answers false.
	From []int
	// Targets, for a move to Starting, are reserved for the app: another
	// app holding one answers fault.Conflict naming it. A move to a status
	// that is not active releases the app's targets.
	Targets []AppTarget
}

// ChangeControlsApp moves an app to a new status and logs it, in one
// transaction. changed is false, and nothing is written, when the app's
// status is not in c.From.
func (s *Store) ChangeControlsApp(ctx context.Context, projectID int64, id string, c AppChange) (a ControlsApp, changed bool, err error) {
	if c.Level == "" {
		c.Level = LogInfo
	}
	err = s.tx(ctx, func(tx pgx.Tx) error {
		cur, err := scanApp(tx.QueryRow(ctx, `SELECT `+appColumns+` FROM controls_apps WHERE project_id = $1 AND id = $2 FOR UPDATE`, projectID, id))
		if err != nil {
			return translate(err, fmt.Sprintf("controls app %s", id))
		}
		a = cur
		if len(c.From) > 0 && !containsInt(c.From, cur.StatusCode) {
			return nil
		}
		if c.Code == StatusStarting {
			if err := reserveTargets(ctx, tx, projectID, id, c.Targets); err != nil {
				return err
			}
		}
		if !AppActive(c.Code) {
			if _, err := tx.Exec(ctx, `DELETE FROM controls_app_targets WHERE app_id = $1`, id); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, `UPDATE controls_apps SET status_code = $2 WHERE id = $1`, id, c.Code); err != nil {
			return err
		}
		a.StatusCode, changed = c.Code, true
		return appLog(ctx, tx, id, c.Level, "status_change", c.Code, c.Message, nil)
	})
	if err != nil {
		return ControlsApp{}, false, err
	}
	return a, changed, nil
}

// reserveTargets claims every target for the app, or none: a target held
// by another app answers fault.Conflict naming that app.
func reserveTargets(ctx context.Context, tx pgx.Tx, projectID int64, id string, targets []AppTarget) error {
	if _, err := tx.Exec(ctx, `DELETE FROM controls_app_targets WHERE app_id = $1`, id); err != nil {
		return err
	}
	for _, t := range targets {
		_, err := tx.Exec(ctx, `INSERT INTO controls_app_targets (project_id, datapoint_id, priority, app_id) VALUES ($1, $2, $3, $4)
			ON CONFLICT DO NOTHING`, projectID, t.DataPointID, t.Priority, id)
		if err != nil {
			return err
		}
		var owner, name string
		err = tx.QueryRow(ctx, `SELECT t.app_id::text, a.name FROM controls_app_targets t JOIN controls_apps a ON a.id = t.app_id
			WHERE t.project_id = $1 AND t.datapoint_id = $2 AND t.priority = $3`, projectID, t.DataPointID, t.Priority).Scan(&owner, &name)
		if err != nil {
			return err
		}
		if owner != id {
			return fault.Conflictf("datapoint %q is written at priority %d by running controls app %s (%q); "+
				"one app writes a datapoint at a priority", t.DataPointID, t.Priority, owner, name)
		}
	}
	return nil
}

// DeleteControlsApp removes an app that is not running (fault.Conflict
// while Starting, Running or Stopping) and returns it as it was last, in
// status Deleting.
func (s *Store) DeleteControlsApp(ctx context.Context, projectID int64, id string) (ControlsApp, error) {
	var a ControlsApp
	err := s.tx(ctx, func(tx pgx.Tx) error {
		var err error
		a, err = scanApp(tx.QueryRow(ctx, `SELECT `+appColumns+` FROM controls_apps WHERE project_id = $1 AND id = $2 FOR UPDATE`, projectID, id))
		if err != nil {
			return translate(err, fmt.Sprintf("controls app %s", id))
		}
		if AppActive(a.StatusCode) {
			return fault.Conflictf("controls app %s is %s (%d): stop it first (run=false)", id, StatusText(a.StatusCode), a.StatusCode)
		}
		a.StatusCode = StatusDeleting
		_, err = tx.Exec(ctx, `DELETE FROM controls_apps WHERE id = $1`, id)
		return err
	})
	return a, err
}

// AddControlsAppLog appends an entry (a write, a device's answer) with
// the app's current status; an app deleted meanwhile is not an error.
func (s *Store) AddControlsAppLog(ctx context.Context, id, level, kind, message string, detail any) error {
	return s.tx(ctx, func(tx pgx.Tx) error {
		var code int
		err := tx.QueryRow(ctx, `SELECT status_code FROM controls_apps WHERE id = $1`, id).Scan(&code)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		return appLog(ctx, tx, id, level, kind, code, message, detail)
	})
}

// AppLogQuery selects log entries: at least MinLevel, within [Start, End]
// (zero: open), oldest first when Ascending.
type AppLogQuery struct {
	MinLevel      string
	Start, End    time.Time
	Ascending     bool
	Page, PerPage int
}

// ControlsAppLogs pages through an app's log; total counts every entry
// the query selects.
func (s *Store) ControlsAppLogs(ctx context.Context, id string, q AppLogQuery) ([]ControlsAppLog, int, error) {
	levels := []string{LogInfo, LogWarning, LogError}
	switch q.MinLevel {
	case LogWarning:
		levels = levels[1:]
	case LogError:
		levels = levels[2:]
	}
	var start, end *time.Time
	if !q.Start.IsZero() {
		start = &q.Start
	}
	if !q.End.IsZero() {
		end = &q.End
	}
	where := `app_id = $1 AND log_level = ANY($2) AND ($3::timestamptz IS NULL OR l.created_at > $3) AND ($4::timestamptz IS NULL OR l.created_at < $4)`
	var total int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM controls_app_logs l WHERE `+where, id, levels, start, end).Scan(&total); err != nil {
		return nil, 0, err
	}
	if q.Page-1 > total/q.PerPage {
		return []ControlsAppLog{}, total, nil
	}
	order := "DESC"
	if q.Ascending {
		order = "ASC"
	}
	// A write's operation is joined by its reference (the uuid index of
	// setpoint_operations), so the log shows what the device answered.
	rows, err := s.pool.Query(ctx, `SELECT l.id, l.created_at, l.log_level, l.kind, l.status_code, l.message, l.detail,
			o.reference::text, o.state, o.reason, o.old_value
		FROM controls_app_logs l LEFT JOIN setpoint_operations o ON o.reference =
			(CASE WHEN l.detail->>'reference' ~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' THEN (l.detail->>'reference')::uuid END)
		WHERE `+where+` ORDER BY l.id `+order+` LIMIT $5 OFFSET $6`, id, levels, start, end, q.PerPage, (q.Page-1)*q.PerPage)
	if err != nil {
		return nil, 0, err
	}
	logs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (ControlsAppLog, error) {
		var l ControlsAppLog
		var ref, state, reason *string
		var old *float64
		err := r.Scan(&l.ID, &l.CreatedAt, &l.Level, &l.Kind, &l.StatusCode, &l.Message, &l.Detail, &ref, &state, &reason, &old)
		if ref != nil {
			l.Write = &SetpointOperation{Reference: *ref, State: *state, Reason: *reason, OldValue: old}
		}
		return l, err
	})
	return logs, total, err
}
