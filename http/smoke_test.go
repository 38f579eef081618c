package http

import "testing"

func TestCompanyBootstrap(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	r := e.do("GET", "/v2/company", c.Admin, nil).want(t, 200)
	if num(t, r.JSON, "company.id") != c.ID {
		t.Fatalf("wrong company: %s", r.Body)
	}
	pid, _ := e.newProject(c.Admin)
	e.do("GET", "/v2/project/"+itoa(pid), c.Admin, nil).want(t, 200)
}
