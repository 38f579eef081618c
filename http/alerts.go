package http

import (
	"context"
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
		if err := s.maskAlerts(ctx, cl, items); err != nil {
			return nil, err
		}
	}
	return alertList{Items: nonNilSlice(items), Meta: pageMeta(page, perPage, total)}, nil
}

// maskAlerts hides in the alerts' messages the dataPointIDs the caller
// may not read: sources of the project's virtual datapoints, or any other
// datapoint of the project a message names (logMasker).
func (s *Server) maskAlerts(ctx context.Context, cl *call, alerts []store.Alert) error {
	if len(alerts) == 0 {
		return nil
	}
	configs, err := s.store.ProjectVDPConfigs(ctx, cl.ProjectID)
	if err != nil {
		return err
	}
	var sources, messages []string
	for id, raw := range configs {
		cfg, err := storedConfig(store.VDP{DataPointID: id, Config: raw})
		if err != nil {
			return err
		}
		for _, p := range cfg.Pins {
			sources = append(sources, p.DataPointID)
		}
	}
	for _, a := range alerts {
		sources = append(sources, a.DataPointID) // readable: it passed readableOnly
		messages = append(messages, a.Message)
	}
	masker, err := s.logMaskerFor(ctx, cl, sources, messages)
	if err != nil {
		return err
	}
	for i := range alerts {
		alerts[i].Message = masker.mask(alerts[i].Message)
	}
	return nil
}
