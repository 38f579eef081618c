package http

import (
	"encoding/json"
	"net/mail"
	"strings"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"

	"github.com/openbdp/bdp/fault"
	"github.com/openbdp/bdp/store"
)

// getUser answers from the principal the request was authenticated with
// (loaded from PostgreSQL and dropped on every change), and the company.
func (s *Server) getUser(c *fiber.Ctx, cl *call) (any, error) {
	p := cl.Principal
	co, err := s.store.Company(c.UserContext(), p.User.CompanyID)
	if err != nil {
		return nil, err
	}
	return userWithContext{User: p.User, Roles: nonNilSlice(p.ProjectRoles), CompanyRoles: nonNilSlice(p.CompanyRoles), Company: co}, nil
}

type createUserRequest struct {
	CompanyID *int64  `json:"company_id" doc:"optional, unlike api.md 4.2 (aedifion's body has none): null or left out is the caller's company, which the user joins; another company answers 403"`
	FirstName *string `json:"firstName" required:"true" maxLength:"200"`
	LastName  *string `json:"lastName" required:"true" maxLength:"200"`
	Email     *string `json:"email" required:"true" maxLength:"254"`
	Password  *string `json:"password" required:"true" maxLength:"1024" doc:"write-only; at least 8 characters"`
	Address   *string `json:"address" maxLength:"2000"`
	Phone     *string `json:"phone" maxLength:"200"`
}

const (
	maxNameLen     = 200
	maxTextLen     = 2000
	minPasswordLen = 8
	maxPasswordLen = 1024
)

func (s *Server) createUser(c *fiber.Ctx, cl *call) (any, error) {
	var req createUserRequest
	if err := decode(c, &req); err != nil {
		return nil, err
	}
	if req.CompanyID != nil && *req.CompanyID != cl.Perms.CompanyID {
		return nil, fault.Forbiddenf("users can only be created in your own company")
	}
	n, err := s.newUser(c, cl.Perms.CompanyID, *req.FirstName, *req.LastName, *req.Email, *req.Password)
	if err != nil {
		return nil, err
	}
	// aedifion's user creation takes address and phone too (decode held
	// them to their maxLength tags).
	if address := text(req.Address); address != nil {
		n.Address = *address
	}
	if phone := text(req.Phone); phone != nil {
		n.Phone = *phone
	}
	u, err := s.store.CreateUser(c.UserContext(), n)
	if err != nil {
		return nil, err
	}
	return ok("create", u.Summary()), nil
}

// newUser validates the fields of a new user and hashes the password.
func (s *Server) newUser(c *fiber.Ctx, companyID int64, first, last, email, password string) (store.NewUser, error) {
	n, err := newUserOf(c.UserContext(), s.hasher, first, last, email, password)
	n.CompanyID = companyID
	return n, err
}

func validEmail(e string) (string, error) {
	e = strings.TrimSpace(e)
	a, err := mail.ParseAddress(e)
	if err != nil || a.Address != e || len(e) > 254 {
		return "", fault.Invalidf("field email: %q is not a valid email address", e)
	}
	return e, nil
}

func validPassword(field, pw string) error {
	if n := utf8.RuneCountInString(pw); n < minPasswordLen || n > maxPasswordLen {
		return fault.Invalidf("field %s: between %d and %d characters", field, minPasswordLen, maxPasswordLen)
	}
	return nil
}

type updateUserRequest struct {
	FirstName *string `json:"firstName" maxLength:"200"`
	LastName  *string `json:"lastName" maxLength:"200"`
	Email     *string `json:"email" maxLength:"254"`
	Address   *string `json:"address" maxLength:"2000"`
	Phone     *string `json:"phone" maxLength:"200"`
	// A password sent here is refused with a pointer to the route that
	// changes it, rather than dropped, so that a client never believes it
	// was changed (decisions.md 10); aedifion's per-user settings are
	// refused by the route (RefusedBody).
	Password json.RawMessage `json:"password" doc:"refused (400): change the password with PUT /v2/user/password"`
}

func (s *Server) updateUser(c *fiber.Ctx, cl *call) (any, error) {
	var req updateUserRequest
	if err := decode(c, &req); err != nil {
		return nil, err
	}
	if req.Password != nil {
		return nil, fault.Invalidf("field password: PUT /v2/user does not change the password; use PUT /v2/user/password with current_password and new_password")
	}
	var p store.UserPatch
	var err error
	if p.FirstName, err = name("firstName", req.FirstName); err != nil {
		return nil, err
	}
	if p.LastName, err = name("lastName", req.LastName); err != nil {
		return nil, err
	}
	p.Address, p.Phone = text(req.Address), text(req.Phone)
	if req.Email != nil {
		e, err := validEmail(*req.Email)
		if err != nil {
			return nil, err
		}
		p.Email = &e
	}
	u, err := s.store.UpdateUser(c.UserContext(), cl.Perms.UserID, p)
	if err != nil {
		return nil, err
	}
	s.userChanged(u.ID)
	return ok("update", u.Summary()), nil
}

type passwordRequest struct {
	CurrentPassword *string `json:"current_password" required:"true" maxLength:"1024"`
	NewPassword     *string `json:"new_password" required:"true" maxLength:"1024" doc:"at least 8 characters"`
}

func (s *Server) changePassword(c *fiber.Ctx, cl *call) (any, error) {
	var req passwordRequest
	if err := decodePasswordRequest(c, &req); err != nil {
		return nil, err
	}
	if err := validPassword("new_password", *req.NewPassword); err != nil {
		return nil, err
	}
	match, err := s.checkCurrentPassword(c, cl.Principal.User, *req.CurrentPassword)
	if err != nil {
		return nil, err
	}
	if !match {
		return nil, fault.Invalidf("field current_password: does not match the current password")
	}
	hash, err := s.hasher.Hash(c.UserContext(), *req.NewPassword)
	if err != nil {
		return nil, err
	}
	if err := s.store.SetPasswordHash(c.UserContext(), cl.Perms.UserID, hash); err != nil {
		return nil, err
	}
	s.userChanged(cl.Perms.UserID)
	return ok("update", nil), nil
}

// decodePasswordRequest reads the body as JSON or, as aedifion's clients
// send it, form-encoded; either way both fields are required.
func decodePasswordRequest(c *fiber.Ctx, req *passwordRequest) error {
	if !strings.HasPrefix(c.Get(fiber.HeaderContentType), fiber.MIMEApplicationForm) {
		return decode(c, req)
	}
	form := c.Request().PostArgs()
	for k := range form.All() {
		if name := string(k); name != "current_password" && name != "new_password" {
			return fault.Invalidf("unknown field %q: the form takes current_password, new_password; nothing was changed", fault.Clip(name))
		}
	}
	for _, f := range []struct {
		name string
		dst  **string
	}{{"current_password", &req.CurrentPassword}, {"new_password", &req.NewPassword}} {
		if form.Has(f.name) {
			v := string(form.Peek(f.name))
			*f.dst = &v
		}
	}
	return checkRequired(req)
}

func (s *Server) deleteUser(c *fiber.Ctx, cl *call) (any, error) {
	u, err := s.store.DeleteUser(c.UserContext(), cl.Perms.UserID)
	if err != nil {
		return nil, err
	}
	s.userChanged(u.ID)
	return ok("delete", u.Summary()), nil
}

// userChanged forgets whatever was cached about a user: verified
// credentials and roles.
func (s *Server) userChanged(userID int64) {
	s.creds.DropUser(userID)
	s.authz.invalidate()
}

func (s *Server) userProjects(c *fiber.Ctx, cl *call) (any, error) {
	var ps []store.Project
	var err error
	if cl.Perms.HasCompanyRole() {
		ps, err = s.store.CompanyProjects(c.UserContext(), cl.Perms.CompanyID)
	} else {
		ps, err = s.store.ProjectsByID(c.UserContext(), cl.Perms.ProjectIDs())
	}
	if err != nil {
		return nil, err
	}
	return s.projectsWithContext(c.UserContext(), cl.Perms.CompanyID, ps)
}

func nonNilSlice[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
