package http

import (
	"math"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/openbdp/bdp/store"
)

// GET /v2/project/{project_id}/alerts (api.md 4.3 names it, no shape):
// the project's virtual datapoints that need attention, newest first.

// alertWindow is how far back calculation errors count as alerts.
const alertWindow = 24 * time.Hour

// alertParams documents the query of the alerts list.
var alertParams = []param{
	{Name: "page", Type: "integer", Doc: "default 1"},
	{Name: "per_page", Type: "integer", Doc: "default 100, at most 1000"},
}

type alertList struct {
	Items []store.Alert `json:"items" doc:"newest first"`
	Meta  pagination    `json:"meta"`
}

// listAlerts answers the alerts of the virtual datapoints whose output
// the caller may read (the rule of the virtual datapoints list), paged
// after that filter so that the total counts only them.
func (s *Server) listAlerts(c *fiber.Ctx, cl *call) (any, error) {
	page, perPage, err := pageParams(c)
	if err != nil {
		return nil, err
	}
	ctx, since := c.UserContext(), time.Now().Add(-alertWindow)
	var items []store.Alert
	var total int
	if cl.Perms.HasCompanyRole() {
		items, total, err = s.store.ProjectAlerts(ctx, cl.ProjectID, since, page, perPage)
		if err != nil {
			return nil, err
		}
	} else {
		all, _, err := s.store.ProjectAlerts(ctx, cl.ProjectID, since, 1, math.MaxInt32)
		if err != nil {
			return nil, err
		}
		readable, err := readableOnly(ctx, s, cl, all, func(a store.Alert) string { return a.DataPointID })
		if err != nil {
			return nil, err
		}
		items, total = pageOf(readable, page, perPage), len(readable)
	}
	return alertList{Items: nonNilSlice(items), Meta: pagination{CurrentPage: page, ItemsPerPage: perPage,
		TotalItems: total, TotalPages: (total + perPage - 1) / perPage}}, nil
}
