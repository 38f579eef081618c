package store

import (
	"context"
	"strings"

	"github.com/jackc/pgx/v5"
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
		INSERT INTO users (company_id, first_name, last_name, email, password_hash)
		VALUES ($1, $2, $3, $4, $5) RETURNING `+userColumns,
		n.CompanyID, n.FirstName, n.LastName, n.Email, n.PasswordHash))
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
func (s *Store) DeleteUser(ctx context.Context, id int64) (User, error) {
	u, err := scanUser(s.pool.QueryRow(ctx, `DELETE FROM users WHERE id = $1 RETURNING `+userColumns, id))
	return u, translate(err, "user")
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

// NormalizeEmail trims an email address; comparisons ignore case in SQL.
func NormalizeEmail(e string) string { return strings.TrimSpace(e) }
