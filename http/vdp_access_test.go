package http

import (
	"fmt"
	"strings"
	"testing"
)

// The virtual datapoint endpoints check the caller's TagAuths, not only
// the endpoint grant: reading one needs read on its output, changing one
// write on its output, running one also read on every source.

// vdpEndpoints are the catalog ids of every virtual datapoint endpoint.
func vdpEndpoints(e *testEnv) []int32 {
	base := "/v2/project/{project_id}/virtual_datapoint"
	return []int32{e.endpointID("POST", base), e.endpointID("POST", base+"/run"), e.endpointID("GET", base),
		e.endpointID("PUT", base), e.endpointID("DELETE", base), e.endpointID("GET", base+"s"),
		e.endpointID("POST", base+"/recompute")}
}

// vdpAccessSetup creates, as the company admin, the virtual datapoints
//
//	mine   (P1 = src_ok)     the user reads and writes it, reads the source
//	ro     (P1 = src_ok)     the user only reads it
//	nosrc  (P1 = src_hidden) the user reads and writes it, not the source
//	hidden (P1 = src_ok)     the user has no grant on it
//
// and a user whose project role holds every virtual datapoint endpoint
// with TagAuths saying so.
func vdpAccessSetup(t *testing.T) (*testEnv, company, int64, basic) {
	e := newTestEnv(t)
	c := e.newCompany()
	pid, _ := e.newProject(c.Admin)
	for id, src := range map[string]string{"mine": "src_ok", "ro": "src_ok", "nosrc": "src_hidden", "hidden": "src_ok"} {
		e.do("POST", vdpPath(pid, "", "dataPointID", id, "type", "formula"), c.Admin, formulaConfig("P1;", map[string]string{"P1": src})).want(t, 200)
	}
	u, uid := e.newUser(c)
	role := rbCreateProjectRole(e, c.Admin, pid, vdpEndpoints(e), rbTag("name", "mine", true, true), rbTag("name", "nosrc", true, true),
		rbTag("name", "ro", true, false), rbTag("name", "src_ok", true, false))
	rbAssignProjectRole(e, c.Admin, pid, role, uid)
	return e, c, pid, u
}

// wantNoAccess checks a 403 with the wording of the datapoint check.
func wantNoAccess(t *testing.T, r resp, kind, dp string) {
	t.Helper()
	r.wantError(t, 403)
	want := fmt.Sprintf("no %s access to datapoint %q", kind, dp)
	if r.JSON["error"] != want {
		t.Fatalf("error %q, want %q", r.JSON["error"], want)
	}
}

func TestVDPTagAuthRefusals(t *testing.T) {
	e, c, pid, u := vdpAccessSetup(t)
	status := func(id string) string {
		return e.do("GET", vdpPath(pid, "", "dataPointID", id), c.Admin, nil).want(t, 200).JSON["status"].(string)
	}
	// No grant on the output: nothing at all.
	wantNoAccess(t, e.do("GET", vdpPath(pid, "", "dataPointID", "hidden"), u, nil), "read", "hidden")
	wantNoAccess(t, e.do("PUT", vdpPath(pid, "", "dataPointID", "hidden"), u, map[string]any{"description": "x"}), "write", "hidden")
	wantNoAccess(t, e.do("DELETE", vdpPath(pid, "", "dataPointID", "hidden"), u, nil), "write", "hidden")
	wantNoAccess(t, e.do("POST", vdpPath(pid, "/run", "dataPointID", "hidden", "run", "true"), u, nil), "write", "hidden")
	// Read only: it shows, it does not change.
	e.do("GET", vdpPath(pid, "", "dataPointID", "ro"), u, nil).want(t, 200)
	wantNoAccess(t, e.do("PUT", vdpPath(pid, "", "dataPointID", "ro"), u, map[string]any{"description": "x"}), "write", "ro")
	wantNoAccess(t, e.do("DELETE", vdpPath(pid, "", "dataPointID", "ro"), u, nil), "write", "ro")
	wantNoAccess(t, e.do("POST", vdpPath(pid, "/run", "dataPointID", "ro", "run", "true"), u, nil), "write", "ro")
	// Write on the output without read on the source: no start.
	wantNoAccess(t, e.do("POST", vdpPath(pid, "/run", "dataPointID", "nosrc", "run", "true"), u, nil), "read", "src_hidden")
	for _, id := range []string{"hidden", "ro", "nosrc"} {
		if got := status(id); got != "Ready to start" {
			t.Fatalf("%s is %s after refused calls", id, got)
		}
		if d := e.do("GET", vdpPath(pid, "", "dataPointID", id), c.Admin, nil).JSON["description"]; d != "" {
			t.Fatalf("%s got the description %q from a refused PUT", id, d)
		}
	}
	// Stopping needs write on the output only; and while it runs, the
	// refused stop leaves it running.
	for _, id := range []string{"nosrc", "ro"} {
		e.do("POST", vdpPath(pid, "/run", "dataPointID", id, "run", "true"), c.Admin, nil).want(t, 200)
	}
	wantNoAccess(t, e.do("POST", vdpPath(pid, "/run", "dataPointID", "ro", "run", "false"), u, nil), "write", "ro")
	if got := status("ro"); got != "Running" {
		t.Fatalf("ro is %s after a refused stop", got)
	}
	if r := e.do("POST", vdpPath(pid, "/run", "dataPointID", "nosrc", "run", "false"), u, nil).want(t, 200); r.JSON["status"] != "Stopped" {
		t.Fatalf("stop: %s", r.Body)
	}
	e.do("PUT", vdpPath(pid, "", "dataPointID", "nosrc"), u, map[string]any{"description": "mine to describe"}).want(t, 200)
	// Everything granted: the whole lifecycle.
	if r := e.do("POST", vdpPath(pid, "/run", "dataPointID", "mine", "run", "true"), u, nil).want(t, 200); r.JSON["status"] != "Running" {
		t.Fatalf("start: %s", r.Body)
	}
	e.do("POST", vdpPath(pid, "/run", "dataPointID", "mine", "run", "false"), u, nil).want(t, 200)
	e.do("PUT", vdpPath(pid, "", "dataPointID", "mine"), u, map[string]any{"description": "d"}).want(t, 200)
	e.do("DELETE", vdpPath(pid, "", "dataPointID", "mine"), u, nil).want(t, 200)
	e.do("DELETE", vdpPath(pid, "", "dataPointID", "nosrc"), u, nil).want(t, 200)
}

func TestVDPTagAuthList(t *testing.T) {
	e, c, pid, u := vdpAccessSetup(t)
	list := func(as cred, q string) resp {
		return e.do("GET", fmt.Sprintf("/v2/project/%d/virtual_datapoints?%s", pid, q), as, nil).want(t, 200)
	}
	ids := func(r resp) string {
		var out []string
		for _, it := range r.JSON["items"].([]any) {
			out = append(out, it.(map[string]any)["dataPointID"].(string))
		}
		return strings.Join(out, ",")
	}
	meta := func(r resp) string {
		m := r.JSON["meta"].(map[string]any)
		return fmt.Sprintf("page %v of %v, %v items", m["current_page"], m["total_pages"], m["total_items"])
	}
	for _, tt := range []struct {
		as        cred
		q         string
		ids, meta string
		why       string
	}{
		{c.Admin, "", "hidden,mine,nosrc,ro", "page 1 of 1, 4 items", "a company admin sees all"},
		{u, "", "mine,nosrc,ro", "page 1 of 1, 3 items", "readable outputs only"},
		{u, "per_page=2", "mine,nosrc", "page 1 of 2, 3 items", "pages over the readable ones"},
		{u, "per_page=2&page=2", "ro", "page 2 of 2, 3 items", "the last page"},
		{u, "per_page=2&page=3", "", "page 3 of 2, 3 items", "past the end"},
		{u, "search=n", "mine,nosrc", "page 1 of 1, 2 items", "search, then the filter"},
		{c.Admin, "page=9223372036854775807", "", "page 9.223372036854776e+18 of 1, 4 items", "a page far past the end"},
		{u, "page=9223372036854775807", "", "page 9.223372036854776e+18 of 1, 3 items", "the same, filtered"},
	} {
		r := list(tt.as, tt.q)
		if ids(r) != tt.ids || meta(r) != tt.meta {
			t.Errorf("%s: %q got %q (%s), want %q (%s)", tt.why, tt.q, ids(r), meta(r), tt.ids, tt.meta)
		}
	}
	if r := list(u, ""); strings.Contains(string(r.Body), "hidden") || strings.Contains(string(r.Body), "src_") {
		t.Fatalf("the list shows what the caller may not read: %s", r.Body)
	}
}

// A user holding the project's admin role (TagAuth name * read and write)
// and a company admin are not limited.
func TestVDPTagAuthFullRolesUnaffected(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	pid, adminRole := e.newProject(c.Admin)
	u, uid := e.newUser(c)
	rbAssignProjectRole(e, c.Admin, pid, adminRole, uid)
	for i, as := range []cred{u, c.Admin} {
		id := fmt.Sprintf("out%d", i)
		e.do("POST", vdpPath(pid, "", "dataPointID", id, "type", "formula"), as, formulaConfig("P1;", map[string]string{"P1": "src"})).want(t, 200)
		e.do("GET", vdpPath(pid, "", "dataPointID", id), as, nil).want(t, 200)
		e.do("PUT", vdpPath(pid, "", "dataPointID", id), as, map[string]any{"description": "d"}).want(t, 200)
		e.do("POST", vdpPath(pid, "/run", "dataPointID", id, "run", "true"), as, nil).want(t, 200)
		e.do("POST", vdpPath(pid, "/run", "dataPointID", id, "run", "false"), as, nil).want(t, 200)
		r := e.do("GET", fmt.Sprintf("/v2/project/%d/virtual_datapoints", pid), as, nil).want(t, 200)
		if n := r.JSON["meta"].(map[string]any)["total_items"]; n != float64(i+1) {
			t.Fatalf("list: %s", r.Body)
		}
		e.do("DELETE", vdpPath(pid, "", "dataPointID", id), as, nil).want(t, 200)
		e.do("POST", vdpPath(pid, "", "dataPointID", id, "type", "formula"), as, formulaConfig("P1;", map[string]string{"P1": "src"})).want(t, 200)
	}
}
