package http

import (
	"github.com/gofiber/fiber/v2"

	"github.com/openbdp/bdp/store"
)

type companyRoleRequest struct {
	Name            *string  `json:"name" required:"true" maxLength:"200"`
	Description     *string  `json:"description" maxLength:"2000"`
	AuthedEndpoints *[]int32 `json:"authed_endpoints" required:"true" doc:"endpoint ids; 0 means all"`
}

// companyRoleUpdate is companyRoleRequest for PUT: every field optional.
type companyRoleUpdate struct {
	Name            *string  `json:"name" maxLength:"200"`
	Description     *string  `json:"description" maxLength:"2000"`
	AuthedEndpoints *[]int32 `json:"authed_endpoints" doc:"endpoint ids; 0 means all; replaces the list"`
}

func (s *Server) companyRole(req companyRoleUpdate, base store.CompanyRole) (store.CompanyRole, error) {
	r := base
	if err := applyRoleText(req.Name, req.Description, &r.Name, &r.Description); err != nil {
		return r, err
	}
	if req.AuthedEndpoints != nil {
		r.AuthedEndpoints = *req.AuthedEndpoints
	}
	return r, s.catalog.ValidateCompanyRole(r.AuthedEndpoints)
}

func (s *Server) listCompanyRoles(c *fiber.Ctx, cl *call) (any, error) {
	rs, err := s.store.CompanyRoles(c.UserContext(), cl.Perms.CompanyID)
	return nonNilSlice(rs), err
}

func (s *Server) createCompanyRole(c *fiber.Ctx, cl *call) (any, error) {
	var req companyRoleRequest
	if err := decode(c, &req); err != nil {
		return nil, err
	}
	r, err := s.companyRole(companyRoleUpdate(req), store.CompanyRole{CompanyID: cl.Perms.CompanyID})
	if err != nil {
		return nil, err
	}
	if err := cl.Perms.CoversCompanyRole(r.AuthedEndpoints); err != nil {
		return nil, err
	}
	if r, err = s.store.CreateCompanyRole(c.UserContext(), r); err != nil {
		return nil, err
	}
	return ok("create", r), nil
}

func (s *Server) updateCompanyRole(c *fiber.Ctx, cl *call) (any, error) {
	var req companyRoleUpdate
	if err := decode(c, &req); err != nil {
		return nil, err
	}
	base, err := s.pathCompanyRole(c, cl)
	if err != nil {
		return nil, err
	}
	if err := refuseAdminChange(base.IsAdmin); err != nil {
		return nil, err
	}
	if err := cl.Perms.CoversCompanyRole(base.AuthedEndpoints); err != nil {
		return nil, err
	}
	r, err := s.companyRole(req, base)
	if err != nil {
		return nil, err
	}
	if err := cl.Perms.CoversCompanyRole(r.AuthedEndpoints); err != nil {
		return nil, err
	}
	if r, err = s.store.UpdateCompanyRole(c.UserContext(), r); err != nil {
		return nil, err
	}
	s.authz.invalidate()
	return ok("update", r), nil
}

func (s *Server) deleteCompanyRole(c *fiber.Ctx, cl *call) (any, error) {
	r, err := s.pathCompanyRole(c, cl)
	if err != nil {
		return nil, err
	}
	if err := refuseAdminChange(r.IsAdmin); err != nil {
		return nil, err
	}
	if err := cl.Perms.CoversCompanyRole(r.AuthedEndpoints); err != nil {
		return nil, err
	}
	r, err = s.store.DeleteCompanyRole(c.UserContext(), cl.Perms.CompanyID, r.ID)
	if err != nil {
		return nil, err
	}
	s.authz.invalidate()
	return ok("delete", r), nil
}

func (s *Server) pathCompanyRole(c *fiber.Ctx, cl *call) (store.CompanyRole, error) {
	id, err := pathID(c, "role_id")
	if err != nil {
		return store.CompanyRole{}, err
	}
	return s.store.CompanyRole(c.UserContext(), cl.Perms.CompanyID, id)
}

type companyAssignment struct {
	Role store.CompanyRole `json:"role"`
	User store.UserSummary `json:"user"`
}

func (s *Server) assignCompanyRole(c *fiber.Ctx, cl *call) (any, error) {
	r, u, err := s.companyAssignment(c, cl)
	if err != nil {
		return nil, err
	}
	if err := cl.Perms.CoversCompanyRole(r.AuthedEndpoints); err != nil {
		return nil, err
	}
	if err := s.store.AssignCompanyRole(c.UserContext(), r.ID, u.ID); err != nil {
		return nil, err
	}
	s.authz.invalidate()
	return ok("create", companyAssignment{Role: r, User: u.Summary()}), nil
}

func (s *Server) unassignCompanyRole(c *fiber.Ctx, cl *call) (any, error) {
	r, u, err := s.companyAssignment(c, cl)
	if err != nil {
		return nil, err
	}
	if err := cl.Perms.CoversCompanyRole(r.AuthedEndpoints); err != nil {
		return nil, err
	}
	if err := s.store.UnassignCompanyRole(c.UserContext(), r.ID, u.ID); err != nil {
		return nil, err
	}
	s.authz.invalidate()
	return ok("delete", companyAssignment{Role: r, User: u.Summary()}), nil
}

func (s *Server) companyAssignment(c *fiber.Ctx, cl *call) (store.CompanyRole, store.User, error) {
	r, err := s.pathCompanyRole(c, cl)
	if err != nil {
		return r, store.User{}, err
	}
	u, err := s.companyUser(c, cl)
	return r, u, err
}
