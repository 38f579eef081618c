package http

import (
	"fmt"
	"net/url"
	"slices"
	"testing"
	"time"
)

// Favorites and plot views of a user (issue 22 item 5): aedifion's
// shapes, TagAuths, companies apart, and what deleting a user, project or
// datapoint does to them.

// fvSetup makes a company with a project holding datapoints a, b and
// secret, and a user whose project role reads a and b (not secret) and
// holds the favorites' and plot views' endpoints.
func fvSetup(t *testing.T) (*testEnv, company, int64, basic, int64) {
	e := newTestEnv(t)
	c := e.newCompany()
	pid, _ := e.newProject(c.Admin)
	points := map[string]any{}
	for _, id := range []string{"a", "b", "secret"} {
		points[id] = []map[string]any{{"time": "2026-07-02T00:00:00Z", "value": 1}}
	}
	e.do("POST", fmt.Sprintf("/v2/project/%d/timeseries", pid), c.Admin, points).want(t, 200)
	u, uid := e.newUser(c)
	var ids []int32
	for _, r := range e.srv.viewRoutes() {
		if r.Tag == "project" {
			ids = append(ids, e.endpointID(r.Method, r.Path))
		}
	}
	role := rbCreateProjectRole(e, c.Admin, pid, ids, rbTag("name", "a", true, false), rbTag("name", "b", true, false))
	rbAssignProjectRole(e, c.Admin, pid, role, uid)
	return e, c, pid, u, uid
}

func favPath(pid int64, dp string) string {
	return fmt.Sprintf("/v2/datapoint/favorite?project_id=%d&dataPointID=%s", pid, url.QueryEscape(dp))
}

func listStrings(t *testing.T, r resp, field string) []string {
	t.Helper()
	out := []string{}
	for _, v := range r.List {
		switch x := v.(type) {
		case string:
			out = append(out, x)
		case map[string]any:
			out = append(out, fmt.Sprint(x[field]))
		}
	}
	return out
}

func TestFavoritesOfAUser(t *testing.T) {
	e, c, pid, u, _ := fvSetup(t)
	r := e.do("POST", favPath(pid, "a"), u, nil).want(t, 200)
	res := r.resource(t)
	if r.JSON["operation"] != "create" || res["dataPointID"] != "a" || num(t, res, "project_id") != pid || res["hash_id"] == "" {
		t.Fatalf("POST favorite: %s", r.Body)
	}
	e.do("POST", favPath(pid, "a"), u, nil).want(t, 200) // again: no change
	e.do("POST", favPath(pid, "b"), u, nil).want(t, 200)
	e.do("POST", favPath(pid, "secret"), c.Admin, nil).want(t, 200) // the admin's own

	if got := listStrings(t, e.do("GET", "/v2/user/favorites", u, nil).want(t, 200), "dataPointID"); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("user favorites: %v", got)
	}
	if got := listStrings(t, e.do("GET", fmt.Sprintf("/v2/project/%d/datapoints/favorites", pid), c.Admin, nil).want(t, 200), ""); !slices.Equal(got, []string{"secret"}) {
		t.Fatalf("the admin's favorites are their own: %v", got)
	}
	r = e.do("DELETE", favPath(pid, "a"), u, nil).want(t, 200)
	if r.JSON["operation"] != "delete" || r.resource(t)["dataPointID"] != "a" {
		t.Fatalf("DELETE favorite: %s", r.Body)
	}
	e.do("DELETE", favPath(pid, "a"), u, nil).wantError(t, 404)
	if got := listStrings(t, e.do("GET", fmt.Sprintf("/v2/project/%d/datapoints/favorites", pid), u, nil).want(t, 200), ""); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("project favorites after the delete: %v", got)
	}
}

func TestFavoriteBadInputAndAccess(t *testing.T) {
	e, c, pid, u, _ := fvSetup(t)
	other := e.newCompany()
	for _, tc := range []struct {
		name   string
		as     cred
		path   string
		status int
	}{
		{"no dataPointID", u, fmt.Sprintf("/v2/datapoint/favorite?project_id=%d", pid), 400},
		{"no project_id", u, "/v2/datapoint/favorite?dataPointID=a", 400},
		{"unknown query parameter", u, favPath(pid, "a") + "&favorite_mode=x", 400},
		{"hidden by TagAuth", u, favPath(pid, "secret"), 403},
		{"hidden and missing alike", u, favPath(pid, "nowhere"), 403},
		{"missing", c.Admin, favPath(pid, "nowhere"), 404},
		{"another company", other.Admin, favPath(pid, "a"), 403},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.do("POST", tc.path, tc.as, nil).wantError(t, tc.status)
		})
	}
	if n := e.sqlFloat(`SELECT count(*) FROM datapoint_favorites`); n != 0 {
		t.Fatalf("%v favorites stored by refused requests", n)
	}
}

// What refers to a user, project or datapoint goes with it; TagAuths
// taken away hide favorites and the datapoints of shared plot views.
func TestFavoritesAndPlotViewsFollowDeletes(t *testing.T) {
	e, c, pid, u, uid := fvSetup(t)
	e.do("POST", favPath(pid, "a"), u, nil).want(t, 200)
	e.do("POST", favPath(pid, "b"), u, nil).want(t, 200)
	view := e.do("POST", fmt.Sprintf("/v2/project/%d/plot-view", pid), u, pvBody("a", "b")).want(t, 201)
	viewPath := fmt.Sprintf("/v2/project/%d/plot-view/%s", pid, view.JSON["id"])

	// A datapoint deleted leaves the favorites and the view.
	alExec(e, `DELETE FROM datapoints WHERE project_id = $1 AND datapoint_id = 'b'`, pid)
	if got := listStrings(t, e.do("GET", "/v2/user/favorites", u, nil).want(t, 200), "dataPointID"); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("favorites after b was deleted: %v", got)
	}
	if got := fmt.Sprint(e.do("GET", viewPath, u, nil).want(t, 200).JSON["datapoints"]); got != "[a]" {
		t.Fatalf("view after b was deleted: %s", got)
	}

	// The user's role no longer reads a: hidden, not deleted.
	alExec(e, `DELETE FROM project_role_tags WHERE role_id IN (SELECT role_id FROM project_role_users WHERE user_id = $1)`, uid)
	// (The permissions cache learns of it through NOTIFY, at once but not
	// synchronously.)
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		got := listStrings(t, e.do("GET", "/v2/user/favorites", u, nil).want(t, 200), "dataPointID")
		if len(got) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("favorites without read access: %v", got)
		}
	}
	if got := fmt.Sprint(e.do("GET", viewPath, u, nil).want(t, 200).JSON["datapoints"]); got != "[]" {
		t.Fatalf("view without read access: %s", got)
	}

	// DELETE /v2/user deletes the user's favorites and plot views.
	e.do("DELETE", "/v2/user", u, nil).want(t, 200)
	for _, q := range []string{`SELECT count(*) FROM datapoint_favorites WHERE user_id = $1`, `SELECT count(*) FROM plot_views WHERE user_id = $1`} {
		if n := e.sqlFloat(q, uid); n != 0 {
			t.Fatalf("%s: %v left after DELETE /v2/user", q, n)
		}
	}

	// Deleting the project deletes the rest.
	e.do("POST", favPath(pid, "a"), c.Admin, nil).want(t, 200)
	e.do("POST", fmt.Sprintf("/v2/project/%d/plot-view", pid), c.Admin, pvBody("a")).want(t, 201)
	e.do("DELETE", fmt.Sprintf("/v2/project/%d", pid), c.Admin, nil).want(t, 200)
	for _, q := range []string{`SELECT count(*) FROM datapoint_favorites`, `SELECT count(*) FROM plot_views`, `SELECT count(*) FROM plot_view_datapoints`} {
		if n := e.sqlFloat(q); n != 0 {
			t.Fatalf("%s: %v left after the project was deleted", q, n)
		}
	}
}
