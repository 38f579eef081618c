package http

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/openbdp/bdp/store"
)

// A virtual datapoint's answer shows a pin's source only to a caller who
// may read it: otherwise the pin answers dataPointID null and masked true.
// The setup of vdp_access_test.go: the user reads src_ok, not src_hidden.
func TestVDPTagAuthMasksSources(t *testing.T) {
	e, c, pid, u := vdpAccessSetup(t)
	// ro: two pins, one source readable, one not.
	e.do("DELETE", vdpPath(pid, "", "dataPointID", "ro"), c.Admin, nil).want(t, 200)
	e.do("POST", vdpPath(pid, "", "dataPointID", "ro", "type", "formula"), c.Admin,
		formulaConfig("P1+P2", map[string]string{"P1": "src_ok", "P2": "src_hidden"})).want(t, 200)
	pins := func(r resp) string {
		t.Helper()
		var out []string
		for _, name := range []string{"P1", "P2"} {
			p, ok := r.JSON["pins"].(map[string]any)[name].(map[string]any)
			if !ok {
				continue
			}
			if p["aggregate"] != "max" || p["trigger"] != "every_value" || p["data_range"] == nil {
				t.Fatalf("pin %s lost its settings: %v", name, p)
			}
			masked, has := p["masked"]
			out = append(out, fmt.Sprintf("%s=%v masked=%v/%v", name, p["dataPointID"], masked, has))
		}
		return strings.Join(out, " ")
	}
	for _, tt := range []struct {
		why  string
		as   cred
		call func(as cred) resp
		want string
	}{
		{"GET, one source hidden", u, func(as cred) resp { return e.do("GET", vdpPath(pid, "", "dataPointID", "ro"), as, nil) },
			"P1=src_ok masked=<nil>/false P2=<nil> masked=true/true"},
		{"GET, the only source hidden", u, func(as cred) resp { return e.do("GET", vdpPath(pid, "", "dataPointID", "nosrc"), as, nil) },
			"P1=<nil> masked=true/true"},
		{"PUT answers the same way", u, func(as cred) resp {
			return e.do("PUT", vdpPath(pid, "", "dataPointID", "nosrc"), as, map[string]any{"description": "d"})
		}, "P1=<nil> masked=true/true"},
		{"GET, every source readable", u, func(as cred) resp { return e.do("GET", vdpPath(pid, "", "dataPointID", "mine"), as, nil) },
			"P1=src_ok masked=<nil>/false"},
		{"a company admin sees every source", c.Admin, func(as cred) resp { return e.do("GET", vdpPath(pid, "", "dataPointID", "ro"), as, nil) },
			"P1=src_ok masked=<nil>/false P2=src_hidden masked=<nil>/false"},
	} {
		r := tt.call(tt.as).want(t, 200)
		if got := pins(r); got != tt.want {
			t.Errorf("%s: %s, want %s", tt.why, got, tt.want)
		}
		if tt.as == cred(u) && strings.Contains(string(r.Body), "src_hidden") {
			t.Errorf("%s: the answer names the hidden source: %s", tt.why, r.Body)
		}
	}
	// Stopping needs write on the output only: its answer is masked too.
	e.do("POST", vdpPath(pid, "/run", "dataPointID", "nosrc", "run", "true"), c.Admin, nil).want(t, 200)
	r := e.do("POST", vdpPath(pid, "/run", "dataPointID", "nosrc", "run", "false"), u, nil).want(t, 200)
	if got := pins(r); got != "P1=<nil> masked=true/true" {
		t.Fatalf("stop answer: %s", got)
	}
	// The output itself unreadable: 403, as before.
	wantNoAccess(t, e.do("GET", vdpPath(pid, "", "dataPointID", "hidden"), u, nil), "read", "hidden")
}

// Deleting a project deletes every datapoint in it, so it needs write
// access to each of them through TagAuths, virtual datapoint outputs
// included; a refusal is a 403 envelope naming one and deletes nothing.
func TestProjectDeleteNeedsWriteOnEveryDatapoint(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	deleteProject := e.endpointID("DELETE", "/v2/project/{project_id}")
	for _, tt := range []struct {
		why     string
		tags    []map[string]any
		vdp     bool   // the project also has a virtual datapoint calc_out, never computed
		company bool   // the caller is the company admin instead
		denied  string // the datapoint the 403 names; "" for a deletion
	}{
		{why: "a read-only temp* role", tags: []map[string]any{rbTag("name", "temp*", true, false)}, denied: "hum_1"},
		{why: "write on temp* only", tags: []map[string]any{rbTag("name", "temp*", true, true)}, denied: "hum_1"},
		{why: "read on all, write on temp*", tags: []map[string]any{rbTag("name", "*", true, false), rbTag("name", "temp*", false, true)}, denied: "hum_1"},
		{why: "write on every stored datapoint by name and tag", tags: []map[string]any{rbTag("name", "temp*", true, true), rbTag("room", "1*", false, true)}},
		{why: "an output not stored yet is judged by its name", tags: []map[string]any{rbTag("name", "temp*", true, true), rbTag("room", "1*", false, true)},
			vdp: true, denied: "calc_out"},
		{why: "write on everything", tags: []map[string]any{rbTag("name", "*", true, true)}, vdp: true},
		{why: "the company admin", company: true, vdp: true},
	} {
		t.Run(tt.why, func(t *testing.T) {
			pid, _ := e.newProject(c.Admin)
			e.do("POST", fmt.Sprintf("/v2/project/%d/timeseries", pid), c.Admin, map[string]any{
				"temp_1": []map[string]any{{"time": "2026-01-05T10:00:00Z", "value": 21.5}},
				"temp_2": []map[string]any{{"time": "2026-01-05T10:00:00Z", "value": 20}},
				"hum_1":  []map[string]any{{"time": "2026-01-05T10:00:00Z", "value": 0.4}},
			}).want(t, 200)
			if _, err := e.store.SetSystemTags(context.Background(), pid, "hum_1", []store.DatapointTag{{Key: "room", Value: "1.04"}}); err != nil {
				t.Fatal(err)
			}
			if tt.vdp {
				e.do("POST", vdpPath(pid, "", "dataPointID", "calc_out", "type", "formula"), c.Admin,
					formulaConfig("P1", map[string]string{"P1": "temp_1"})).want(t, 200)
			}
			as := cred(c.Admin)
			if !tt.company {
				u, uid := e.newUser(c)
				rbAssignProjectRole(e, c.Admin, pid, rbCreateProjectRole(e, c.Admin, pid, []int32{deleteProject}, tt.tags...), uid)
				as = u
			}
			r := e.do("DELETE", "/v2/project/"+itoa(pid), as, nil)
			if tt.denied == "" {
				r.want(t, 200)
				// Gone: a project not (or no longer) in the company is 403.
				e.do("GET", "/v2/project/"+itoa(pid), c.Admin, nil).wantError(t, 403)
				return
			}
			r.wantError(t, 403)
			if msg := r.JSON["error"].(string); !strings.Contains(msg, fmt.Sprintf("no write access to datapoint %q", tt.denied)) {
				t.Fatalf("error %q does not name %s", msg, tt.denied)
			}
			e.do("GET", "/v2/project/"+itoa(pid), c.Admin, nil).want(t, 200)
			if n := e.sqlFloat(`SELECT count(*) FROM observations o JOIN datapoints d ON d.id = o.datapoint WHERE d.project_id = $1`, pid); n != 3 {
				t.Fatalf("%v observations left after a refused delete, want 3", n)
			}
		})
	}
}
