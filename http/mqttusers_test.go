package http

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// MQTT users over HTTP (api.md 2.8, 3.5, 4.4; decisions.md 3 and 6),
// against the real server and PostgreSQL.

func mqPath(pid int64) string { return fmt.Sprintf("/v2/project/%d/mqttuser", pid) }

func mqUserPath(pid, id int64) string { return fmt.Sprintf("/v2/project/%d/mqttuser/%d", pid, id) }

func mqBody(username string, kv ...any) map[string]any {
	b := map[string]any{"username": username, "password": "mqtt-secret-1"}
	for i := 0; i+1 < len(kv); i += 2 {
		b[kv[i].(string)] = kv[i+1]
	}
	return b
}

// mqRow is what the database holds of an MQTT user.
type mqRow struct {
	Hash, Rights, Description string
	ValidUntil                *time.Time
	CreatedBy                 *int64
	Edge                      bool
}

func (e *testEnv) mqRow(username string) (mqRow, bool) {
	e.t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, e.dbURL)
	if err != nil {
		e.t.Fatal(err)
	}
	defer conn.Close(ctx)
	var r mqRow
	err = conn.QueryRow(ctx, `SELECT password_hash, rights, description, valid_until, created_by, edge FROM mqtt_users WHERE username = $1`,
		username).Scan(&r.Hash, &r.Rights, &r.Description, &r.ValidUntil, &r.CreatedBy, &r.Edge)
	if err == pgx.ErrNoRows {
		return r, false
	}
	if err != nil {
		e.t.Fatal(err)
	}
	return r, true
}

func (e *testEnv) mqCount() int64 {
	e.t.Helper()
	return int64(e.sqlFloat(`SELECT count(*) FROM mqtt_users`))
}

// mqValidUntil parses valid_until and checks it is about seconds from now.
func mqValidUntil(t *testing.T, res map[string]any, seconds int) time.Time {
	t.Helper()
	raw := adStr(t, res, "valid_until")
	at, err := time.Parse(time.RFC3339, raw)
	if err != nil || !strings.HasSuffix(raw, "Z") {
		t.Fatalf("valid_until %q is not ISO 8601 UTC: %v", raw, err)
	}
	want := time.Now().Add(time.Duration(seconds) * time.Second)
	if at.Before(want.Add(-5*time.Second)) || at.After(want.Add(5*time.Second)) {
		t.Fatalf("valid_until %s, want about %s (%d s from now)", at, want.UTC(), seconds)
	}
	return at
}

func TestMQTTUserCreate(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	pid, _ := e.newProject(c.Admin)
	for _, tc := range []struct {
		name     string
		body     map[string]any
		rights   string
		validity int
	}{
		{"defaults", mqBody("gw-default"), "read", 3600},
		{"write at the longest validity", mqBody("gw-write", "rights", "write", "validity", 7200, "description", " roof gateway "), "write", 7200},
		{"one second", mqBody("gw-short", "rights", "read", "validity", 1), "read", 1},
		{"64 bytes, not ASCII", mqBody(strings.Repeat("é", 32)), "read", 3600},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do("POST", mqPath(pid), c.Admin, tc.body).want(t, 201)
			res := adWantOp(t, r, "create")
			name := tc.body["username"].(string)
			if num(t, res, "id") <= 0 || adStr(t, res, "username") != name {
				t.Fatalf("wrong user: %s", r.Body)
			}
			topics := adList(t, res, "topics")
			if len(topics) != 1 || adStr(t, topics[0], "topic") != fmt.Sprintf("project/%d/#", pid) ||
				adStr(t, topics[0], "rights") != tc.rights || num(t, topics[0], "id") <= 0 {
				t.Fatalf("topics: %s", r.Body)
			}
			mqValidUntil(t, res, tc.validity)
			if strings.Contains(string(r.Body), "mqtt-secret-1") || strings.Contains(string(r.Body), "password") ||
				strings.Contains(string(r.Body), "argon") {
				t.Fatalf("the answer carries the password or its hash: %s", r.Body)
			}
			row, found := e.mqRow(name)
			if !found || !strings.HasPrefix(row.Hash, "$argon2id$") || row.Rights != tc.rights || row.Edge ||
				row.CreatedBy == nil || *row.CreatedBy != c.AdminID {
				t.Fatalf("stored row %+v (found %v)", row, found)
			}
			if ok, err := e.srv.hasher.Verify(context.Background(), "mqtt-secret-1", row.Hash); err != nil || !ok {
				t.Fatalf("the stored hash does not verify the password: %v %v", ok, err)
			}
		})
	}
	if row, _ := e.mqRow("gw-write"); row.Description != "roof gateway" {
		t.Fatalf("description %q", row.Description)
	}
}

// Every bad input of issue 9 answers 400 with the envelope and creates
// nothing; a taken username answers 409.
func TestMQTTUserCreateRejects(t *testing.T) {
	e := newTestEnv(t, func(c *Config) { c.MQTTAdminUser = "bdp-broker-admin" })
	c := e.newCompany()
	pid, _ := e.newProject(c.Admin)
	other := e.newCompany()
	otherPID, _ := e.newProject(other.Admin)
	e.do("POST", mqPath(otherPID), other.Admin, mqBody("taken")).want(t, 201)
	before := e.mqCount()
	for _, tc := range []struct {
		name   string
		body   any
		status int
	}{
		{"rights admin", mqBody("a1", "rights", "admin"), 400},
		{"rights empty", mqBody("a2", "rights", ""), 400},
		{"rights upper case", mqBody("a3", "rights", "READ"), 400},
		{"rights not a string", mqBody("a4", "rights", true), 400},
		{"validity zero", mqBody("a5", "validity", 0), 400},
		{"validity negative", mqBody("a6", "validity", -5), 400},
		{"validity over 7200", mqBody("a7", "validity", 7201), 400},
		{"validity huge", []byte(`{"username":"a8","password":"mqtt-secret-1","validity":1e30}`), 400},
		{"validity fractional", mqBody("a9", "validity", 1.5), 400},
		{"validity a string", mqBody("a10", "validity", "60"), 400},
		{"username missing", map[string]any{"password": "mqtt-secret-1"}, 400},
		{"username empty", mqBody(""), 400},
		{"username blank", mqBody("   "), 400},
		{"username 65 bytes", mqBody(strings.Repeat("u", 65)), 400},
		{"username 66 bytes in 33 characters", mqBody(strings.Repeat("é", 33)), 400},
		{"username with a control character", mqBody("gw\x01"), 400},
		{"username with a tab", mqBody("gw\t1"), 400},
		{"username with NUL", mqBody("gw\x00"), 400},
		{"username of edge credentials", mqBody("edge-1"), 400},
		{"username of this project's edge credentials", mqBody(fmt.Sprintf("edge-%d", pid)), 400},
		{"username of the broker admin", mqBody("bdp-broker-admin"), 400},
		{"username not a string", map[string]any{"username": 5, "password": "mqtt-secret-1"}, 400},
		{"password missing", map[string]any{"username": "a11"}, 400},
		{"password short", map[string]any{"username": "a12", "password": "1234567"}, 400},
		{"password short in characters", map[string]any{"username": "a13", "password": "ééééééé"}, 400},
		{"description too long", mqBody("a14", "description", strings.Repeat("d", 2001)), 400},
		{"malformed JSON", []byte(`{"username": "a15", "password": `), 400},
		{"an array", []byte(`[{"username": "a16", "password": "mqtt-secret-1"}]`), 400},
		{"taken in another company", mqBody("taken"), 409},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do("POST", mqPath(pid), c.Admin, tc.body).wantError(t, tc.status)
			if r.JSON["operation"] != "create" {
				t.Fatalf("operation %v: %s", r.JSON["operation"], r.Body)
			}
			if len(r.Body) > 1024 {
				t.Fatalf("the error echoes too much: %d bytes", len(r.Body))
			}
			if n := e.mqCount(); n != before {
				t.Fatalf("a refused request changed the MQTT users: %d, was %d", n, before)
			}
		})
	}
	// The taken name kept its project and password.
	if row, _ := e.mqRow("taken"); row.CreatedBy == nil || *row.CreatedBy != other.AdminID {
		t.Fatalf("the duplicate changed the existing user: %+v", row)
	}
}

// Creating needs the endpoint grant in the project, and the rights asked
// for through some TagAuth of the caller (or a company role).
func TestMQTTUserCreateNeedsGrantAndTagAuth(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	pid, _ := e.newProject(c.Admin)
	otherPID, _ := e.newProject(c.Admin)
	post := e.endpointID("POST", "/v2/project/{project_id}/mqttuser")

	noRole, _ := e.newUser(c)
	readTags, readTagsID := e.newUser(c)
	rbAssignProjectRole(e, c.Admin, pid, rbCreateProjectRole(e, c.Admin, pid, []int32{0}, rbTag("name", "sensor*", true, false)), readTagsID)
	writeTags, writeTagsID := e.newUser(c)
	rbAssignProjectRole(e, c.Admin, pid, rbCreateProjectRole(e, c.Admin, pid, []int32{0}, rbTag("name", "valve*", false, true)), writeTagsID)
	noTags, noTagsID := e.newUser(c)
	rbAssignProjectRole(e, c.Admin, pid, rbCreateProjectRole(e, c.Admin, pid, []int32{0}, rbTag("name", "*", false, false)), noTagsID)
	noGrant, noGrantID := e.newUser(c)
	rbAssignProjectRole(e, c.Admin, pid, rbCreateProjectRole(e, c.Admin, pid, []int32{e.endpointID("GET", "/v2/project/{project_id}")},
		rbTag("name", "*", true, true)), noGrantID)
	stranger := e.newCompany()

	for _, tc := range []struct {
		name   string
		as     cred
		pid    int64
		rights string
		status int
		says   string
	}{
		{"no role", noRole, pid, "read", 403, "unauthorized access"},
		{"role without the endpoint", noGrant, pid, "read", 403, fmt.Sprintf("endpoint %d", post)},
		{"another project", readTags, otherPID, "read", 403, "unauthorized access"},
		{"another company's admin", stranger.Admin, pid, "read", 403, "unauthorized access to project"},
		{"a project that does not exist", c.Admin, pid + 1000, "read", 403, "unauthorized access to project"},
		{"TagAuths granting nothing, read", noTags, pid, "read", 403, "never sees more than its creator"},
		{"TagAuths granting nothing, write", noTags, pid, "write", 403, "never sees more than its creator"},
		{"read TagAuth, write asked", readTags, pid, "write", 403, "write access"},
		{"write TagAuth, read asked", writeTags, pid, "read", 403, "read access"},
		{"read TagAuth, read asked", readTags, pid, "read", 201, ""},
		{"write TagAuth, write asked", writeTags, pid, "write", 201, ""},
		{"company role, write asked", c.Admin, pid, "write", 201, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := uniq("gw")
			r := e.do("POST", mqPath(tc.pid), tc.as, mqBody(name, "rights", tc.rights))
			if tc.status != 201 {
				r.wantError(t, tc.status)
				if msg, _ := r.JSON["error"].(string); !strings.Contains(msg, tc.says) {
					t.Fatalf("error %q should say %q", msg, tc.says)
				}
				if _, found := e.mqRow(name); found {
					t.Fatalf("a refused request created %s", name)
				}
				return
			}
			r.want(t, 201)
		})
	}
}

// The route's OpenAPI description carries what a client must know.
func TestMQTTUserOpenAPIDocumentsTheRules(t *testing.T) {
	e := newTestEnv(t)
	r := e.do("GET", "/v2/openapi.json", nil, nil).want(t, 200)
	post := adAt(t, r.JSON, "paths./v2/project/{project_id}/mqttuser.post").(map[string]any)
	desc := adStr(t, post, "description")
	for _, want := range []string{"default 3600", "1 to 7200", "1 to 64 bytes", "at least 8 characters", "409",
		"never sees more than its creator", "evaluated at delivery time", "when the creator loses a grant, so does the MQTT user",
		"project/{project_id}/datapoint/{dataPointID}", "%2F", "%00", `{"time": RFC 3339, "value": number}`, "an array",
		"BDP_MQTT_ADDR", "BDP_MQTT_WS_ADDR", "within 1 s", "row is removed", "reserved",
		"Influx line protocol", "measurement must be the topic's dataPointID", "0x99", "BDP_MQTT_TLS_ADDR", "BDP_MQTT_WSS_ADDR", "BDP_TLS_CERT"} {
		if !strings.Contains(desc, want) {
			t.Errorf("the description of POST .../mqttuser lacks %q", want)
		}
	}
	if st := adAt(t, post, "responses").(map[string]any); st["201"] == nil || st["409"] == nil || st["403"] == nil {
		t.Errorf("statuses: %v", st)
	}
	for _, p := range []string{"/v2/project/{project_id}/mqttusers", "/v2/project/{project_id}/mqttuser/{mqttuser_id}"} {
		if adAt(t, r.JSON, "paths."+p) == nil {
			t.Errorf("%s is not documented", p)
		}
	}
}
