package http

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// Changing, listing, reading and deleting MQTT users, and the operator's
// edge credentials.

func TestMQTTUserUpdate(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	pid, _ := e.newProject(c.Admin)
	created := e.do("POST", mqPath(pid), c.Admin, mqBody("gw", "validity", 60, "description", "first")).want(t, 201).resource(t)
	id := num(t, created, "id")
	path := mqUserPath(pid, id)
	firstUntil := mqValidUntil(t, created, 60)
	before, _ := e.mqRow("gw")

	// Description only: validity, rights and password stay.
	r := e.do("PUT", path, c.Admin, map[string]any{"description": "second"}).want(t, 201)
	res := adWantOp(t, r, "")
	if adStr(t, res, "description") != "second" || adStr(t, res, "username") != "gw" || !mqValidUntil(t, res, 60).Equal(firstUntil) {
		t.Fatalf("description update: %s", r.Body)
	}
	if row, _ := e.mqRow("gw"); row.Hash != before.Hash || row.Rights != "read" {
		t.Fatalf("a description update changed more: %+v", row)
	}

	// validity is counted from the update, password and rights change.
	r = e.do("PUT", path, c.Admin, map[string]any{"validity": 7200, "password": "new-mqtt-secret", "rights": "write"}).want(t, 201)
	res = adWantOp(t, r, "")
	mqValidUntil(t, res, 7200)
	if adStr(t, adList(t, res, "topics")[0], "rights") != "write" || strings.Contains(string(r.Body), "new-mqtt-secret") {
		t.Fatalf("update: %s", r.Body)
	}
	row, _ := e.mqRow("gw")
	if row.Hash == before.Hash || row.Rights != "write" || row.Description != "second" {
		t.Fatalf("stored after update: %+v", row)
	}
	if ok, _ := e.srv.hasher.Verify(context.Background(), "new-mqtt-secret", row.Hash); !ok {
		t.Fatal("the new password does not verify")
	}
	// An empty body changes nothing.
	e.do("PUT", path, c.Admin, nil).want(t, 201)
	if again, _ := e.mqRow("gw"); again.Hash != row.Hash || !again.ValidUntil.Equal(*row.ValidUntil) {
		t.Fatalf("an empty update changed the user: %+v", again)
	}

	for _, tc := range []struct {
		name   string
		path   string
		body   any
		status int
	}{
		{"rights other", path, map[string]any{"rights": "all"}, 400},
		{"validity zero", path, map[string]any{"validity": 0}, 400},
		{"validity over 7200", path, map[string]any{"validity": 7201}, 400},
		{"password short", path, map[string]any{"password": "short"}, 400},
		{"username is not changeable", path, map[string]any{"username": "renamed"}, 400},
		{"malformed JSON", path, []byte(`{"validity":`), 400},
		{"id not a number", fmt.Sprintf("/v2/project/%d/mqttuser/abc", pid), map[string]any{"description": "x"}, 400},
		{"unknown id", mqUserPath(pid, id+1000), map[string]any{"description": "x"}, 404},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do("PUT", tc.path, c.Admin, tc.body).wantError(t, tc.status)
			if r.JSON["operation"] != "" {
				t.Fatalf("operation %v", r.JSON["operation"])
			}
			if now, _ := e.mqRow("gw"); now.Hash != row.Hash || now.Rights != row.Rights || !now.ValidUntil.Equal(*row.ValidUntil) {
				t.Fatalf("a refused update changed the user: %+v", now)
			}
		})
	}

	// Someone else with the grant and a TagAuth may not take over a user
	// bounded by another creator's access; nor raise rights beyond their own.
	narrow, narrowID := e.newUser(c)
	rbAssignProjectRole(e, c.Admin, pid, rbCreateProjectRole(e, c.Admin, pid, []int32{0}, rbTag("name", "a*", true, false)), narrowID)
	r = e.do("PUT", path, narrow, map[string]any{"password": "taken-over-1"}).wantError(t, 403)
	if !strings.Contains(r.JSON["error"].(string), "created by another user") {
		t.Fatalf("error: %s", r.Body)
	}
	own := num(t, e.do("POST", mqPath(pid), narrow, mqBody("narrow-gw")).want(t, 201).resource(t), "id")
	e.do("PUT", mqUserPath(pid, own), narrow, map[string]any{"rights": "write"}).wantError(t, 403)
	e.do("PUT", mqUserPath(pid, own), narrow, map[string]any{"description": "mine"}).want(t, 201)
	// A company role holder may change any.
	e.do("PUT", mqUserPath(pid, own), c.Admin, map[string]any{"description": "admin's"}).want(t, 201)
}

func TestMQTTUserListGetDelete(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	pid, _ := e.newProject(c.Admin)
	otherPID, _ := e.newProject(c.Admin)
	a := num(t, e.do("POST", mqPath(pid), c.Admin, mqBody("list-a")).want(t, 201).resource(t), "id")
	b := num(t, e.do("POST", mqPath(pid), c.Admin, mqBody("list-b", "rights", "write")).want(t, 201).resource(t), "id")
	expired := num(t, e.do("POST", mqPath(pid), c.Admin, mqBody("list-expired")).want(t, 201).resource(t), "id")
	e.do("POST", mqPath(otherPID), c.Admin, mqBody("list-other")).want(t, 201)
	edge := e.do("POST", fmt.Sprintf("/operator/projects/%d/edge", pid), opTok, nil).want(t, 201)
	edgeID := int64(e.sqlFloat(`SELECT id FROM mqtt_users WHERE edge`))
	// Past valid_until, a row is gone for the API even before its removal.
	e.sqlFloat(`WITH u AS (UPDATE mqtt_users SET valid_until = now() - interval '1 second' WHERE id = $1 RETURNING 1) SELECT count(*) FROM u`, expired)

	list := e.do("GET", fmt.Sprintf("/v2/project/%d/mqttusers", pid), c.Admin, nil).want(t, 200)
	items := adList(t, list.List, "")
	if ids := adIDs(t, items); !adSameInts(ids, []int64{a, b}) {
		t.Fatalf("listed %v, want %v (no edge credentials, no expired user, no other project): %s", ids, []int64{a, b}, list.Body)
	}
	if adStr(t, items[1], "username") != "list-b" || adStr(t, adList(t, items[1], "topics")[0], "rights") != "write" {
		t.Fatalf("list item: %s", list.Body)
	}
	got := e.do("GET", mqUserPath(pid, a), c.Admin, nil).want(t, 200)
	if num(t, got.JSON, "id") != a || adStr(t, got.JSON, "username") != "list-a" {
		t.Fatalf("get: %s", got.Body)
	}
	for _, id := range []int64{edgeID, expired, a + 1000} {
		e.do("GET", mqUserPath(pid, id), c.Admin, nil).wantError(t, 404)
		e.do("PUT", mqUserPath(pid, id), c.Admin, map[string]any{"description": "x"}).wantError(t, 404)
		e.do("DELETE", mqUserPath(pid, id), c.Admin, nil).wantError(t, 404)
	}
	e.do("GET", mqUserPath(otherPID, a), c.Admin, nil).wantError(t, 404)

	del := e.do("DELETE", mqUserPath(pid, a), c.Admin, nil).want(t, 200)
	if res := adWantOp(t, del, "delete"); num(t, res, "id") != a {
		t.Fatalf("delete: %s", del.Body)
	}
	if _, found := e.mqRow("list-a"); found {
		t.Fatal("the deleted user is still stored")
	}
	e.do("GET", mqUserPath(pid, a), c.Admin, nil).wantError(t, 404)
	e.do("DELETE", mqUserPath(pid, a), c.Admin, nil).wantError(t, 404)
	if _, found := e.mqRow(fmt.Sprintf("edge-%d", pid)); !found {
		t.Fatal("the edge credentials went with the deletes")
	}
	for _, body := range [][]byte{list.Body, got.Body, del.Body, edge.Body} {
		if strings.Contains(string(body), "mqtt-secret-1") || strings.Contains(string(body), "argon2") {
			t.Fatalf("an answer carries a password or hash: %s", body)
		}
	}
}

// Another company's admin reaches none of the routes for the project.
func TestMQTTUserCrossCompany(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	pid, _ := e.newProject(c.Admin)
	id := num(t, e.do("POST", mqPath(pid), c.Admin, mqBody("mine")).want(t, 201).resource(t), "id")
	stranger := e.newCompany()
	for _, call := range []struct {
		method, path string
		body         any
	}{
		{"POST", mqPath(pid), mqBody("theirs")},
		{"PUT", mqUserPath(pid, id), map[string]any{"password": "stolen-password"}},
		{"GET", mqUserPath(pid, id), nil},
		{"DELETE", mqUserPath(pid, id), nil},
		{"GET", fmt.Sprintf("/v2/project/%d/mqttusers", pid), nil},
	} {
		r := e.do(call.method, call.path, stranger.Admin, call.body).wantError(t, 403)
		if strings.Contains(string(r.Body), "mine") {
			t.Fatalf("%s %s leaks: %s", call.method, call.path, r.Body)
		}
	}
	if _, found := e.mqRow("theirs"); found {
		t.Fatal("created in another company's project")
	}
	if row, found := e.mqRow("mine"); !found || row.CreatedBy == nil || *row.CreatedBy != c.AdminID {
		t.Fatalf("changed from another company: %+v", row)
	}
}

func TestOperatorEdgeCredentials(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	pid, _ := e.newProject(c.Admin)
	path := fmt.Sprintf("/operator/projects/%d/edge", pid)
	username := fmt.Sprintf("edge-%d", pid)

	first := adWantOp(t, e.do("POST", path, opTok, nil).want(t, 201), "create")
	pw1 := adStr(t, first, "password")
	if adStr(t, first, "username") != username || adStr(t, first, "topic_prefix") != fmt.Sprintf("edge/%d/", pid) || len(pw1) < 24 {
		t.Fatalf("edge credentials: %v", first)
	}
	row1, _ := e.mqRow(username)
	if !row1.Edge || row1.ValidUntil != nil || row1.CreatedBy != nil {
		t.Fatalf("stored edge row %+v", row1)
	}
	id1 := e.sqlFloat(`SELECT id FROM mqtt_users WHERE username = $1`, username)
	ctx := context.Background()
	if ok, _ := e.srv.hasher.Verify(ctx, pw1, row1.Hash); !ok {
		t.Fatal("the stored hash does not verify the answered password")
	}

	// Again: the same row with a new password; the old one stops working.
	second := adWantOp(t, e.do("POST", path, opTok, nil).want(t, 201), "create")
	pw2 := adStr(t, second, "password")
	row2, _ := e.mqRow(username)
	if pw2 == pw1 || row2.Hash == row1.Hash || e.sqlFloat(`SELECT id FROM mqtt_users WHERE username = $1`, username) != id1 {
		t.Fatalf("rotation: same password %v, same hash %v", pw2 == pw1, row2.Hash == row1.Hash)
	}
	if ok, _ := e.srv.hasher.Verify(ctx, pw1, row2.Hash); ok {
		t.Fatal("the old password still verifies after rotation")
	}
	if ok, _ := e.srv.hasher.Verify(ctx, pw2, row2.Hash); !ok {
		t.Fatal("the new password does not verify")
	}
	if n := e.sqlFloat(`SELECT count(*) FROM mqtt_users WHERE project_id = $1`, pid); n != 1 {
		t.Fatalf("%v rows of edge credentials", n)
	}

	e.do("POST", fmt.Sprintf("/operator/projects/%d/edge", pid+1000), opTok, nil).wantError(t, 404)
	e.do("POST", "/operator/projects/abc/edge", opTok, nil).wantError(t, 400)
	e.do("POST", path, c.Admin, nil).wantError(t, 401)
	if row3, _ := e.mqRow(username); row3.Hash != row2.Hash {
		t.Fatal("a refused call rotated the password")
	}
	// Deleting the project takes the credentials along.
	e.do("DELETE", fmt.Sprintf("/v2/project/%d", pid), c.Admin, nil).want(t, 200)
	if _, found := e.mqRow(username); found {
		t.Fatal("edge credentials outlived their project")
	}
}
