package http

import (
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/openbdp/bdp/export"
	"github.com/openbdp/bdp/fault"
)

// Exact recompute of a virtual datapoint over a period (beyond api.md):
// POST /v2/project/{project_id}/virtual_datapoint/recompute answers 202 at
// once; the replay runs as a job of the server's actors.RecomputeJobs,
// and its start, progress and end go to the datapoint's logs as entries of
// type "recompute". The recompute reads everything first and then
// replaces the period in one transaction, so readers see the old outputs
// or the new, never a mix.

// maxRecomputePeriod bounds one request; a longer history is recomputed
// period by period.
const maxRecomputePeriod = 2 * 366 * 24 * time.Hour

var recomputeParams = []param{
	{Name: "dataPointID", Type: "string", Doc: "the virtual datapoint", Required: true},
	{Name: "start", Type: "string", Doc: "RFC 3339; the period is [start, end)", Required: true},
	{Name: "end", Type: "string", Doc: "RFC 3339, after start, at most 732 days later", Required: true},
}

// recomputeAccepted is the resource of the 202 answer.
type recomputeAccepted struct {
	DataPointID string `json:"dataPointID"`
	Start       string `json:"start"`
	End         string `json:"end"`
	Status      string `json:"status" doc:"accepted; progress and the end appear in the logs (type recompute)"`
}

func (s *Server) recomputeVDP(c *fiber.Ctx, cl *call) (any, error) {
	id, err := vdpParam(c)
	if err != nil {
		return nil, err
	}
	start, end, err := recomputePeriod(c)
	if err != nil {
		return nil, err
	}
	if err := s.requireVDPAccess(c, cl, id, needRun, nil); err != nil {
		return nil, err
	}
	v, err := s.store.VDP(c.UserContext(), cl.ProjectID, id)
	if err != nil {
		return nil, err
	}
	def, err := s.engine.Definition(cl.ProjectID, id, v.Type, v.Config)
	if err != nil {
		return nil, err
	}
	if err := s.recomputes.Start(def, start, end, cl.Principal.User.Email); err != nil {
		return nil, err
	}
	return ok("create", recomputeAccepted{DataPointID: id, Start: start.Format(time.RFC3339Nano),
		End: end.Format(time.RFC3339Nano), Status: "accepted"}), nil
}

// recomputePeriod reads start and end: both required, in the forms the
// export takes (a date, or an RFC 3339 date-time), start before end, at
// most maxRecomputePeriod apart.
func recomputePeriod(c *fiber.Ctx) (start, end time.Time, err error) {
	for name, dst := range map[string]*time.Time{"start": &start, "end": &end} {
		raw := c.Query(name)
		if strings.TrimSpace(raw) == "" {
			return start, end, fault.Invalidf("query parameter %s is required (a date or an RFC 3339 date-time)", name)
		}
		t, perr := export.ParseTime(name, raw)
		if perr != nil {
			return start, end, perr
		}
		if t.Year() < 1900 || t.Year() > 9999 {
			return start, end, fault.Invalidf("query parameter %s must lie between the years 1900 and 9999, got %q", name, raw)
		}
		*dst = t
	}
	if !start.Before(end) {
		return start, end, fault.Invalidf("start must be before end")
	}
	if end.Sub(start) > maxRecomputePeriod {
		return start, end, fault.Invalidf("the period may span at most %d days; recompute a longer one in parts",
			int(maxRecomputePeriod/(24*time.Hour)))
	}
	return start, end, nil
}
