package store

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/openbdp/bdp/fault"
)

const userColumns = `id, company_id, first_name, last_name, email, address, phone, password_hash`

func scanUser(row pgx.Row) (User, error) {
	var u User
	err := row.Scan(&u.ID, &u.CompanyID, &u.FirstName, &u.LastName, &u.Email, &u.Address, &u.Phone, &u.PasswordHash)
	return u, err
}

// querier is what both the pool and a transaction offer.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func insertUser(ctx context.Context, q querier, n NewUser) (User, error) {
	u, err := scanUser(q.QueryRow(ctx, `
		INSERT INTO users (company_id, first_name, last_name, email, password_hash, address, phone)
		VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING `+userColumns,
		n.CompanyID, n.FirstName, n.LastName, n.Email, n.PasswordHash, n.Address, n.Phone))
	return u, translate(err, "user with email "+n.Email)
}

// CreateUser creates a user without roles.
func (s *Store) CreateUser(ctx context.Context, n NewUser) (User, error) {
	return insertUser(ctx, s.pool, n)
}

// UserByEmail finds a user by email, ignoring case.
func (s *Store) UserByEmail(ctx context.Context, email string) (User, error) {
	u, err := scanUser(s.pool.QueryRow(ctx, `SELECT `+userColumns+` FROM users WHERE lower(email) = lower($1)`, email))
	return u, translate(err, "user")
}

// User returns one user.
func (s *Store) User(ctx context.Context, id int64) (User, error) {
	u, err := scanUser(s.pool.QueryRow(ctx, `SELECT `+userColumns+` FROM users WHERE id = $1`, id))
	return u, translate(err, "user")
}

// UserPatch holds the profile fields a user may change; nil leaves a field
// as it is.
type UserPatch struct {
	FirstName, LastName, Email, Address, Phone *string
}

// UpdateUser changes the given fields of a user's profile.
func (s *Store) UpdateUser(ctx context.Context, id int64, p UserPatch) (User, error) {
	u, err := scanUser(s.pool.QueryRow(ctx, `
		UPDATE users SET
			first_name = COALESCE($2, first_name),
			last_name  = COALESCE($3, last_name),
			email      = COALESCE($4, email),
			address    = COALESCE($5, address),
			phone      = COALESCE($6, phone)
		WHERE id = $1 RETURNING `+userColumns,
		id, p.FirstName, p.LastName, p.Email, p.Address, p.Phone))
	what := "user"
	if p.Email != nil {
		what = "user with email " + *p.Email
	}
	return u, translate(err, what)
}

// SetPasswordHash replaces a user's password hash.
func (s *Store) SetPasswordHash(ctx context.Context, id int64, hash string) error {
	tag, err := s.pool.Exec(ctx, `UPDATE users SET password_hash = $2 WHERE id = $1`, id, hash)
	if err == nil && tag.RowsAffected() == 0 {
		err = pgx.ErrNoRows
	}
	return translate(err, "user")
}

// DeleteUser removes a user and their role assignments.
// It refuses (conflict) to delete the last holder of a company admin role,
// which would leave the company without anyone able to administer it.
func (s *Store) DeleteUser(ctx context.Context, id int64) (User, error) {
	var u User
	err := s.tx(ctx, func(tx pgx.Tx) error {
		if err := refuseLastAdmin(ctx, tx, id, 0); err != nil {
			return err
		}
		var err error
		u, err = scanUser(tx.QueryRow(ctx, `DELETE FROM users WHERE id = $1 RETURNING `+userColumns, id))
		return err
	})
	return u, translate(err, "user")
}

// refuseLastAdmin fails when userID is the only holder of a company admin
// role (only of roleID, when it is not 0). It locks those roles' rows so
// two admins removing each other cannot both succeed.
func refuseLastAdmin(ctx context.Context, tx pgx.Tx, userID, roleID int64) error {
	var sole bool
	err := tx.QueryRow(ctx, `
		WITH held AS (
			SELECT r.id FROM company_roles r JOIN company_role_users a ON a.role_id = r.id
			WHERE a.user_id = $1 AND r.is_admin AND ($2 = 0 OR r.id = $2)
			FOR UPDATE OF r
		)
		SELECT EXISTS (SELECT 1 FROM held h WHERE NOT EXISTS (
			SELECT 1 FROM company_role_users b WHERE b.role_id = h.id AND b.user_id <> $1))`,
		userID, roleID).Scan(&sole)
	if err != nil {
		return err
	}
	if sole {
		return fault.Conflictf("this is the last holder of the company admin role; assign the role to another user first")
	}
	return nil
}

// CompanyUsers lists the users of a company by id.
func (s *Store) CompanyUsers(ctx context.Context, companyID int64) ([]UserSummary, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT id, company_id, first_name, last_name, email FROM users WHERE company_id = $1 ORDER BY id`, companyID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (UserSummary, error) {
		var u UserSummary
		err := r.Scan(&u.ID, &u.CompanyID, &u.FirstName, &u.LastName, &u.Email)
		return u, err
	})
}
