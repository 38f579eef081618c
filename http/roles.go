package http

import (
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/openbdp/bdp/fault"
	"github.com/openbdp/bdp/store"
)

type tagAuthRequest struct {
	Key   *string `json:"key" required:"true" maxLength:"200" doc:"name (the dataPointID) or another tag key"`
	Value *string `json:"value" required:"true" maxLength:"1024" doc:"* matches any run of characters"`
	Read  *bool   `json:"read"`
	Write *bool   `json:"write"`
}

type projectRoleRequest struct {
	Name            *string           `json:"name" required:"true" maxLength:"200"`
	Description     *string           `json:"description" maxLength:"2000"`
	AuthedEndpoints *[]int32          `json:"authed_endpoints" required:"true" doc:"endpoint ids; 0 means all"`
	AuthedTags      *[]tagAuthRequest `json:"authed_tags"`
}

// projectRoleUpdate is projectRoleRequest for PUT: every field optional;
// a given list replaces the old one entirely.
type projectRoleUpdate struct {
	Name            *string           `json:"name" maxLength:"200"`
	Description     *string           `json:"description" maxLength:"2000"`
	AuthedEndpoints *[]int32          `json:"authed_endpoints" doc:"endpoint ids; 0 means all; replaces the list"`
	AuthedTags      *[]tagAuthRequest `json:"authed_tags" doc:"replaces the list"`
}

// projectRole validates a request into a role of the project. base holds
// the current role on update; fields the request omits keep its values.
func (s *Server) projectRole(req projectRoleUpdate, base store.ProjectRole) (store.ProjectRole, error) {
	r := base
	if err := applyRoleText(req.Name, req.Description, &r.Name, &r.Description); err != nil {
		return r, err
	}
	if req.AuthedEndpoints != nil {
		r.AuthedEndpoints = *req.AuthedEndpoints
	}
	if err := s.catalog.ValidateProjectRole(r.AuthedEndpoints); err != nil {
		return r, err
	}
	if req.AuthedTags != nil {
		r.AuthedTags = make([]store.TagAuth, 0, len(*req.AuthedTags))
		for i, t := range *req.AuthedTags {
			if t.Key == nil || t.Value == nil || strings.TrimSpace(*t.Key) == "" || *t.Value == "" {
				return r, fault.Invalidf("authed_tags[%d]: key and value are required", i)
			}
			r.AuthedTags = append(r.AuthedTags, store.TagAuth{Key: strings.TrimSpace(*t.Key), Value: *t.Value,
				Read: t.Read != nil && *t.Read, Write: t.Write != nil && *t.Write})
		}
	}
	if r.AuthedTags == nil {
		r.AuthedTags = []store.TagAuth{}
	}
	return r, nil
}

// refuseAdminChange keeps admin roles whole: api.md has every company and
// project own an admin role holding all endpoints, extended as the API
// grows. Emptying or deleting it could lock everyone out.
func refuseAdminChange(isAdmin bool) error {
	if isAdmin {
		return fault.Conflictf("admin roles cannot be changed or deleted; create another role instead")
	}
	return nil
}

// applyRoleText validates a role's name and description from a request
// and overwrites the given ones; nil leaves a field as it is.
func applyRoleText(reqName, reqDesc *string, name, desc *string) error {
	if n := text(reqName); n != nil {
		if *n == "" {
			return fault.Invalidf("field name must not be empty")
		}
		*name = *n
	}
	if d := text(reqDesc); d != nil {
		*desc = *d
	}
	return nil
}

func (s *Server) listProjectRoles(c *fiber.Ctx, cl *call) (any, error) {
	rs, err := s.store.ProjectRoles(c.UserContext(), cl.ProjectID)
	return nonNilSlice(rs), err
}

func (s *Server) createProjectRole(c *fiber.Ctx, cl *call) (any, error) {
	var req projectRoleRequest
	if err := decode(c, &req); err != nil {
		return nil, err
	}
	r, err := s.projectRole(projectRoleUpdate(req), store.ProjectRole{ProjectID: cl.ProjectID})
	if err != nil {
		return nil, err
	}
	if err := cl.Perms.CoversProjectRole(cl.ProjectID, r.AuthedEndpoints, r.AuthedTags); err != nil {
		return nil, err
	}
	if r, err = s.store.CreateProjectRole(c.UserContext(), r); err != nil {
		return nil, err
	}
	return ok("create", r), nil
}

func (s *Server) updateProjectRole(c *fiber.Ctx, cl *call) (any, error) {
	var req projectRoleUpdate
	if err := decode(c, &req); err != nil {
		return nil, err
	}
	base, err := s.pathProjectRole(c, cl)
	if err != nil {
		return nil, err
	}
	if err := refuseAdminChange(base.IsAdmin); err != nil {
		return nil, err
	}
	if err := cl.Perms.CoversProjectRole(cl.ProjectID, base.AuthedEndpoints, base.AuthedTags); err != nil {
		return nil, err
	}
	r, err := s.projectRole(req, base)
	if err != nil {
		return nil, err
	}
	if err := cl.Perms.CoversProjectRole(cl.ProjectID, r.AuthedEndpoints, r.AuthedTags); err != nil {
		return nil, err
	}
	if r, err = s.store.UpdateProjectRole(c.UserContext(), r); err != nil {
		return nil, err
	}
	s.authz.invalidate()
	return ok("update", r), nil
}

func (s *Server) deleteProjectRole(c *fiber.Ctx, cl *call) (any, error) {
	r, err := s.pathProjectRole(c, cl)
	if err != nil {
		return nil, err
	}
	if err := refuseAdminChange(r.IsAdmin); err != nil {
		return nil, err
	}
	if err := cl.Perms.CoversProjectRole(cl.ProjectID, r.AuthedEndpoints, r.AuthedTags); err != nil {
		return nil, err
	}
	r, err = s.store.DeleteProjectRole(c.UserContext(), cl.ProjectID, r.ID)
	if err != nil {
		return nil, err
	}
	s.authz.invalidate()
	return ok("delete", r), nil
}

func (s *Server) pathProjectRole(c *fiber.Ctx, cl *call) (store.ProjectRole, error) {
	id, err := pathID(c, "role_id")
	if err != nil {
		return store.ProjectRole{}, err
	}
	return s.store.ProjectRole(c.UserContext(), cl.ProjectID, id)
}

type projectAssignment struct {
	Role store.ProjectRole `json:"role"`
	User store.UserSummary `json:"user"`
}

// assignProjectRole gives a user of the caller's company a role, but only
// one whose permissions the caller holds too.
func (s *Server) assignProjectRole(c *fiber.Ctx, cl *call) (any, error) {
	r, u, err := s.projectAssignment(c, cl)
	if err != nil {
		return nil, err
	}
	if err := cl.Perms.CoversProjectRole(cl.ProjectID, r.AuthedEndpoints, r.AuthedTags); err != nil {
		return nil, err
	}
	if err := s.store.AssignProjectRole(c.UserContext(), r.ID, u.ID); err != nil {
		return nil, err
	}
	s.authz.invalidate()
	return ok("create", projectAssignment{Role: r, User: u.Summary()}), nil
}

func (s *Server) unassignProjectRole(c *fiber.Ctx, cl *call) (any, error) {
	r, u, err := s.projectAssignment(c, cl)
	if err != nil {
		return nil, err
	}
	if err := cl.Perms.CoversProjectRole(cl.ProjectID, r.AuthedEndpoints, r.AuthedTags); err != nil {
		return nil, err
	}
	if err := s.store.UnassignProjectRole(c.UserContext(), r.ID, u.ID); err != nil {
		return nil, err
	}
	s.authz.invalidate()
	return ok("delete", projectAssignment{Role: r, User: u.Summary()}), nil
}

func (s *Server) projectAssignment(c *fiber.Ctx, cl *call) (store.ProjectRole, store.User, error) {
	r, err := s.pathProjectRole(c, cl)
	if err != nil {
		return r, store.User{}, err
	}
	u, err := s.companyUser(c, cl)
	return r, u, err
}

// companyUser reads the user_id path parameter; users of other companies
// are as unknown as users that do not exist.
func (s *Server) companyUser(c *fiber.Ctx, cl *call) (store.User, error) {
	id, err := pathID(c, "user_id")
	if err != nil {
		return store.User{}, err
	}
	u, err := s.store.User(c.UserContext(), id)
	if err == nil && u.CompanyID != cl.Perms.CompanyID {
		err = fault.NotFoundf("user not found")
	}
	return u, err
}
