package http

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/openbdp/bdp/fault"
	"github.com/openbdp/bdp/rbac"
	"github.com/openbdp/bdp/store"
)

type companyResponse struct {
	Company  store.Company       `json:"company"`
	Projects []store.Project     `json:"projects"`
	Users    []store.UserSummary `json:"users"`
}

func (s *Server) getCompany(c *fiber.Ctx, cl *call) (any, error) {
	ctx := c.UserContext()
	co, err := s.store.Company(ctx, cl.Perms.CompanyID)
	if err != nil {
		return nil, err
	}
	ps, err := s.store.CompanyProjects(ctx, co.ID)
	if err != nil {
		return nil, err
	}
	us, err := s.store.CompanyUsers(ctx, co.ID)
	if err != nil {
		return nil, err
	}
	return companyResponse{Company: co, Projects: nonNilSlice(ps), Users: nonNilSlice(us)}, nil
}

type createProjectRequest struct {
	Name        *string `json:"name" required:"true" maxLength:"200"`
	Description *string `json:"description" maxLength:"2000"`
	CompanyID   *int64  `json:"company_id" doc:"must be the caller's company; defaults to it"`
}

type projectCreated struct {
	Project store.Project     `json:"project"`
	Role    store.ProjectRole `json:"role"`
}

// createProject creates the project and its admin role, assigned to the
// caller, in one transaction.
func (s *Server) createProject(c *fiber.Ctx, cl *call) (any, error) {
	var req createProjectRequest
	if err := decode(c, &req); err != nil {
		return nil, err
	}
	if req.CompanyID != nil && *req.CompanyID != cl.Perms.CompanyID {
		return nil, fault.Forbiddenf("projects can only be created in your own company")
	}
	name, desc := text(req.Name), text(req.Description)
	p := store.Project{CompanyID: cl.Perms.CompanyID, Name: *name, Description: str(desc)}
	p, role, err := s.store.CreateProject(c.UserContext(), cl.Perms.UserID, p, s.catalog.ProjectIDs())
	if err != nil {
		return nil, err
	}
	s.authz.invalidate()
	return ok("create", projectCreated{Project: p, Role: role}), nil
}

type projectDetail struct {
	projectWithContext
	Datapoints []string `json:"datapoints" doc:"dataPointIDs of the project the caller may read"`
}

func (s *Server) getProject(c *fiber.Ctx, cl *call) (any, error) {
	p, err := s.store.Project(c.UserContext(), cl.ProjectID)
	if err != nil {
		return nil, err
	}
	ids, err := s.readableDatapointIDs(c, cl)
	if err != nil {
		return nil, err
	}
	withContext, err := s.projectsWithContext(c.UserContext(), p.CompanyID, []store.Project{p})
	if err != nil {
		return nil, err
	}
	return projectDetail{projectWithContext: withContext[0], Datapoints: nonNilSlice(ids)}, nil
}

// readableDatapointIDs lists the dataPointIDs of the call's project that
// the caller may read: all of them with a company role, otherwise those
// their TagAuths grant read on.
func (s *Server) readableDatapointIDs(c *fiber.Ctx, cl *call) ([]string, error) {
	if cl.Perms.HasCompanyRole() {
		return s.store.ProjectDatapointIDs(c.UserContext(), cl.ProjectID)
	}
	dps, err := s.store.ProjectDatapoints(c.UserContext(), cl.ProjectID, nil)
	if err != nil {
		return nil, err
	}
	all := make([]rbac.Datapoint, len(dps))
	for i, d := range dps {
		all[i] = rbac.Datapoint{ID: d.ID, Tags: d.Tags}
	}
	readable := cl.Perms.FilterDatapoints(cl.ProjectID, all, false)
	ids := make([]string, len(readable))
	for i, d := range readable {
		ids[i] = d.ID
	}
	return ids, nil
}

type updateProjectRequest struct {
	Name        *string `json:"name" maxLength:"200"`
	Description *string `json:"description" maxLength:"2000"`
}

func (s *Server) updateProject(c *fiber.Ctx, cl *call) (any, error) {
	var req updateProjectRequest
	if err := decode(c, &req); err != nil {
		return nil, err
	}
	name, desc := text(req.Name), text(req.Description)
	if name != nil && *name == "" {
		return nil, fault.Invalidf("field name must not be empty")
	}
	p, err := s.store.UpdateProject(c.UserContext(), cl.ProjectID, name, desc)
	if err != nil {
		return nil, err
	}
	return ok("update", p), nil
}

func (s *Server) deleteProject(c *fiber.Ctx, cl *call) (any, error) {
	if err := s.requireWriteEveryDatapoint(c, cl); err != nil {
		return nil, err
	}
	if err := s.checkProjectName(c, cl.ProjectID); err != nil {
		return nil, err
	}
	p, err := s.store.DeleteProject(c.UserContext(), cl.ProjectID)
	if err != nil {
		return nil, err
	}
	if err := s.runner.StopProject(c.UserContext(), p.ID); err != nil {
		s.log.Warn("stop the virtual datapoints of a deleted project", slog.Int64("project_id", p.ID), slog.Any("error", err))
	}
	s.authz.forgetProject(p.ID)
	s.ingest.ForgetProject(p.ID)
	s.authz.invalidate()
	s.deleteProjectFiles(c.UserContext(), p.ID)
	return ok("delete", p), nil
}

// deleteFilesTimeout bounds the deletion of a deleted project's objects.
const deleteFilesTimeout = 2 * time.Minute

// deleteProjectFiles deletes the objects of a deleted project's files
// (their rows went with the project). The project is gone whatever
// happens here: a failure is logged, and the repair at the next start
// deletes what is left. A client hanging up does not stop it half-way; a
// store that stops answering does not hold the answer longer than
// deleteFilesTimeout.
func (s *Server) deleteProjectFiles(ctx context.Context, projectID int64) {
	if s.files == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), deleteFilesTimeout)
	defer cancel()
	if err := s.files.DeleteOwner(ctx, store.FileSpaceProject, projectID); err != nil {
		s.log.Warn("delete the files of a deleted project; the next start's repair deletes them",
			slog.Int64("project_id", projectID), slog.Any("error", err))
	}
}

// requireWriteEveryDatapoint refuses to delete a project unless the
// caller may write every datapoint in it (TagAuths, rbac.DatapointAccess),
// the outputs of its virtual datapoints included, stored yet or not:
// deleting the project deletes them all, and a role that may only read
// some of them must not be able to delete them this way.
func (s *Server) requireWriteEveryDatapoint(c *fiber.Ctx, cl *call) error {
	if cl.Perms.HasCompanyRole() {
		return nil
	}
	ctx := c.UserContext()
	stored, err := s.store.ProjectDatapoints(ctx, cl.ProjectID, nil)
	if err != nil {
		return err
	}
	dps := make([]rbac.Datapoint, 0, len(stored))
	isStored := make(map[string]bool, len(stored))
	for _, d := range stored {
		dps = append(dps, rbac.Datapoint{ID: d.ID, Tags: d.Tags})
		isStored[d.ID] = true
	}
	outputs, err := s.store.ProjectVDPConfigs(ctx, cl.ProjectID)
	if err != nil {
		return err
	}
	for _, id := range slices.Sorted(maps.Keys(outputs)) {
		if !isStored[id] {
			dps = append(dps, rbac.Datapoint{ID: id}) // no observation yet: no tags, judged by its name
		}
	}
	for _, dp := range dps {
		if !cl.Perms.DatapointAccess(cl.ProjectID, dp).Write {
			return fault.Forbiddenf("no write access to datapoint %q, which deleting the project would delete; nothing was deleted", dp.ID)
		}
	}
	return nil
}

// checkProjectName is aedifion's safeguard on deleting a project: a
// project_name that is given must be the project's exact name. The
// given name is not quoted back; the caller knows what they sent.
func (s *Server) checkProjectName(c *fiber.Ctx, projectID int64) error {
	if !c.Context().QueryArgs().Has("project_name") {
		return nil
	}
	p, err := s.store.Project(c.UserContext(), projectID)
	if err != nil {
		return err
	}
	if c.Query("project_name") != p.Name {
		return fault.Invalidf("project_name does not match the name of project %d; nothing was deleted", projectID)
	}
	return nil
}
