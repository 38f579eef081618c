package http

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/openbdp/bdp/auth"
	"github.com/openbdp/bdp/fault"
	"github.com/openbdp/bdp/store"
)

// These are the operations of `bdp admin`, which runs without a server:
// the same validation and storage as the operator API, so that a first
// company needs neither an operator token nor a restart.

// CompanyAdmin is the first user of a company made by CreateCompany.
type CompanyAdmin struct {
	FirstName, LastName, Email, Password string
}

// CreateCompany creates a company and its admin as POST /operator/companies
// does. The admin role holds every endpoint persisted so far; routes a
// newer server persists later join it, as they join every admin role.
func CreateCompany(ctx context.Context, st *store.Store, hasher *auth.Hasher, companyName string, a CompanyAdmin) (store.Company, store.User, error) {
	name, err := nameWithin("name", companyName)
	if err != nil {
		return store.Company{}, store.User{}, err
	}
	for field, v := range map[string]string{"firstName": a.FirstName, "lastName": a.LastName} {
		if _, err := nameWithin(field, v); err != nil {
			return store.Company{}, store.User{}, err
		}
	}
	n, err := newUserOf(ctx, hasher, a.FirstName, a.LastName, a.Email, a.Password)
	if err != nil {
		return store.Company{}, store.User{}, err
	}
	ids, err := st.EndpointIDs(ctx)
	if err != nil {
		return store.Company{}, store.User{}, fmt.Errorf("read the endpoint catalog: %w", err)
	}
	co, u, _, err := st.CreateCompany(ctx, store.Company{Name: name}, n, ids)
	return co, u, err
}

// ResetPassword sets a new password for the user with this email. Running
// servers on the database take it at once, and drop the old password and
// the tokens issued with it at once too: the change notifies them
// (migration 00006).
func ResetPassword(ctx context.Context, st *store.Store, hasher *auth.Hasher, email, password string) (store.User, error) {
	u, err := st.UserByEmail(ctx, email)
	if err != nil {
		return store.User{}, err
	}
	if err := validPassword("password", password); err != nil {
		return store.User{}, err
	}
	hash, err := hasher.Hash(ctx, password)
	if err != nil {
		return store.User{}, err
	}
	return u, st.SetPasswordHash(ctx, u.ID, hash)
}

// newUserOf validates the email and password of a new user and hashes the
// password; the names' limits are its callers' (maxLength tags, or
// nameWithin).
func newUserOf(ctx context.Context, hasher *auth.Hasher, first, last, email, password string) (store.NewUser, error) {
	n := store.NewUser{FirstName: strings.TrimSpace(first), LastName: strings.TrimSpace(last)}
	var err error
	if n.Email, err = validEmail(email); err != nil {
		return n, err
	}
	if err := validPassword("password", password); err != nil {
		return n, err
	}
	n.PasswordHash, err = hasher.Hash(ctx, password)
	return n, err
}

// nameWithin is name for a value given outside a request body (bdp
// admin), where no maxLength tag limits it: trimmed, not blank, at most
// maxNameLen characters.
func nameWithin(field, v string) (string, error) {
	t, err := name(field, &v)
	if err != nil {
		return "", err
	}
	if utf8.RuneCountInString(*t) > maxNameLen {
		return "", fault.Invalidf("field %s: at most %d characters", field, maxNameLen)
	}
	return *t, nil
}
