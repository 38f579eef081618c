package store

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// NewUser is what creating a user needs; the password is already hashed.
type NewUser struct {
	CompanyID    int64
	FirstName    string
	LastName     string
	Email        string
	PasswordHash string
	// Address and Phone may be empty.
	Address, Phone string
}

// CreateCompany creates a company, its first user and its admin role
// holding adminEndpoints, assigned to that user, in one transaction.
func (s *Store) CreateCompany(ctx context.Context, c Company, admin NewUser, adminEndpoints []int32) (Company, User, CompanyRole, error) {
	var u User
	var r CompanyRole
	err := s.tx(ctx, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `INSERT INTO companies (name, description) VALUES ($1, $2) RETURNING id`,
			c.Name, c.Description).Scan(&c.ID)
		if err != nil {
			return translate(err, "company "+c.Name)
		}
		admin.CompanyID = c.ID
		if u, err = insertUser(ctx, tx, admin); err != nil {
			return err
		}
		r = CompanyRole{CompanyID: c.ID, Name: "admin", Description: "all permissions of the company",
			AuthedEndpoints: adminEndpoints, IsAdmin: true}
		if r, err = insertCompanyRole(ctx, tx, r); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO company_role_users (role_id, user_id) VALUES ($1, $2)`, r.ID, u.ID)
		return err
	})
	if err != nil {
		return Company{}, User{}, CompanyRole{}, translate(err, "company")
	}
	return c, u, r, nil
}

// Company returns one company.
func (s *Store) Company(ctx context.Context, id int64) (Company, error) {
	var c Company
	err := s.pool.QueryRow(ctx, `SELECT id, name, description, address, phone FROM companies WHERE id = $1`, id).
		Scan(&c.ID, &c.Name, &c.Description, &c.Address, &c.Phone)
	return c, translate(err, "company")
}

// HasCompany reports whether any company exists, so that the first start
// can tell how to create one.
func (s *Store) HasCompany(ctx context.Context) (bool, error) {
	var exists bool
	err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM companies)`).Scan(&exists)
	return exists, err
}
