package http

import (
	"fmt"
	"strings"
	"testing"
)

// User endpoints (api.md 4.1-4.3) answer as documented, with visible effects.

func TestCreateUserBothForms(t *testing.T) {
	for _, path := range []string{"/v2/company/user", "/v2/user"} {
		t.Run(path, func(t *testing.T) {
			e := newTestEnv(t)
			c := e.newCompany()
			email := uniq("new.user") + "@example.com"
			r := e.do("POST", path, c.Admin, map[string]any{
				"company_id": c.ID, "firstName": "Nora", "lastName": "New", "email": email, "password": "nora-password",
			}).want(t, 200)
			res := adWantOp(t, r, "create")
			uid := num(t, res, "id")
			if uid <= 0 || num(t, res, "company_id") != c.ID || res["firstName"] != "Nora" || res["lastName"] != "New" || res["email"] != email {
				t.Fatalf("wrong user: %s", r.Body)
			}
			if strings.Contains(string(r.Body), "password") {
				t.Fatalf("the password must never be returned: %s", r.Body)
			}

			// The company lists the user; the user can log in and has no roles.
			if ids := adIDs(t, adList(t, e.do("GET", "/v2/company", c.Admin, nil).want(t, 200).JSON, "users")); !adHas(ids, uid) {
				t.Fatalf("company does not list user %d", uid)
			}
			u := basic{email, "nora-password"}
			me := e.do("GET", "/v2/user", u, nil).want(t, 200)
			if num(t, me.JSON, "user.id") != uid || adStr(t, me.JSON, "user.email") != email ||
				len(adList(t, me.JSON, "roles")) != 0 || len(adList(t, me.JSON, "companyroles")) != 0 {
				t.Fatalf("a new user has no roles: %s", me.Body)
			}
			e.do("GET", "/v2/company", u, nil).wantError(t, 403)

			// company_id null or left out is the caller's company (issue 17:
			// aedifion's body has none; api.md 4.2 lists it as required).
			for _, id := range []any{nil, "absent"} {
				body := map[string]any{"firstName": "Otto", "lastName": "Omitted", "email": uniq("otto") + "@example.com", "password": "otto-password"}
				if id == nil {
					body["company_id"] = nil
				}
				r = e.do("POST", path, c.Admin, body).want(t, 200)
				if num(t, r.resource(t), "company_id") != c.ID {
					t.Fatalf("company_id %v: the user did not join the caller's company: %s", id, r.Body)
				}
			}
		})
	}
}

func TestCreateUserDuplicateEmail(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	other := e.newCompany()
	u, _ := e.newUser(c)
	before := e.do("GET", "/v2/company", c.Admin, nil).want(t, 200).Body

	for _, tc := range []struct{ path, email string }{
		{"/v2/company/user", u.email},
		{"/v2/user", u.email},
		{"/v2/company/user", strings.ToUpper(u.email)},
		{"/v2/company/user", " " + u.email + " "},
		{"/v2/company/user", strings.ToUpper(c.Admin.email[:1]) + c.Admin.email[1:]},
	} {
		r := e.do("POST", tc.path, c.Admin, map[string]any{"company_id": c.ID,
			"firstName": "Dup", "lastName": "Licate", "email": tc.email, "password": "dup-password"}).wantError(t, 409)
		if r.JSON["operation"] != "create" {
			t.Fatalf("operation should be create: %s", r.Body)
		}
	}
	// Unique across companies as well.
	e.do("POST", "/v2/company/user", other.Admin, map[string]any{"company_id": other.ID,
		"firstName": "Dup", "lastName": "Licate", "email": strings.ToUpper(u.email), "password": "dup-password"}).wantError(t, 409)

	if after := e.do("GET", "/v2/company", c.Admin, nil).want(t, 200).Body; string(after) != string(before) {
		t.Fatalf("a rejected duplicate changed the company:\nbefore %s\nafter  %s", before, after)
	}
	// The original credentials still belong to the original user.
	e.do("GET", "/v2/user", u, nil).want(t, 200)
	e.do("GET", "/v2/user", basic{u.email, "dup-password"}, nil).wantError(t, 401)
	// Emails are one address regardless of case, for logging in as well.
	me := e.do("GET", "/v2/user", basic{strings.ToUpper(u.email), u.password}, nil).want(t, 200)
	if adStr(t, me.JSON, "user.email") != u.email {
		t.Fatalf("logged in as someone else: %s", me.Body)
	}
}

func TestUpdateUserChangesOnlyTheCaller(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	u, uid := e.newUser(c)
	v, vid := e.newUser(c)

	newEmail := uniq("renamed") + "@example.com"
	update := map[string]any{"firstName": "Ulla", "lastName": "Updated", "email": newEmail, "address": "Main St 1", "phone": "+49 30 123"}
	// id and company_id are no fields of the update (a user changes only
	// themself): refused by name, nothing changed.
	for _, field := range []string{"id", "company_id"} {
		r := e.do("PUT", "/v2/user", u, map[string]any{field: vid, "firstName": "Ulla"}).wantError(t, 400)
		if !strings.Contains(r.JSON["error"].(string), `unknown field "`+field+`"`) {
			t.Fatalf("PUT /v2/user with %s: %s", field, r.Body)
		}
	}
	if me := e.do("GET", "/v2/user", u, nil).want(t, 200); adStr(t, me.JSON, "user.firstName") == "Ulla" {
		t.Fatalf("a refused update changed the user: %s", me.Body)
	}
	r := e.do("PUT", "/v2/user", u, update).want(t, 200)
	res := adWantOp(t, r, "update")
	if num(t, res, "id") != uid || num(t, res, "company_id") != c.ID || res["firstName"] != "Ulla" ||
		res["lastName"] != "Updated" || res["email"] != newEmail {
		t.Fatalf("wrong update answer: %s", r.Body)
	}

	// The new email logs in, the old one no longer does.
	u2 := basic{newEmail, u.password}
	me := e.do("GET", "/v2/user", u2, nil).want(t, 200)
	if adStr(t, me.JSON, "user.address") != "Main St 1" || adStr(t, me.JSON, "user.phone") != "+49 30 123" ||
		adStr(t, me.JSON, "user.firstName") != "Ulla" || num(t, me.JSON, "user.id") != uid {
		t.Fatalf("GET /v2/user does not show the update: %s", me.Body)
	}
	e.do("GET", "/v2/user", u, nil).wantError(t, 401)

	// A partial update keeps the other fields.
	e.do("PUT", "/v2/user", u2, map[string]any{"phone": "555"}).want(t, 200)
	me = e.do("GET", "/v2/user", u2, nil).want(t, 200)
	if adStr(t, me.JSON, "user.phone") != "555" || adStr(t, me.JSON, "user.address") != "Main St 1" || adStr(t, me.JSON, "user.lastName") != "Updated" {
		t.Fatalf("partial update lost fields: %s", me.Body)
	}

	// The other user is untouched.
	them := e.do("GET", "/v2/user", v, nil).want(t, 200)
	if num(t, them.JSON, "user.id") != vid || adStr(t, them.JSON, "user.firstName") != "Uma" || adStr(t, them.JSON, "user.email") != v.email {
		t.Fatalf("another user was changed: %s", them.Body)
	}

	// Taking someone else's email, in any case, is a conflict and changes nothing.
	e.do("PUT", "/v2/user", u2, map[string]any{"email": strings.ToUpper(v.email), "firstName": "Thief"}).wantError(t, 409)
	me = e.do("GET", "/v2/user", u2, nil).want(t, 200)
	if adStr(t, me.JSON, "user.email") != newEmail || adStr(t, me.JSON, "user.firstName") != "Ulla" {
		t.Fatalf("a rejected update changed the user: %s", me.Body)
	}

	// There is no way to address another user.
	e.do("PUT", "/v2/user/"+itoa(vid), u2, map[string]any{"firstName": "Thief"}).wantError(t, 404)
	e.do("DELETE", "/v2/user/"+itoa(vid), u2, nil).wantError(t, 404)
	e.do("GET", "/v2/user", v, nil).want(t, 200)
}

func TestDeleteUserDeletesOnlyTheCaller(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	pid, _ := e.newProject(c.Admin)
	u, uid := e.newUser(c)
	v, vid := e.newUser(c)

	// Give u a project role and a token, so all of it must go.
	r := e.do("POST", "/v2/project/"+itoa(pid)+"/role", c.Admin, map[string]any{
		"name": "r", "authed_endpoints": []int32{e.endpointID("GET", "/v2/project/{project_id}")}}).want(t, 200)
	roleID := num(t, r.JSON, "resource.id")
	e.do("POST", fmt.Sprintf("/v2/project/%d/role/%d/user/%d", pid, roleID, uid), c.Admin, nil).want(t, 200)
	tok := e.do("POST", "/v2/auth/token", u, nil).want(t, 200).JSON["access_token"].(string)
	e.do("GET", "/v2/user", bearer(tok), nil).want(t, 200)

	r = e.do("DELETE", "/v2/user", u, nil).want(t, 200)
	res := adWantOp(t, r, "delete")
	if num(t, res, "id") != uid || res["email"] != u.email {
		t.Fatalf("DELETE should answer the deleted user: %s", r.Body)
	}

	e.do("GET", "/v2/user", u, nil).wantError(t, 401)
	e.do("GET", "/v2/user", bearer(tok), nil).wantError(t, 401)
	ids := adIDs(t, adList(t, e.do("GET", "/v2/company", c.Admin, nil).want(t, 200).JSON, "users"))
	if adHas(ids, uid) || !adHas(ids, vid) || !adHas(ids, c.AdminID) {
		t.Fatalf("company users after delete: %v", ids)
	}
	// The role stays, without the user.
	roles := adList(t, e.do("GET", "/v2/project/"+itoa(pid)+"/roles", c.Admin, nil).want(t, 200).List, "")
	if adRole(t, roles, roleID) == nil {
		t.Fatalf("deleting a user must not delete their roles")
	}
	e.do("GET", "/v2/user", v, nil).want(t, 200)
	e.do("GET", "/v2/user", c.Admin, nil).want(t, 200)

	// The email is free again.
	e.do("POST", "/v2/company/user", c.Admin, map[string]any{"company_id": c.ID,
		"firstName": "Re", "lastName": "Born", "email": u.email, "password": "another-password"}).want(t, 200)
}

func TestChangePassword(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	u, _ := e.newUser(c)
	oldTok := e.do("POST", "/v2/auth/token", u, nil).want(t, 200).JSON["access_token"].(string)
	e.do("GET", "/v2/user", bearer(oldTok), nil).want(t, 200)

	// Wrong current password or a short new one: refused, nothing changes.
	e.do("PUT", "/v2/user/password", u, map[string]any{"current_password": "not-the-password", "new_password": "brand-new-password"}).wantError(t, 400)
	e.do("PUT", "/v2/user/password", u, map[string]any{"current_password": u.password, "new_password": "short"}).wantError(t, 400)
	e.do("GET", "/v2/user", u, nil).want(t, 200)
	e.do("GET", "/v2/user", basic{u.email, "brand-new-password"}, nil).wantError(t, 401)
	e.do("GET", "/v2/user", bearer(oldTok), nil).want(t, 200)

	r := e.do("PUT", "/v2/user/password", u, map[string]any{"current_password": u.password, "new_password": "brand-new-password"}).want(t, 200)
	adWantOp(t, r, "update")
	if strings.Contains(string(r.Body), "brand-new-password") {
		t.Fatalf("the password must never be returned: %s", r.Body)
	}

	// Old password: 401 with the challenge; new password works.
	old := e.do("GET", "/v2/user", u, nil).wantError(t, 401)
	if old.Header.Get("WWW-Authenticate") != `Basic realm="bdp"` {
		t.Fatalf("401 without challenge: %v", old.Header)
	}
	nu := basic{u.email, "brand-new-password"}
	e.do("GET", "/v2/user", nu, nil).want(t, 200)

	// A token issued before the change is rejected; a new one works.
	e.do("GET", "/v2/user", bearer(oldTok), nil).wantError(t, 401)
	e.do("POST", "/v2/auth/token", u, nil).wantError(t, 401)
	newTok := e.do("POST", "/v2/auth/token", nu, nil).want(t, 200).JSON["access_token"].(string)
	e.do("GET", "/v2/user", bearer(newTok), nil).want(t, 200)

	// The admin's password is untouched.
	e.do("GET", "/v2/user", c.Admin, nil).want(t, 200)
}
