package http

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
)

// Aliases and safeguards of aedifion's published API (decisions.md 10,
// issue 8 item 11): the forms aedifion's clients send work, and what bdp
// does not do is refused by name instead of passing silently.

// doForm sends a form-encoded body.
func (e *testEnv) doForm(method, path string, c cred, form url.Values) resp {
	e.t.Helper()
	return e.send(method, path, c, "application/x-www-form-urlencoded", strings.NewReader(form.Encode()))
}

// POST /v2/user/token issues the same tokens as /v2/auth/token, by
// Basic credentials and by the password grant.
func TestUserTokenIsAnAliasOfAuthToken(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	for _, path := range []string{"/v2/auth/token", "/v2/user/token"} {
		t.Run(path, func(t *testing.T) {
			tok := e.do("POST", path, c.Admin, nil).want(t, 200)
			if tok.JSON["token_type"] != "bearer" {
				t.Fatalf("token answer: %s", tok.Body)
			}
			e.do("GET", "/v2/user", bearer(tok.JSON["access_token"].(string)), nil).want(t, 200)
			grant := e.doForm("POST", path, nil, url.Values{"grant_type": {"password"}, "username": {c.Admin.email}, "password": {c.Admin.password}}).want(t, 200)
			e.do("GET", "/v2/user", bearer(grant.JSON["access_token"].(string)), nil).want(t, 200)
			e.do("POST", path, basic{c.Admin.email, "wrong-password"}, nil).wantError(t, 401)
		})
	}
}

// PUT /v2/user/password takes the form aedifion's clients send, with the
// same checks as the JSON body.
func TestChangePasswordAsForm(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	u, _ := e.newUser(c)
	for _, tc := range []struct {
		name string
		form url.Values
	}{
		{"new_password missing", url.Values{"current_password": {u.password}}},
		{"current_password missing", url.Values{"new_password": {"another-password"}}},
		{"current_password wrong", url.Values{"current_password": {"not-the-password"}, "new_password": {"another-password"}}},
		{"new_password too short", url.Values{"current_password": {u.password}, "new_password": {"short"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.doForm("PUT", "/v2/user/password", u, tc.form).wantError(t, 400)
			e.do("GET", "/v2/user", u, nil).want(t, 200) // unchanged
		})
	}
	e.doForm("PUT", "/v2/user/password", u, url.Values{"current_password": {u.password}, "new_password": {"form-password"}}).want(t, 200)
	e.do("GET", "/v2/user", u, nil).wantError(t, 401)
	e.do("GET", "/v2/user", basic{u.email, "form-password"}, nil).want(t, 200)
}

// PUT /v2/user with a password (or a setting aedifion has and bdp not)
// answers 400 naming it and changes nothing, instead of a success that
// leaves the password as it was.
func TestUpdateUserRefusesFieldsItDoesNotTake(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	u, _ := e.newUser(c)
	for _, tc := range []struct {
		field string
		value any
		want  string
	}{
		{"password", "a-new-password", "/v2/user/password"},
		{"password", nil, "/v2/user/password"},
		{"units_system", "imperial", "units_system"},
		{"currency_system", "USD", "currency_system"},
		{"locale", "de", "locale"},
	} {
		t.Run(tc.field, func(t *testing.T) {
			r := e.do("PUT", "/v2/user", u, map[string]any{"firstName": "Changed", tc.field: tc.value}).wantError(t, 400)
			if !strings.Contains(r.JSON["error"].(string), tc.want) {
				t.Fatalf("error does not point to %s: %s", tc.want, r.Body)
			}
		})
	}
	got := e.do("GET", "/v2/user", u, nil).want(t, 200)
	if name := adStr(t, got.JSON, "user.firstName"); name != "Uma" {
		t.Fatalf("a refused update changed firstName to %q", name)
	}
	e.do("PUT", "/v2/user", u, map[string]any{"firstName": "Changed"}).want(t, 200)
}

// DELETE /v2/project/{id}?project_name= deletes only when the name is
// exact; without the parameter the delete works as before.
func TestDeleteProjectChecksProjectName(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	pid, _ := e.newProject(c.Admin)
	name := adStr(t, e.do("GET", fmt.Sprintf("/v2/project/%d", pid), c.Admin, nil).want(t, 200).JSON, "name")
	for _, wrong := range []string{"", "other", strings.ToUpper(name), name + " "} {
		r := e.do("DELETE", fmt.Sprintf("/v2/project/%d?project_name=%s", pid, url.QueryEscape(wrong)), c.Admin, nil).wantError(t, 400)
		if !strings.Contains(r.JSON["error"].(string), "project_name") {
			t.Fatalf("error does not name project_name: %s", r.Body)
		}
		e.do("GET", fmt.Sprintf("/v2/project/%d", pid), c.Admin, nil).want(t, 200)
	}
	e.do("DELETE", fmt.Sprintf("/v2/project/%d?project_name=%s", pid, url.QueryEscape(name)), c.Admin, nil).want(t, 200)
	e.do("GET", fmt.Sprintf("/v2/project/%d", pid), c.Admin, nil).wantError(t, 403)

	other, _ := e.newProject(c.Admin)
	e.do("DELETE", fmt.Sprintf("/v2/project/%d", other), c.Admin, nil).want(t, 200)
}

// absolute_air_humidity, aedifion's name, creates the absolute_humidity
// type; the answer names both.
func TestVDPTypeAbsoluteAirHumidityAlias(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	pid, _ := e.newProject(c.Admin)
	body := map[string]any{"pins": map[string]any{"relative_humidity": map[string]any{"dataPointID": "rh"},
		"temperature": map[string]any{"dataPointID": "temp"}}, "parameters": map[string]any{}}
	for _, tc := range []struct{ typ, id string }{{"absolute_air_humidity", "ah1"}, {"absolute_humidity", "ah2"}} {
		r := e.do("POST", vdpPath(pid, "", "dataPointID", tc.id, "type", tc.typ), c.Admin, body).want(t, 200)
		res := r.resource(t)
		if res["type"] != "absolute_humidity" || res["vdp_type"] != "absolute_air_humidity" {
			t.Fatalf("%s: type %v, vdp_type %v", tc.typ, res["type"], res["vdp_type"])
		}
	}
	got := e.do("GET", vdpPath(pid, "", "dataPointID", "ah1"), c.Admin, nil).want(t, 200)
	if got.JSON["type"] != "absolute_humidity" || got.JSON["vdp_type"] != "absolute_air_humidity" {
		t.Fatalf("stored type: %s", got.Body)
	}
	// aedifion's other types are not bdp's: refused by name.
	r := e.do("POST", vdpPath(pid, "", "dataPointID", "ctr", "type", "counter"), c.Admin, body).wantError(t, 400)
	if !strings.Contains(r.JSON["error"].(string), `"counter"`) {
		t.Fatalf("error does not name the type: %s", r.Body)
	}
}
