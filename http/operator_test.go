package http

import (
	"net/url"
	"strings"
	"testing"
)

// Integration tests of the operator API (decisions.md 2).

var opTok = bearer(testOperatorToken)

func TestOperatorCreateCompany(t *testing.T) {
	e := newTestEnv(t)
	email := uniq("founder") + "@example.com"
	name := uniq("Acme ")
	r := e.do("POST", "/operator/companies", opTok, map[string]any{
		"name": name, "description": "makes everything",
		"admin": map[string]any{"firstName": "Fay", "lastName": "Founder", "email": email, "password": "founder-secret"},
	}).want(t, 201)
	res := adWantOp(t, r, "create")
	coID := num(t, res, "company.id")
	if coID <= 0 || adStr(t, res, "company.name") != name || adStr(t, res, "company.description") != "makes everything" {
		t.Fatalf("wrong company: %s", r.Body)
	}
	uid := num(t, res, "user.id")
	if uid <= 0 || num(t, res, "user.company_id") != coID || adStr(t, res, "user.email") != email ||
		adStr(t, res, "user.firstName") != "Fay" || adStr(t, res, "user.lastName") != "Founder" {
		t.Fatalf("wrong user: %s", r.Body)
	}
	body := string(r.Body)
	if strings.Contains(body, "password") || strings.Contains(body, "founder-secret") || strings.Contains(body, "argon") {
		t.Fatalf("the answer must not carry the password or its hash: %s", body)
	}
	roleID := num(t, res, "role.id")
	if adStr(t, res, "role.name") != "admin" || num(t, res, "role.company_id") != coID {
		t.Fatalf("wrong role: %s", r.Body)
	}
	held := adInts(t, res, "role.authed_endpoints")
	for _, ep := range e.adCatalog() {
		if !adHas(held, num(t, ep, "id")) {
			t.Errorf("company admin role lacks %v %v", ep["request_method"], ep["path"])
		}
	}

	// The admin logs in, holds the role and administers the company.
	admin := basic{email, "founder-secret"}
	me := e.do("GET", "/v2/user", admin, nil).want(t, 200)
	if num(t, me.JSON, "user.id") != uid || num(t, me.JSON, "user.company_id") != coID {
		t.Fatalf("wrong user: %s", me.Body)
	}
	if mine := adList(t, me.JSON, "companyroles"); len(mine) != 1 || num(t, mine[0], "id") != roleID {
		t.Fatalf("the admin should hold the company admin role: %s", me.Body)
	}
	co := e.do("GET", "/v2/company", admin, nil).want(t, 200)
	if num(t, co.JSON, "company.id") != coID || adStr(t, co.JSON, "company.name") != name {
		t.Fatalf("wrong company: %s", co.Body)
	}
	e.do("POST", "/v2/company/project", admin, map[string]any{"name": "first"}).want(t, 200)
	e.do("POST", "/v2/company/user", admin, map[string]any{"company_id": coID,
		"firstName": "Second", "lastName": "User", "email": uniq("second") + "@example.com", "password": "second-password"}).want(t, 200)
	// A token works as well.
	tok := e.do("POST", "/v2/auth/token", admin, nil).want(t, 200).JSON["access_token"].(string)
	e.do("GET", "/v2/company", bearer(tok), nil).want(t, 200)
}

func TestOperatorCreateCompanyRejects(t *testing.T) {
	e := newTestEnv(t)
	existing := e.newCompany()
	var existingName string
	{
		r := e.do("GET", "/v2/company", existing.Admin, nil).want(t, 200)
		existingName = adStr(t, r.JSON, "company.name")
	}
	admin := func(email, password string) map[string]any {
		return map[string]any{"firstName": "A", "lastName": "B", "email": email, "password": password}
	}
	for _, tc := range []struct {
		name   string
		body   any
		status int
	}{
		{"duplicate admin email", map[string]any{"name": uniq("c"), "admin": admin(strings.ToUpper(existing.Admin.email), "long-enough")}, 409},
		{"duplicate company name", map[string]any{"name": existingName, "admin": admin(uniq("x")+"@example.com", "long-enough")}, 409},
		{"missing admin", map[string]any{"name": uniq("c")}, 400},
		{"admin without email", map[string]any{"name": uniq("c"), "admin": map[string]any{"firstName": "A", "lastName": "B", "password": "long-enough"}}, 400},
		{"invalid admin email", map[string]any{"name": uniq("c"), "admin": admin("not an email", "long-enough")}, 400},
		{"short admin password", map[string]any{"name": uniq("c"), "admin": admin(uniq("x")+"@example.com", "short")}, 400},
		{"empty name", map[string]any{"name": " ", "admin": admin(uniq("x")+"@example.com", "long-enough")}, 400},
		{"NUL in name", map[string]any{"name": "a\x00", "admin": admin(uniq("x")+"@example.com", "long-enough")}, 400},
		{"name of wrong type", map[string]any{"name": 12345, "admin": admin(uniq("x")+"@example.com", "long-enough")}, 400},
		{"malformed JSON", []byte(`{"name": "x", "admin": {`), 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do("POST", "/operator/companies", opTok, tc.body).wantError(t, tc.status)
			if r.JSON["operation"] != "create" {
				t.Fatalf("operation should be create: %s", r.Body)
			}
			// Nothing was created: the email of the rejected admin (if any) is still free.
			if m, ok := tc.body.(map[string]any); ok {
				if a, ok := m["admin"].(map[string]any); ok {
					if em, ok := a["email"].(string); ok && strings.Contains(em, "@") {
						e.do("GET", "/v2/user", basic{em, "long-enough"}, nil).wantError(t, 401)
					}
				}
			}
		})
	}
	// The rejected duplicates left the existing company as it was.
	r := e.do("GET", "/v2/company", existing.Admin, nil).want(t, 200)
	if len(adList(t, r.JSON, "users")) != 1 {
		t.Fatalf("existing company changed: %s", r.Body)
	}
}

func TestOperatorProjectSettings(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	pid, _ := e.newProject(c.Admin)
	path := "/operator/projects/" + itoa(pid) + "/settings"

	r := e.do("GET", path, opTok, nil).want(t, 200)
	res := r.resource(t)
	if res["setpoint_writing_enabled"] != false || num(t, res, "setpoint_max_priority") != 8 || num(t, res, "autosampling_n") != 200 {
		t.Fatalf("wrong defaults: %s", r.Body)
	}
	units, currency := res["units_system"], res["currency_system"]

	// A partial update keeps the rest.
	r = e.do("PUT", path, opTok, map[string]any{"setpoint_writing_enabled": true}).want(t, 200)
	res = adWantOp(t, r, "update")
	if res["setpoint_writing_enabled"] != true || num(t, res, "setpoint_max_priority") != 8 || num(t, res, "autosampling_n") != 200 {
		t.Fatalf("wrong answer: %s", r.Body)
	}
	e.do("PUT", path, opTok, map[string]any{"setpoint_max_priority": 3, "autosampling_n": 500}).want(t, 200)
	res = e.do("GET", path, opTok, nil).want(t, 200).resource(t)
	if res["setpoint_writing_enabled"] != true || num(t, res, "setpoint_max_priority") != 3 || num(t, res, "autosampling_n") != 500 ||
		res["units_system"] != units || res["currency_system"] != currency {
		t.Fatalf("settings after two partial updates: %v", res)
	}
	for _, p := range []int{1, 16} {
		r = e.do("PUT", path, opTok, map[string]any{"setpoint_max_priority": p}).want(t, 200)
		if num(t, r.JSON, "resource.setpoint_max_priority") != int64(p) {
			t.Fatalf("priority %d not taken: %s", p, r.Body)
		}
	}
	e.do("PUT", path, opTok, map[string]any{"setpoint_max_priority": 3}).want(t, 200)

	// Out-of-range or mistyped values: 400, nothing changes.
	for _, body := range []any{
		map[string]any{"setpoint_max_priority": 0},
		map[string]any{"setpoint_max_priority": 17},
		map[string]any{"setpoint_max_priority": -1},
		map[string]any{"setpoint_max_priority": 2.5},
		map[string]any{"setpoint_writing_enabled": false, "setpoint_max_priority": 17}, // all or nothing
		map[string]any{"setpoint_writing_enabled": "yes"},
		map[string]any{"autosampling_n": 0},
		[]byte(`{"autosampling_n": `),
		map[string]any{"units_system": "martian"},
		map[string]any{"currency_system": "XXX"},
		map[string]any{"units_system": "SI", "currency_system": ""},
	} {
		r = e.do("PUT", path, opTok, body).wantError(t, 400)
		if r.JSON["operation"] != "update" {
			t.Fatalf("operation should be update: %s", r.Body)
		}
	}
	res = e.do("GET", path, opTok, nil).want(t, 200).resource(t)
	if res["setpoint_writing_enabled"] != true || num(t, res, "setpoint_max_priority") != 3 || num(t, res, "autosampling_n") != 500 ||
		res["units_system"] != units || res["currency_system"] != currency {
		t.Fatalf("a rejected update changed settings: %v", res)
	}
	// Systems are those of GET /v2/labels/systems, in any case.
	r = e.do("PUT", path, opTok, map[string]any{"units_system": " imperial ", "currency_system": "usd"}).want(t, 200)
	if res := r.resource(t); res["units_system"] != "imperial" || res["currency_system"] != "USD" {
		t.Fatalf("systems not stored as listed: %s", r.Body)
	}

	// Settings are per project.
	other, _ := e.newProject(c.Admin)
	res = e.do("GET", "/operator/projects/"+itoa(other)+"/settings", opTok, nil).want(t, 200).resource(t)
	if res["setpoint_writing_enabled"] != false || num(t, res, "setpoint_max_priority") != 8 {
		t.Fatalf("another project's settings changed: %v", res)
	}

	// Unknown or malformed project ids.
	e.do("GET", "/operator/projects/999999/settings", opTok, nil).wantError(t, 404)
	e.do("PUT", "/operator/projects/999999/settings", opTok, map[string]any{"autosampling_n": 5}).wantError(t, 404)
	e.do("GET", "/operator/projects/abc/settings", opTok, nil).wantError(t, 400)
	e.do("PUT", "/operator/projects/0/settings", opTok, map[string]any{"autosampling_n": 5}).wantError(t, 400)
}

func TestOperatorQuotas(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	pid, _ := e.newProject(c.Admin)
	for _, path := range []string{"/operator/companies/" + itoa(c.ID) + "/quota", "/operator/projects/" + itoa(pid) + "/quota"} {
		t.Run(path, func(t *testing.T) {
			// An empty update shows the defaults: 1000 files, 1 GiB, 100 MiB per file.
			res := adWantOp(t, e.do("PUT", path, opTok, map[string]any{}).want(t, 200), "update")
			if num(t, res, "files") != 1000 || num(t, res, "space_bytes") != 1<<30 || num(t, res, "file_size_bytes") != 100<<20 {
				t.Fatalf("wrong defaults: %v", res)
			}
			res = e.do("PUT", path, opTok, map[string]any{"files": 10, "space_bytes": 4096}).want(t, 200).resource(t)
			if num(t, res, "files") != 10 || num(t, res, "space_bytes") != 4096 || num(t, res, "file_size_bytes") != 100<<20 {
				t.Fatalf("wrong answer: %v", res)
			}
			// A partial update keeps the rest.
			res = e.do("PUT", path, opTok, map[string]any{"file_size_bytes": 512}).want(t, 200).resource(t)
			if num(t, res, "files") != 10 || num(t, res, "space_bytes") != 4096 || num(t, res, "file_size_bytes") != 512 {
				t.Fatalf("partial update lost limits: %v", res)
			}
			// Limits are 64-bit: above 2^31-1 is stored as given, not a 500.
			big := map[string]any{"files": int64(1) << 40, "space_bytes": int64(1) << 50, "file_size_bytes": int64(1) << 45}
			res = e.do("PUT", path, opTok, big).want(t, 200).resource(t)
			if num(t, res, "files") != 1<<40 || num(t, res, "space_bytes") != 1<<50 || num(t, res, "file_size_bytes") != 1<<45 {
				t.Fatalf("64-bit limits: %v", res)
			}
			e.do("PUT", path, opTok, map[string]any{"files": 10, "space_bytes": 4096, "file_size_bytes": 512}).want(t, 200)
			// Zero is a valid limit; negative and mistyped values are not.
			e.do("PUT", path, opTok, map[string]any{"files": 0}).want(t, 200)
			for _, body := range []any{
				map[string]any{"files": -1},
				map[string]any{"space_bytes": -5, "files": 7},
				map[string]any{"file_size_bytes": "big"},
				map[string]any{"files": 1.5},
				[]byte(`{"files":`),
			} {
				e.do("PUT", path, opTok, body).wantError(t, 400)
			}
			res = e.do("PUT", path, opTok, nil).want(t, 200).resource(t)
			if num(t, res, "files") != 0 || num(t, res, "space_bytes") != 4096 || num(t, res, "file_size_bytes") != 512 {
				t.Fatalf("a rejected update changed the quota: %v", res)
			}
		})
	}
	// Company and project quotas are separate.
	res := e.do("PUT", "/operator/projects/"+itoa(pid)+"/quota", opTok, nil).want(t, 200).resource(t)
	other, _ := e.newProject(c.Admin)
	res2 := e.do("PUT", "/operator/projects/"+itoa(other)+"/quota", opTok, nil).want(t, 200).resource(t)
	if num(t, res, "files") != 0 || num(t, res2, "files") != 1000 {
		t.Fatalf("quotas leak between projects: %v %v", res, res2)
	}

	e.do("PUT", "/operator/projects/999999/quota", opTok, map[string]any{"files": 1}).wantError(t, 404)
	e.do("PUT", "/operator/companies/999999/quota", opTok, map[string]any{"files": 1}).wantError(t, 404)
	e.do("PUT", "/operator/projects/abc/quota", opTok, map[string]any{"files": 1}).wantError(t, 400)
	e.do("PUT", "/operator/companies/-3/quota", opTok, map[string]any{"files": 1}).wantError(t, 400)
}

func TestOperatorSystemTagsCreateDatapoint(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	pid, _ := e.newProject(c.Admin)
	proj := "/v2/project/" + itoa(pid)
	tagsPath := func(dp string) string {
		return "/operator/projects/" + itoa(pid) + "/datapoints/" + url.PathEscape(dp) + "/tags"
	}
	datapoints := func() []string {
		t.Helper()
		raw, ok := e.do("GET", proj, c.Admin, nil).want(t, 200).JSON["datapoints"].([]any)
		if !ok {
			t.Fatalf("GET project has no datapoints array")
		}
		out := make([]string, 0, len(raw))
		for _, x := range raw {
			out = append(out, x.(string))
		}
		return out
	}
	if dps := datapoints(); len(dps) != 0 {
		t.Fatalf("a new project has no datapoints: %v", dps)
	}

	r := e.do("PUT", tagsPath("room1.temp"), opTok, []map[string]any{{"key": "units", "value": "°C"}}).want(t, 200)
	res := adWantOp(t, r, "update")
	if res["dataPointID"] != "room1.temp" {
		t.Fatalf("wrong dataPointID: %s", r.Body)
	}
	tags := adList(t, res, "tags")
	if len(tags) != 1 || tags[0]["key"] != "units" || tags[0]["value"] != "°C" || tags[0]["source"] != "system" || num(t, tags[0], "id") <= 0 {
		t.Fatalf("wrong tags: %s", r.Body)
	}
	if dps := datapoints(); len(dps) != 1 || dps[0] != "room1.temp" {
		t.Fatalf("GET project should list room1.temp: %v", dps)
	}

	// Setting again replaces the value of a key and adds new keys; other
	// keys stay; the datapoint is not duplicated.
	r = e.do("PUT", tagsPath("room1.temp"), opTok, []map[string]any{{"key": "units", "value": "K"}, {"key": "floor", "value": "1"}}).want(t, 200)
	tags = adList(t, r.JSON, "resource.tags")
	got := map[string]string{}
	for _, tg := range tags {
		got[tg["key"].(string)] = tg["value"].(string)
		if tg["source"] != "system" {
			t.Fatalf("tags set by the operator are system tags: %v", tg)
		}
	}
	if len(tags) != 2 || got["units"] != "K" || got["floor"] != "1" {
		t.Fatalf("wrong tags after the second update: %s", r.Body)
	}
	r = e.do("PUT", tagsPath("room1.temp"), opTok, []map[string]any{}).want(t, 200)
	if len(adList(t, r.JSON, "resource.tags")) != 2 {
		t.Fatalf("tags not named must stay: %s", r.Body)
	}
	if dps := datapoints(); len(dps) != 1 {
		t.Fatalf("the datapoint was duplicated: %v", dps)
	}

	// dataPointIDs may hold spaces, slashes and other printable characters.
	odd := "AHU 1/supply temp (°C) #2"
	r = e.do("PUT", tagsPath(odd), opTok, []map[string]any{{"key": "units", "value": "degC"}}).want(t, 200)
	if r.JSON["resource"].(map[string]any)["dataPointID"] != odd {
		t.Fatalf("dataPointID not decoded: %s", r.Body)
	}
	if dps := datapoints(); len(dps) != 2 || (dps[0] != odd && dps[1] != odd) {
		t.Fatalf("GET project should list %q: %v", odd, dps)
	}

	// Bad input: nothing is created.
	for _, tc := range []struct {
		dp     string
		body   any
		status int
	}{
		{"back\\slash", []map[string]any{{"key": "units", "value": "K"}}, 400},
		{"ctl\x01char", []map[string]any{{"key": "units", "value": "K"}}, 400},
		{"fresh", []map[string]any{{"key": "units"}}, 400},
		{"fresh", []map[string]any{{"key": "", "value": "K"}}, 400},
		{"fresh", []map[string]any{{"key": "units", "value": 5}}, 400},
		{"fresh", []map[string]any{{"key": "units", "value": "K\x00"}}, 400},
		{"fresh", map[string]any{"key": "units", "value": "K"}, 400}, // an object, not an array
		{"fresh", []byte(`[{"key":"units"`), 400},
	} {
		e.do("PUT", tagsPath(tc.dp), opTok, tc.body).wantError(t, tc.status)
	}
	if dps := datapoints(); len(dps) != 2 {
		t.Fatalf("rejected requests created datapoints: %v", dps)
	}
	e.do("PUT", "/operator/projects/999999/datapoints/x/tags", opTok, []map[string]any{{"key": "units", "value": "K"}}).wantError(t, 404)
	e.do("PUT", "/operator/projects/abc/datapoints/x/tags", opTok, []map[string]any{{"key": "units", "value": "K"}}).wantError(t, 400)
}

// operatorCalls is one call of every operator route, with a valid body.
func operatorCalls(pid, companyID int64) []struct {
	method, path string
	body         any
} {
	return []struct {
		method, path string
		body         any
	}{
		{"POST", "/operator/companies", map[string]any{"name": uniq("unauth co"), "admin": map[string]any{
			"firstName": "A", "lastName": "B", "email": uniq("unauth") + "@example.com", "password": "long-enough"}}},
		{"GET", "/operator/projects/" + itoa(pid) + "/settings", nil},
		{"PUT", "/operator/projects/" + itoa(pid) + "/settings", map[string]any{"setpoint_writing_enabled": true}},
		{"PUT", "/operator/companies/" + itoa(companyID) + "/quota", map[string]any{"files": 1}},
		{"PUT", "/operator/projects/" + itoa(pid) + "/quota", map[string]any{"files": 1}},
		{"PUT", "/operator/projects/" + itoa(pid) + "/datapoints/unauth/tags", []map[string]any{{"key": "units", "value": "K"}}},
		{"POST", "/operator/projects/" + itoa(pid) + "/edge", nil},
	}
}

func TestOperatorNeedsTheToken(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	pid, _ := e.newProject(c.Admin)
	for _, call := range operatorCalls(pid, c.ID) {
		for _, tc := range []struct {
			name string
			cred cred
		}{
			{"no credentials", nil},
			{"wrong token", bearer(testOperatorToken + "x")},
			{"token prefix", bearer(testOperatorToken[:10])},
			{"empty bearer", bearer("")},
			{"token as Basic password", basic{"operator", testOperatorToken}},
			{"company admin", c.Admin},
		} {
			r := e.do(call.method, call.path, tc.cred, call.body)
			if r.Status != 401 {
				t.Errorf("%s %s with %s: expected 401, got %d: %s", call.method, call.path, tc.name, r.Status, r.Body)
				continue
			}
			r.wantError(t, 401)
		}
	}
	// Nothing happened: settings, quota and datapoints are as before.
	res := e.do("GET", "/operator/projects/"+itoa(pid)+"/settings", opTok, nil).want(t, 200).resource(t)
	if res["setpoint_writing_enabled"] != false {
		t.Fatalf("an unauthenticated call changed settings: %v", res)
	}
	q := e.do("PUT", "/operator/projects/"+itoa(pid)+"/quota", opTok, nil).want(t, 200).resource(t)
	if num(t, q, "files") != 1000 {
		t.Fatalf("an unauthenticated call changed the quota: %v", q)
	}
	if dps := e.do("GET", "/v2/project/"+itoa(pid), c.Admin, nil).want(t, 200).JSON["datapoints"].([]any); len(dps) != 0 {
		t.Fatalf("an unauthenticated call created a datapoint: %v", dps)
	}
	if n := e.sqlFloat(`SELECT count(*) FROM mqtt_users`); n != 0 {
		t.Fatalf("an unauthenticated call made edge credentials")
	}
	// The scheme name is case-insensitive.
	r := e.do("GET", "/operator/projects/"+itoa(pid)+"/settings", rawHeader{"Authorization", "bearer " + testOperatorToken}, nil)
	r.want(t, 200)
}

func TestOperatorAPIDisabledWithoutToken(t *testing.T) {
	e := newTestEnv(t, func(c *Config) { c.OperatorToken = "" })
	for _, call := range operatorCalls(1, 1) {
		for _, c := range []cred{nil, bearer(""), bearer(testOperatorToken), bearer("anything")} {
			r := e.do(call.method, call.path, c, call.body).wantError(t, 403)
			if !strings.Contains(r.JSON["error"].(string), "disabled") {
				t.Fatalf("the error should say the operator API is disabled: %s", r.Body)
			}
		}
	}
	// The /v2 API works as usual.
	e.do("GET", "/v2/meta/endpoints", nil, nil).want(t, 200)
}

// GET /operator/cluster on one node: the node alone, counting the virtual
// datapoints it runs; only with the operator token.
func TestOperatorClusterOnOneNode(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	pid, _ := e.newProject(c.Admin)
	count := func() float64 {
		r := e.do("GET", "/operator/cluster", opTok, nil).want(t, 200)
		res, _ := r.JSON["resource"].(map[string]any)
		if res == nil {
			t.Fatalf("no resource: %s", r.Body)
		}
		members := res["members"].([]any)
		if res["mode"] != "single" || len(members) != 1 || members[0].(map[string]any)["self"] != true {
			t.Fatalf("one node: %s", r.Body)
		}
		return members[0].(map[string]any)["virtual_datapoints"].(float64)
	}
	if n := count(); n != 0 {
		t.Fatalf("%v virtual datapoints before any runs", n)
	}
	e.do("POST", vdpPath(pid, "", "dataPointID", "twice", "type", "formula"), c.Admin, formulaConfig("P1 x 2;", map[string]string{"P1": "a"})).want(t, 200)
	e.do("POST", vdpPath(pid, "/run", "dataPointID", "twice", "run", "true"), c.Admin, nil).want(t, 200)
	if n := count(); n != 1 {
		t.Fatalf("%v virtual datapoints running, want 1", n)
	}
	e.do("GET", "/operator/cluster", c.Admin, nil).wantError(t, 401)
}
