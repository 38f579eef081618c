package http

import (
	"regexp"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/openbdp/bdp/codec"
	"github.com/openbdp/bdp/fault"
	"github.com/openbdp/bdp/rbac"
	"github.com/openbdp/bdp/store"
)

// Plot views (issue 22 item 5, aedifion's PlotView and PlotViewResponse):
// a saved plot of a project, owned by the user who saved it, readable by
// anyone of the company with the endpoint's grant on the project, so that
// a link to it can be shared; only its owner changes or deletes it.

const plotViewDoc = "A plot view names its datapoints in order (datapoints drawn, hidden_datapoints kept but not drawn; " +
	"together at most 100, each once, each a datapoint of the project the caller may read by TagAuth), a time range " +
	"[start, end) (RFC 3339, start before end), a samplerate (an integer followed by s, m, h or d, auto, or original) " +
	"and an optional zoom within which the plot was zoomed in (start and end, each RFC 3339 or null). name is bdp's addition " +
	"(at most 200 characters, default empty). Deleting the owner, the project or a datapoint deletes the view or takes the " +
	"datapoint out of it; an answer leaves out the datapoints the caller may not read by TagAuth."

// maxPlotViewDatapoints bounds a view's datapoints: a plot of more is
// unreadable, and the check stays one query.
const maxPlotViewDatapoints = 100

var samplerateRe = regexp.MustCompile(`^([0-9]{1,9}[smhd]|auto|original)$`)

// plotViewZoom is aedifion's PlotViewZoom, in a request.
type plotViewZoom struct {
	Start *string `json:"start" nullable:"true" maxLength:"64" doc:"RFC 3339, or null"`
	End   *string `json:"end" nullable:"true" maxLength:"64" doc:"RFC 3339, or null"`
}

// plotViewRequest is the body of POST and PUT (aedifion's PlotView).
type plotViewRequest struct {
	Name             *string       `json:"name" maxLength:"200" doc:"bdp's addition: a name for lists; default empty"`
	Start            *string       `json:"start" required:"true" maxLength:"64" doc:"RFC 3339: the start of the range"`
	End              *string       `json:"end" required:"true" maxLength:"64" doc:"RFC 3339: the end of the range, after start"`
	Samplerate       *string       `json:"samplerate" required:"true" maxLength:"12" doc:"an integer followed by s, m, h or d (0s: the finest), auto, or original"`
	Datapoints       []string      `json:"datapoints" required:"true" doc:"the datapoints drawn, in order"`
	HiddenDatapoints []string      `json:"hidden_datapoints" doc:"datapoints kept in the view but not drawn; default none"`
	Zoom             *plotViewZoom `json:"zoom" nullable:"true" doc:"the period zoomed into; default none"`
}

// zoomTimes is aedifion's PlotViewZoom, in an answer.
type zoomTimes struct {
	Start *time.Time `json:"start" nullable:"true"`
	End   *time.Time `json:"end" nullable:"true"`
}

// plotViewObject is aedifion's PlotViewResponse with bdp's additions.
type plotViewObject struct {
	ID               string     `json:"id" required:"true" doc:"uuid"`
	Name             string     `json:"name"`
	ProjectID        int64      `json:"project_id"`
	UserID           int64      `json:"user_id" doc:"the user who saved it, who alone may change or delete it"`
	Start            time.Time  `json:"start" required:"true"`
	End              time.Time  `json:"end" required:"true"`
	Samplerate       string     `json:"samplerate" required:"true"`
	Datapoints       []string   `json:"datapoints"`
	HiddenDatapoints []string   `json:"hidden_datapoints"`
	Zoom             *zoomTimes `json:"zoom" nullable:"true"`
	CreatedAt        time.Time  `json:"created_at"`
	UpdatedAt        time.Time  `json:"updated_at"`
}

// plotViewOf answers a view with the datapoints cl may read.
func plotViewOf(cl *call, v store.PlotView) plotViewObject {
	o := plotViewObject{ID: v.ID, Name: v.Name, ProjectID: v.ProjectID, UserID: v.UserID, Start: v.Start.UTC(), End: v.End.UTC(),
		Samplerate: v.Samplerate, Datapoints: []string{}, HiddenDatapoints: []string{}, CreatedAt: v.CreatedAt.UTC(), UpdatedAt: v.UpdatedAt.UTC()}
	for _, d := range v.Datapoints {
		if !cl.Perms.DatapointAccess(v.ProjectID, rbac.Datapoint{ID: d.ID, Tags: d.Tags}).Read {
			continue
		}
		if d.Hidden {
			o.HiddenDatapoints = append(o.HiddenDatapoints, d.ID)
		} else {
			o.Datapoints = append(o.Datapoints, d.ID)
		}
	}
	if v.ZoomStart != nil || v.ZoomEnd != nil {
		o.Zoom = &zoomTimes{Start: utcPtr(v.ZoomStart), End: utcPtr(v.ZoomEnd)}
	}
	return o
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// plotViewBody reads and checks the body of POST and PUT, and the
// caller's read access to every datapoint it names.
func (s *Server) plotViewBody(c *fiber.Ctx, cl *call) (store.PlotView, error) {
	var req plotViewRequest
	if err := decode(c, &req); err != nil {
		return store.PlotView{}, err
	}
	if req.Datapoints == nil {
		return store.PlotView{}, fault.Invalidf("field datapoints is required: a list of dataPointIDs")
	}
	v := store.PlotView{ProjectID: cl.ProjectID, UserID: cl.Perms.UserID}
	if n := text(req.Name); n != nil {
		v.Name = *n
	}
	var err error
	if v.Start, err = viewTime("start", *req.Start); err != nil {
		return v, err
	}
	if v.End, err = viewTime("end", *req.End); err != nil {
		return v, err
	}
	if !v.Start.Before(v.End) {
		return v, fault.Invalidf("field start must be before end")
	}
	v.Samplerate = strings.TrimSpace(*req.Samplerate)
	if !samplerateRe.MatchString(v.Samplerate) {
		return v, fault.Invalidf("field samplerate must be an integer followed by s, m, h or d (10s, 1h), auto or original, got %q",
			fault.Clip(v.Samplerate))
	}
	if req.Zoom != nil {
		if v.ZoomStart, err = optionalViewTime("zoom.start", req.Zoom.Start); err != nil {
			return v, err
		}
		if v.ZoomEnd, err = optionalViewTime("zoom.end", req.Zoom.End); err != nil {
			return v, err
		}
		if v.ZoomStart != nil && v.ZoomEnd != nil && !v.ZoomStart.Before(*v.ZoomEnd) {
			return v, fault.Invalidf("field zoom.start must be before zoom.end")
		}
	}
	if len(req.Datapoints)+len(req.HiddenDatapoints) > maxPlotViewDatapoints {
		return v, fault.Invalidf("a plot view holds at most %d datapoints, got %d", maxPlotViewDatapoints,
			len(req.Datapoints)+len(req.HiddenDatapoints))
	}
	seen := map[string]bool{}
	var names []string
	for _, list := range []struct {
		field  string
		ids    []string
		hidden bool
	}{{"datapoints", req.Datapoints, false}, {"hidden_datapoints", req.HiddenDatapoints, true}} {
		for _, id := range list.ids {
			if err := codec.ValidateDataPointID(id); err != nil {
				return v, fault.Invalidf("field %s: %s", list.field, err.Error())
			}
			if seen[id] {
				return v, fault.Invalidf("field %s: datapoint %q is named twice", list.field, fault.Clip(id))
			}
			seen[id] = true
			names = append(names, id)
			v.Datapoints = append(v.Datapoints, store.PlotViewDatapoint{ID: id, Hidden: list.hidden})
		}
	}
	if err := s.requireDatapointAccess(c, cl, names, false); err != nil {
		return v, err
	}
	return v, nil
}

func viewTime(field, s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(s))
	if err != nil {
		return t, fault.Invalidf("field %s must be an RFC 3339 time (2024-09-24T10:58:07Z), got %q", field, fault.Clip(s))
	}
	return t, nil
}

func optionalViewTime(field string, s *string) (*time.Time, error) {
	if s == nil {
		return nil, nil
	}
	t, err := viewTime(field, *s)
	if err != nil {
		return nil, err
	}
	return &t, nil
}

// plotViewIDParam reads the path's plot_view_id, a uuid (400 otherwise).
func plotViewIDParam(c *fiber.Ctx) (string, error) {
	id := c.Params("plot_view_id")
	if !isUUID(id) {
		return "", fault.Invalidf("plot_view_id must be a uuid, got %q", fault.Clip(id))
	}
	return strings.ToLower(id), nil
}

// ownPlotView reads the path's view and checks that the caller saved it.
func (s *Server) ownPlotView(c *fiber.Ctx, cl *call) (store.PlotView, error) {
	id, err := plotViewIDParam(c)
	if err != nil {
		return store.PlotView{}, err
	}
	v, err := s.store.PlotView(c.UserContext(), cl.ProjectID, id)
	if err != nil {
		return v, err
	}
	if v.UserID != cl.Perms.UserID {
		return v, fault.Forbiddenf("plot view %s was saved by another user: only they may change or delete it", id)
	}
	return v, nil
}

func (s *Server) createPlotView(c *fiber.Ctx, cl *call) (any, error) {
	v, err := s.plotViewBody(c, cl)
	if err != nil {
		return nil, err
	}
	if v, err = s.store.SavePlotView(c.UserContext(), v); err != nil {
		return nil, err
	}
	return plotViewOf(cl, v), nil
}

func (s *Server) listPlotViews(c *fiber.Ctx, cl *call) (any, error) {
	vs, err := s.store.PlotViews(c.UserContext(), cl.ProjectID, cl.Perms.UserID)
	if err != nil {
		return nil, err
	}
	out := make([]plotViewObject, len(vs))
	for i, v := range vs {
		out[i] = plotViewOf(cl, v)
	}
	return out, nil
}

func (s *Server) getPlotView(c *fiber.Ctx, cl *call) (any, error) {
	id, err := plotViewIDParam(c)
	if err != nil {
		return nil, err
	}
	v, err := s.store.PlotView(c.UserContext(), cl.ProjectID, id)
	if err != nil {
		return nil, err
	}
	return plotViewOf(cl, v), nil
}

func (s *Server) updatePlotView(c *fiber.Ctx, cl *call) (any, error) {
	old, err := s.ownPlotView(c, cl)
	if err != nil {
		return nil, err
	}
	v, err := s.plotViewBody(c, cl)
	if err != nil {
		return nil, err
	}
	v.ID = old.ID
	if v, err = s.store.SavePlotView(c.UserContext(), v); err != nil {
		return nil, err
	}
	return plotViewOf(cl, v), nil
}

func (s *Server) deletePlotView(c *fiber.Ctx, cl *call) (any, error) {
	v, err := s.ownPlotView(c, cl)
	if err != nil {
		return nil, err
	}
	if v, err = s.store.DeletePlotView(c.UserContext(), cl.ProjectID, v.ID); err != nil {
		return nil, err
	}
	return plotViewOf(cl, v), nil
}
