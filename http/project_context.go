package http

import (
	"context"

	"github.com/gofiber/fiber/v2"

	"github.com/openbdp/bdp/store"
)

// Answers in aedifion's shapes (decisions.md 10) where api.md shows none:
// a project comes with its company and its datapoint keys, nested under
// aedifion's names, beside bdp's own flat fields.

// projectWithContext is aedifion's ProjectWithContext with the project's
// fields also at the top level, as bdp answered them before.
type projectWithContext struct {
	store.Project
	ProjectObj    store.Project        `json:"project" doc:"the project (aedifion's nesting)"`
	Company       store.Company        `json:"company" doc:"the company the project belongs to"`
	DataPointKeys []store.DatapointKey `json:"dataPointKeys" doc:"keys datapoints are looked up by: name, then the tag keys in use"`
}

// projectsWithContext wraps projects of one company (the caller's: no
// other is ever visible) with the company and their keys, in three
// queries whatever their number.
func (s *Server) projectsWithContext(ctx context.Context, companyID int64, ps []store.Project) ([]projectWithContext, error) {
	out := make([]projectWithContext, 0, len(ps))
	if len(ps) == 0 {
		return out, nil
	}
	co, err := s.store.Company(ctx, companyID)
	if err != nil {
		return nil, err
	}
	ids := make([]int64, len(ps))
	for i, p := range ps {
		ids[i] = p.ID
	}
	keys, err := s.store.DatapointKeys(ctx, ids)
	if err != nil {
		return nil, err
	}
	for _, p := range ps {
		out = append(out, projectWithContext{Project: p, ProjectObj: p, Company: co, DataPointKeys: nonNilSlice(keys[p.ID])})
	}
	return out, nil
}

// datapointKeys is GET /v2/project/{project_id}/datapointkeys: aedifion's
// DataPointKey objects.
func (s *Server) datapointKeys(c *fiber.Ctx, cl *call) (any, error) {
	keys, err := s.store.DatapointKeys(c.UserContext(), []int64{cl.ProjectID})
	if err != nil {
		return nil, err
	}
	return nonNilSlice(keys[cl.ProjectID]), nil
}

// userWithContext is GET /v2/user: api.md's user, roles and companyroles,
// and aedifion's company beside them.
type userWithContext struct {
	User         store.User          `json:"user"`
	Roles        []store.ProjectRole `json:"roles"`
	CompanyRoles []store.CompanyRole `json:"companyroles"`
	Company      store.Company       `json:"company" doc:"the user's company"`
}

// endpointEntry is one item of GET /v2/meta/endpoints, with aedifion's
// summary.
type endpointEntry struct {
	store.Endpoint
	Summary string `json:"summary"`
}
