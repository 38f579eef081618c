package store

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/openbdp/bdp/fault"
)

// mqttUsersChannel is the PostgreSQL notification channel of changes to
// MQTT users: a trigger (migration 00007) sends the row id on every
// insert, update and delete, within the changing transaction.
const mqttUsersChannel = "bdp_mqtt_users"

// MQTTUser is a set of MQTT credentials of a project: a short-lived user
// made through the API (api.md 4.4) or the edge device's (Edge, decisions.md 2).
type MQTTUser struct {
	ID           int64
	ProjectID    int64
	CompanyID    int64 // the project's company
	Username     string
	PasswordHash string // auth.Hasher encoding
	Rights       string // "read" or "write"
	Description  string
	ValidUntil   *time.Time // nil: no expiry (edge credentials)
	CreatedBy    int64      // the creator's user id; 0 for edge credentials
	Edge         bool
	CreatedAt    time.Time
}

// MQTT user rights.
const (
	MQTTRead  = "read"
	MQTTWrite = "write"
)

// EdgeUsername is the username of a project's edge credentials.
func EdgeUsername(projectID int64) string {
	return "edge-" + strconv.FormatInt(projectID, 10)
}

// mqttUserSelect reads rows of a statement named m (a CTE or the table)
// with their project's company.
const mqttUserSelect = `SELECT m.id, m.project_id, p.company_id, m.username, m.password_hash, m.rights,
	m.description, m.valid_until, COALESCE(m.created_by, 0), m.edge, m.created_at
	FROM m JOIN projects p ON p.id = m.project_id`

// mqttUserVisible is the condition every read applies: an expired row is
// absent even before DeleteExpiredMQTTUsers removes it.
const mqttUserVisible = `(valid_until IS NULL OR valid_until > now())`

func scanMQTTUser(row pgx.Row) (MQTTUser, error) {
	var u MQTTUser
	err := row.Scan(&u.ID, &u.ProjectID, &u.CompanyID, &u.Username, &u.PasswordHash, &u.Rights,
		&u.Description, &u.ValidUntil, &u.CreatedBy, &u.Edge, &u.CreatedAt)
	return u, err
}

func scanMQTTUsers(rows pgx.Rows, err error) ([]MQTTUser, error) {
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (MQTTUser, error) { return scanMQTTUser(r) })
}

// CreateMQTTUser stores a user-made MQTT user (u.ProjectID, Username,
// PasswordHash, Rights, Description, ValidUntil, CreatedBy; the rest is
// ignored) and returns it whole. A taken username is fault.Conflict.
func (s *Store) CreateMQTTUser(ctx context.Context, u MQTTUser) (MQTTUser, error) {
	var createdBy *int64
	if u.CreatedBy != 0 {
		createdBy = &u.CreatedBy
	}
	out, err := scanMQTTUser(s.pool.QueryRow(ctx, `
		WITH m AS (
			INSERT INTO mqtt_users (project_id, username, password_hash, rights, description, valid_until, created_by)
			VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING *
		) `+mqttUserSelect,
		u.ProjectID, u.Username, u.PasswordHash, u.Rights, u.Description, u.ValidUntil, createdBy))
	return out, translate(err, "MQTT user "+strconv.Quote(u.Username))
}

// UpdateMQTTUser changes the given fields of an unexpired MQTT user of a
// project; nil keeps a field.
func (s *Store) UpdateMQTTUser(ctx context.Context, projectID, id int64, passwordHash, rights, desc *string, validUntil *time.Time) (MQTTUser, error) {
	u, err := scanMQTTUser(s.pool.QueryRow(ctx, `
		WITH m AS (
			UPDATE mqtt_users SET
				password_hash = COALESCE($3, password_hash),
				rights        = COALESCE($4, rights),
				description   = COALESCE($5, description),
				valid_until   = COALESCE($6, valid_until)
			WHERE project_id = $1 AND id = $2 AND `+mqttUserVisible+` RETURNING *
		) `+mqttUserSelect,
		projectID, id, passwordHash, rights, desc, validUntil))
	return u, translate(err, "MQTT user")
}

// MQTTUser returns one unexpired MQTT user of a project.
func (s *Store) MQTTUser(ctx context.Context, projectID, id int64) (MQTTUser, error) {
	u, err := scanMQTTUser(s.pool.QueryRow(ctx, `
		WITH m AS (SELECT * FROM mqtt_users WHERE project_id = $1 AND id = $2 AND `+mqttUserVisible+`) `+mqttUserSelect,
		projectID, id))
	return u, translate(err, "MQTT user")
}

// MQTTUserByUsername returns the unexpired MQTT user of that username, of
// any project: what a CONNECT looks up.
func (s *Store) MQTTUserByUsername(ctx context.Context, username string) (MQTTUser, error) {
	u, err := scanMQTTUser(s.pool.QueryRow(ctx, `
		WITH m AS (SELECT * FROM mqtt_users WHERE username = $1 AND `+mqttUserVisible+`) `+mqttUserSelect,
		username))
	return u, translate(err, "MQTT user")
}

// MQTTUsers lists the unexpired MQTT users of a project, edge credentials
// included, by id.
func (s *Store) MQTTUsers(ctx context.Context, projectID int64) ([]MQTTUser, error) {
	us, err := scanMQTTUsers(s.pool.Query(ctx, `
		WITH m AS (SELECT * FROM mqtt_users WHERE project_id = $1 AND `+mqttUserVisible+`) `+mqttUserSelect+`
		ORDER BY m.id`, projectID))
	return us, translate(err, "MQTT users")
}

// DeleteMQTTUser removes an unexpired MQTT user of a project.
func (s *Store) DeleteMQTTUser(ctx context.Context, projectID, id int64) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM mqtt_users WHERE project_id = $1 AND id = $2 AND `+mqttUserVisible, projectID, id)
	if err == nil && tag.RowsAffected() == 0 {
		err = pgx.ErrNoRows
	}
	return translate(err, "MQTT user")
}

// PutEdgeCredentials creates the edge credentials of a project (username
// EdgeUsername, rights write, no expiry) or, when they exist, replaces
// their password hash: the same row, so its id stays and the change
// notification makes the broker drop the old session. An unknown project
// is fault.NotFound.
func (s *Store) PutEdgeCredentials(ctx context.Context, projectID int64, passwordHash string) (MQTTUser, error) {
	u, err := scanMQTTUser(s.pool.QueryRow(ctx, `
		WITH m AS (
			INSERT INTO mqtt_users (project_id, username, password_hash, rights, edge)
			VALUES ($1, $2, $3, 'write', true)
			ON CONFLICT (username) DO UPDATE SET password_hash = EXCLUDED.password_hash
				WHERE mqtt_users.edge AND mqtt_users.project_id = EXCLUDED.project_id
			RETURNING *
		) `+mqttUserSelect,
		projectID, EdgeUsername(projectID), passwordHash))
	if errors.Is(err, pgx.ErrNoRows) {
		// The username belongs to a row that is not this project's edge
		// credentials; the API refuses such names, so only a direct
		// write to the table can get here.
		return u, fault.Conflictf("username %s is taken by another MQTT user", EdgeUsername(projectID))
	}
	err = translate(err, "edge credentials")
	if fault.Is(err, fault.NotFound) { // the project's foreign key
		return u, fault.Wrap(fault.NotFound, err, "project "+strconv.FormatInt(projectID, 10)+" not found")
	}
	return u, err
}

// NextMQTTUserExpiry returns the earliest valid_until of all MQTT users,
// expired ones included (they are due for removal); false when no user
// expires.
func (s *Store) NextMQTTUserExpiry(ctx context.Context) (time.Time, bool, error) {
	var next *time.Time
	if err := s.pool.QueryRow(ctx, `SELECT min(valid_until) FROM mqtt_users`).Scan(&next); err != nil {
		return time.Time{}, false, translate(err, "MQTT users")
	}
	if next == nil {
		return time.Time{}, false, nil
	}
	return *next, true, nil
}

// ExpiredMQTTUsers returns the users whose validity ended by now, still
// stored (DeleteExpiredMQTTUsers removes them).
func (s *Store) ExpiredMQTTUsers(ctx context.Context, now time.Time) ([]MQTTUser, error) {
	us, err := scanMQTTUsers(s.pool.Query(ctx, `
		WITH m AS (SELECT * FROM mqtt_users WHERE valid_until <= $1) `+mqttUserSelect+`
		ORDER BY m.id`, now))
	return us, translate(err, "MQTT users")
}

// DeleteExpiredMQTTUsers removes every MQTT user whose valid_until is at
// or before now and returns them.
func (s *Store) DeleteExpiredMQTTUsers(ctx context.Context, now time.Time) ([]MQTTUser, error) {
	us, err := scanMQTTUsers(s.pool.Query(ctx, `
		WITH m AS (DELETE FROM mqtt_users WHERE valid_until <= $1 RETURNING *) `+mqttUserSelect+`
		ORDER BY m.id`, now))
	return us, translate(err, "MQTT users")
}

// ListenMQTTUsersChanged calls changed with the id of every MQTT user
// inserted, changed or deleted (by any process, once committed) until ctx
// ends. Each time it starts listening, the first time included, it calls
// changed(0): any user may have changed before (a timer armed from an
// earlier read must be re-armed), or in the gap of a lost connection.
// changed runs on this goroutine.
func (s *Store) ListenMQTTUsersChanged(ctx context.Context, changed func(id int64)) {
	s.listenChannel(ctx, mqttUsersChannel, func(bool) { changed(0) }, func(payload string) {
		id, err := strconv.ParseInt(payload, 10, 64)
		if err != nil || id <= 0 {
			id = 0 // not ours to read: any user, to be safe
		}
		changed(id)
	})
}
