package http

import (
	"github.com/gofiber/fiber/v2"

	"github.com/openbdp/bdp/rbac"
	"github.com/openbdp/bdp/store"
)

// Favorites (issue 22 item 5, aedifion's shapes): a user marks datapoints
// of their projects; the lists answer only those the caller may still
// read by TagAuth. Deleting the user, the project or the datapoint deletes
// the favorite (store/migrations/00022).

var favoriteParams = []param{
	{Name: "project_id", Type: "integer", Required: true, Doc: "the project of the datapoint"},
	{Name: "dataPointID", Type: "string", Required: true, Doc: "the datapoint"},
}

// viewRoutes declares the favorites and plot views.
func (s *Server) viewRoutes() []*route {
	const user, project = store.TagUser, store.TagProject
	return []*route{
		{Method: "POST", Path: "/v2/datapoint/favorite", Tag: project, Op: "create",
			Summary: "Mark a datapoint as the calling user's favorite (again: no change); needs read access to it by TagAuth",
			Query:   favoriteParams, Resp: envelopeOf[store.DatapointSetpoints]{}, Handle: s.addFavorite,
			Errors: map[int]string{403: "no grant of this endpoint or project, or no read access to the datapoint by TagAuth",
				404: "the project has no such datapoint"}},
		{Method: "DELETE", Path: "/v2/datapoint/favorite", Tag: project, Op: "delete",
			Summary: "Take a datapoint from the calling user's favorites",
			Query:   favoriteParams, Resp: envelopeOf[store.DatapointSetpoints]{}, Handle: s.removeFavorite,
			Errors: map[int]string{404: "the datapoint is not a favorite of the caller"}},
		{Method: "GET", Path: "/v2/user/favorites", Tag: user,
			Summary: "The calling user's favorite datapoints in all projects (aedifion's DataPoint), only those the user may read by TagAuth",
			Resp:    []store.DatapointSetpoints{}, Handle: s.userFavorites},
		{Method: "GET", Path: "/v2/project/{project_id}/datapoints/favorites", Tag: project,
			Summary: "The dataPointIDs of the calling user's favorites in the project, only those the user may read by TagAuth",
			Resp:    []string{}, Handle: s.projectFavorites},

		{Method: "POST", Path: "/v2/project/{project_id}/plot-view", Tag: project, Op: "create", Status: fiber.StatusCreated,
			Summary: "Save a plot view of the project; it belongs to the caller", Doc: plotViewDoc,
			Body: plotViewRequest{}, Resp: plotViewObject{}, Handle: s.createPlotView,
			Errors: map[int]string{400: "a bad field (the message names it) or a datapoint the project does not have; nothing is saved",
				403: "no grant of this endpoint or project, or no read access by TagAuth to a datapoint of the view"}},
		{Method: "GET", Path: "/v2/project/{project_id}/plot-views", Tag: project,
			Summary: "The calling user's plot views of the project, the last changed first (beyond aedifion's API)", Doc: plotViewDoc,
			Resp: []plotViewObject{}, Handle: s.listPlotViews},
		{Method: "GET", Path: "/v2/project/{project_id}/plot-view/{plot_view_id}", Tag: project,
			Summary: "A plot view of the project, whoever in the company saved it (a link to it can be shared inside the company); " +
				"datapoints the caller may not read by TagAuth are left out", Doc: plotViewDoc,
			Resp: plotViewObject{}, Handle: s.getPlotView,
			Errors: map[int]string{404: "the project has no plot view with this id"}},
		{Method: "PUT", Path: "/v2/project/{project_id}/plot-view/{plot_view_id}", Tag: project, Op: "update",
			Summary: "Replace a plot view saved by the caller", Doc: plotViewDoc,
			Body: plotViewRequest{}, Resp: plotViewObject{}, Handle: s.updatePlotView,
			Errors: map[int]string{400: "a bad field (the message names it) or a datapoint the project does not have; nothing is changed",
				403: "no grant of this endpoint or project, the view was saved by another user, or no read access by TagAuth to a datapoint of the view",
				404: "the project has no plot view with this id"}},
		{Method: "DELETE", Path: "/v2/project/{project_id}/plot-view/{plot_view_id}", Tag: project, Op: "delete",
			Summary: "Delete a plot view saved by the caller; answers it as it was", Doc: plotViewDoc,
			Resp: plotViewObject{}, Handle: s.deletePlotView,
			Errors: map[int]string{403: "no grant of this endpoint or project, or the view was saved by another user",
				404: "the project has no plot view with this id"}},
	}
}

func (s *Server) addFavorite(c *fiber.Ctx, cl *call) (any, error) {
	id, err := vdpParam(c)
	if err != nil {
		return nil, err
	}
	// Access first, judged on the name alone when the datapoint does not
	// exist: a caller without access cannot probe which ones exist.
	if err := s.requireDatapointAccess(c, cl, []string{id}, false); err != nil {
		return nil, err
	}
	f, err := s.store.AddFavorite(c.UserContext(), cl.Perms.UserID, cl.ProjectID, id)
	if err != nil {
		return nil, err
	}
	return ok("create", f.DatapointSetpoints), nil
}

func (s *Server) removeFavorite(c *fiber.Ctx, cl *call) (any, error) {
	id, err := vdpParam(c)
	if err != nil {
		return nil, err
	}
	f, err := s.store.RemoveFavorite(c.UserContext(), cl.Perms.UserID, cl.ProjectID, id)
	if err != nil {
		return nil, err
	}
	return ok("delete", f.DatapointSetpoints), nil
}

// readableFavorites lists the caller's favorites (of one project when
// projectID is not 0) that the caller may read.
func (s *Server) readableFavorites(c *fiber.Ctx, cl *call, projectID int64) ([]store.FavoriteDatapoint, error) {
	fs, err := s.store.Favorites(c.UserContext(), cl.Perms.UserID, projectID)
	if err != nil {
		return nil, err
	}
	out := fs[:0]
	for _, f := range fs {
		if cl.Perms.DatapointAccess(f.ProjectID, rbac.Datapoint{ID: f.DataPointID, Tags: f.Tags}).Read {
			out = append(out, f)
		}
	}
	return out, nil
}

func (s *Server) userFavorites(c *fiber.Ctx, cl *call) (any, error) {
	fs, err := s.readableFavorites(c, cl, 0)
	if err != nil {
		return nil, err
	}
	out := make([]store.DatapointSetpoints, len(fs))
	for i, f := range fs {
		out[i] = f.DatapointSetpoints
	}
	return out, nil
}

func (s *Server) projectFavorites(c *fiber.Ctx, cl *call) (any, error) {
	fs, err := s.readableFavorites(c, cl, cl.ProjectID)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.DataPointID
	}
	return out, nil
}
