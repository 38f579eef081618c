package http

import (
	"fmt"
	"strings"
	"testing"
)

// pvBody is a plot view of the datapoints named, with b hidden when named.
func pvBody(ids ...string) map[string]any {
	shown, hidden := []string{}, []string{}
	for _, id := range ids {
		if id == "b" {
			hidden = append(hidden, id)
		} else {
			shown = append(shown, id)
		}
	}
	return map[string]any{"name": "boiler week", "start": "2026-07-01T00:00:00Z", "end": "2026-07-08T00:00:00.5Z",
		"samplerate": "1h", "datapoints": shown, "hidden_datapoints": hidden,
		"zoom": map[string]any{"start": "2026-07-02T00:00:00+02:00", "end": nil}}
}

func TestPlotViewSavedSharedAndChanged(t *testing.T) {
	e, c, pid, u, uid := fvSetup(t)
	base := fmt.Sprintf("/v2/project/%d/plot-view", pid)
	r := e.do("POST", base, u, pvBody("a", "b")).want(t, 201)
	id, _ := r.JSON["id"].(string)
	if !isUUID(id) || r.JSON["name"] != "boiler week" || r.JSON["start"] != "2026-07-01T00:00:00Z" ||
		r.JSON["end"] != "2026-07-08T00:00:00.5Z" || r.JSON["samplerate"] != "1h" ||
		fmt.Sprint(r.JSON["datapoints"], r.JSON["hidden_datapoints"]) != "[a] [b]" ||
		fmt.Sprint(r.JSON["zoom"]) != "map[end:<nil> start:2026-07-01T22:00:00Z]" || num(t, r.JSON, "user_id") != uid {
		t.Fatalf("POST plot-view: %s", r.Body)
	}

	// Shared inside the company: the admin opens it, sees it all.
	got := e.do("GET", base+"/"+id, c.Admin, nil).want(t, 200)
	if fmt.Sprint(got.JSON["datapoints"], got.JSON["hidden_datapoints"]) != "[a] [b]" {
		t.Fatalf("GET as the admin: %s", got.Body)
	}
	// The admin's view with secret in it: the user opens it without secret.
	adminView := e.do("POST", base, c.Admin, map[string]any{"start": "2026-07-01T00:00:00Z", "end": "2026-07-02T00:00:00Z",
		"samplerate": "auto", "datapoints": []string{"secret", "a"}}).want(t, 201)
	got = e.do("GET", base+"/"+adminView.JSON["id"].(string), u, nil).want(t, 200)
	if fmt.Sprint(got.JSON["datapoints"]) != "[a]" || got.JSON["zoom"] != nil || got.JSON["name"] != "" {
		t.Fatalf("GET of the admin's view as the user: %s", got.Body)
	}
	// Only the owner changes or deletes a view.
	e.do("PUT", base+"/"+adminView.JSON["id"].(string), u, pvBody("a")).wantError(t, 403)
	e.do("DELETE", base+"/"+adminView.JSON["id"].(string), u, nil).wantError(t, 403)
	// Lists hold one's own views.
	if l := e.do("GET", fmt.Sprintf("/v2/project/%d/plot-views", pid), u, nil).want(t, 200); len(l.List) != 1 {
		t.Fatalf("the user's views: %s", l.Body)
	}

	body := pvBody("b", "a")
	body["samplerate"] = "original"
	delete(body, "zoom")
	r = e.do("PUT", base+"/"+id, u, body).want(t, 200)
	if r.JSON["id"] != id || r.JSON["samplerate"] != "original" || r.JSON["zoom"] != nil {
		t.Fatalf("PUT: %s", r.Body)
	}
	r = e.do("DELETE", base+"/"+id, u, nil).want(t, 200)
	if r.JSON["id"] != id {
		t.Fatalf("DELETE: %s", r.Body)
	}
	e.do("GET", base+"/"+id, u, nil).wantError(t, 404)
	e.do("DELETE", base+"/"+id, u, nil).wantError(t, 404)
}

func TestPlotViewBadInput(t *testing.T) {
	e, _, pid, u, _ := fvSetup(t)
	other := e.newCompany()
	base := fmt.Sprintf("/v2/project/%d/plot-view", pid)
	with := func(field string, v any) map[string]any {
		b := pvBody("a", "b")
		if v == nil {
			delete(b, field)
		} else {
			b[field] = v
		}
		return b
	}
	many := make([]string, 101)
	for i := range many {
		many[i] = fmt.Sprint("p", i)
	}
	for _, tc := range []struct {
		name   string
		as     cred
		body   any
		status int
		says   string
	}{
		{"no start", u, with("start", nil), 400, "start is required"},
		{"bad start", u, with("start", "yesterday"), 400, "RFC 3339"},
		{"end before start", u, with("end", "2026-06-01T00:00:00Z"), 400, "before end"},
		{"bad samplerate", u, with("samplerate", "1y"), 400, "samplerate"},
		{"no datapoints", u, with("datapoints", nil), 400, "datapoints is required"},
		{"twice", u, with("datapoints", []string{"a", "b"}), 400, "named twice"},
		{"unknown datapoint", u, with("datapoints", []string{"a", "nowhere"}), 403, "nowhere"},
		{"hidden by TagAuth", u, with("datapoints", []string{"secret"}), 403, "secret"},
		{"too many", u, with("datapoints", many), 400, "at most 100"},
		{"bad zoom", u, with("zoom", map[string]any{"start": "2026-07-03T00:00:00Z", "end": "2026-07-02T00:00:00Z"}), 400, "zoom.start"},
		{"unknown field", u, with("color", "red"), 400, "color"},
		{"not JSON", u, []byte("{"), 400, ""},
		{"name too long", u, with("name", strings.Repeat("n", 201)), 400, "name"},
		{"another company", other.Admin, pvBody("a"), 403, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do("POST", base, tc.as, tc.body).wantError(t, tc.status)
			if !strings.Contains(fmt.Sprint(r.JSON["error"]), tc.says) {
				t.Fatalf("error %q does not say %q", r.JSON["error"], tc.says)
			}
		})
	}
	e.do("GET", base+"/not-a-uuid", u, nil).wantError(t, 400)
	e.do("GET", base+"/00000000-0000-0000-0000-000000000000", u, nil).wantError(t, 404)
	if n := e.sqlFloat(`SELECT count(*) FROM plot_views`); n != 0 {
		t.Fatalf("%v plot views stored by refused requests", n)
	}
	// A PUT that fails changes nothing.
	id := e.do("POST", base, u, pvBody("a", "b")).want(t, 201).JSON["id"].(string)
	e.do("PUT", base+"/"+id, u, with("datapoints", []string{"a", "nowhere"})).wantError(t, 403)
	e.do("PUT", base+"/"+id, u, with("samplerate", "")).wantError(t, 400)
	if got := e.do("GET", base+"/"+id, u, nil).want(t, 200); fmt.Sprint(got.JSON["datapoints"], got.JSON["hidden_datapoints"]) != "[a] [b]" {
		t.Fatalf("after refused PUTs: %s", got.Body)
	}
}

// A datapoint the caller may read but the project does not have: 400,
// nothing saved (the admin reads every name).
func TestPlotViewUnknownDatapointIsRefused(t *testing.T) {
	e, c, pid, _, _ := fvSetup(t)
	b := pvBody("a", "nowhere")
	r := e.do("POST", fmt.Sprintf("/v2/project/%d/plot-view", pid), c.Admin, b).wantError(t, 400)
	if !strings.Contains(fmt.Sprint(r.JSON["error"]), `no datapoint "nowhere"`) {
		t.Fatalf("error: %s", r.Body)
	}
	if n := e.sqlFloat(`SELECT count(*) FROM plot_views`); n != 0 {
		t.Fatalf("%v plot views stored", n)
	}
}

// A view is the company's: another company's admin reaches it neither
// through its project (403) nor through a project of their own (404).
func TestPlotViewStaysInItsCompany(t *testing.T) {
	e, c, pid, _, _ := fvSetup(t)
	id := e.do("POST", fmt.Sprintf("/v2/project/%d/plot-view", pid), c.Admin, pvBody("a")).want(t, 201).JSON["id"].(string)
	other := e.newCompany()
	otherPid, _ := e.newProject(other.Admin)
	for _, tc := range []struct {
		method, path string
		status       int
	}{
		{"GET", fmt.Sprintf("/v2/project/%d/plot-view/%s", pid, id), 403},
		{"DELETE", fmt.Sprintf("/v2/project/%d/plot-view/%s", pid, id), 403},
		{"GET", fmt.Sprintf("/v2/project/%d/plot-view/%s", otherPid, id), 404},
		{"PUT", fmt.Sprintf("/v2/project/%d/plot-view/%s", otherPid, id), 404},
		{"DELETE", fmt.Sprintf("/v2/project/%d/plot-view/%s", otherPid, id), 404},
		{"GET", fmt.Sprintf("/v2/project/%d/plot-views", pid), 403},
		{"GET", fmt.Sprintf("/v2/project/%d/datapoints/favorites", pid), 403},
	} {
		var body any
		if tc.method == "PUT" {
			body = map[string]any{"start": "2026-07-01T00:00:00Z", "end": "2026-07-02T00:00:00Z", "samplerate": "auto", "datapoints": []string{}}
		}
		e.do(tc.method, tc.path, other.Admin, body).wantError(t, tc.status)
	}
	if got := e.do("GET", fmt.Sprintf("/v2/project/%d/plot-views", otherPid), other.Admin, nil).want(t, 200); len(got.List) != 0 {
		t.Fatalf("the other company lists %s", got.Body)
	}
	if got := e.do("GET", fmt.Sprintf("/v2/project/%d/plot-view/%s", pid, id), c.Admin, nil).want(t, 200); fmt.Sprint(got.JSON["datapoints"]) != "[a]" {
		t.Fatalf("the view changed: %s", got.Body)
	}
}
