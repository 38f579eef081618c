package http

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// The safeguards of POST /v2/datapoint/setpoint, in api.md's order, with
// api.md 7's texts and operations; bad input answers 400; nothing of it
// reaches the device or stores an operation.
func TestSetpointWriteRefusals(t *testing.T) {
	e := newSetpointEnv(t)
	c := e.newCompany()
	pid := e.writableProject(c)
	disabled, _ := e.newProject(c.Admin)
	e.do("PUT", fmt.Sprintf("/operator/projects/%d/datapoints/sp/tags", disabled), bearer(testOperatorToken),
		[]map[string]any{{"key": "units", "value": "degC"}}).want(t, 200)
	// A user who may call the endpoint but only read the datapoints.
	reader, readerID := e.newUser(c)
	role := rbCreateProjectRole(e.testEnv, c.Admin, pid, []int32{e.endpointID("POST", "/v2/datapoint/setpoint")}, rbTag("units", "degC", true, false))
	rbAssignProjectRole(e.testEnv, c.Admin, pid, role, readerID)
	// Another company's admin.
	other := e.newCompany()

	for _, tc := range []struct {
		name   string
		as     cred
		path   string
		status int
		op     string
		text   string
	}{
		{"writing not enabled", c.Admin, setpointPath(disabled, "sp", "value", "20"), 403, "post", fmt.Sprintf("project %d is unknown or setpoint writing is not enabled", disabled)},
		{"another company's project", other.Admin, setpointPath(pid, "sp", "value", "20"), 403, "create", "unauthorized access to project"},
		{"no write access by TagAuth", reader, setpointPath(pid, "sp", "value", "20"), 403, "create", `no write access to datapoint "sp"`},
		{"no bounds", c.Admin, setpointPath(pid, "unbounded", "value", "20"), 400, "create", `datapoint "unbounded" has no setpoint bounds`},
		{"above bounds", c.Admin, setpointPath(pid, "sp", "value", "25.5"), 400, "create", `value 25.5 for datapoint "sp" lies outside its setpoint bounds [15, 25]`},
		{"below bounds", c.Admin, setpointPath(pid, "sp", "value", "14"), 400, "create", "[15, 25]"},
		{"priority above the project's maximum", c.Admin, setpointPath(pid, "sp", "value", "20", "priority", "5"), 400, "create", "priority 5 is refused: project"},
		{"priority 0", c.Admin, setpointPath(pid, "sp", "value", "20", "priority", "0"), 400, "create", "from 1 (most urgent) to 16"},
		{"priority 17", c.Admin, setpointPath(pid, "sp", "value", "20", "priority", "17"), 400, "create", `got "17"`},
		{"priority not a number", c.Admin, setpointPath(pid, "sp", "value", "20", "priority", "high"), 400, "create", "priority must be an integer"},
		{"value NaN", c.Admin, setpointPath(pid, "sp", "value", "NaN"), 400, "create", "finite number or the string null"},
		{"value infinite", c.Admin, setpointPath(pid, "sp", "value", "+Inf"), 400, "create", "finite number"},
		{"value hexadecimal", c.Admin, setpointPath(pid, "sp", "value", "0x10"), 400, "create", `got "0x10"`},
		{"value overflowing", c.Admin, setpointPath(pid, "sp", "value", "1e400"), 400, "create", "finite number"},
		{"value not a number", c.Admin, setpointPath(pid, "sp", "value", "warm"), 400, "create", `got "warm"`},
		{"value missing", c.Admin, setpointPath(pid, "sp"), 400, "create", "value is required"},
		{"acked not a boolean", c.Admin, setpointPath(pid, "sp", "value", "20", "acked", "maybe"), 400, "create", "acked must be true or false"},
		{"huge value not echoed", c.Admin, setpointPath(pid, "sp", "value", strings.Repeat("9x", 3000)), 400, "create", "value must be"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do("POST", tc.path, tc.as, nil).wantError(t, tc.status)
			msg, _ := r.JSON["error"].(string)
			if !strings.Contains(msg, tc.text) || r.JSON["operation"] != tc.op {
				t.Fatalf("error %q operation %v, want %q with operation %q", msg, r.JSON["operation"], tc.text, tc.op)
			}
			if len(r.Body) > 1000 {
				t.Fatalf("answer of %d bytes echoes the input", len(r.Body))
			}
		})
	}
	if n := e.sqlFloat(`SELECT count(*) FROM setpoint_operations`); n != 0 {
		t.Fatalf("%v operations stored for refused writes", n)
	}
}

// An acked write answers at once with its reference; GET follows it to
// written with the log api.md 2.12 shows; the simulated device's priority
// array holds the value, a more urgent one masks it, null clears it.
func TestAckedSetpointWrittenAndReadBack(t *testing.T) {
	e := newSetpointEnv(t)
	c := e.newCompany()
	pid := e.writableProject(c)

	res := e.do("POST", setpointPath(pid, "sp", "value", "21.5", "acked", "true", "keep_out_of_service", "true"), c.Admin, nil).want(t, 200)
	if res.JSON["operation"] != "create" {
		t.Fatalf("operation %v, want create", res.JSON["operation"])
	}
	r := res.resource(t)
	ref, _ := r["reference"].(string)
	if !regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`).MatchString(ref) ||
		r["acked"] != true || r["dryrun"] != false || r["priority"] != 13.0 || r["value"] != 21.5 || r["project_id"] != float64(pid) || r["dataPointID"] != "sp" {
		t.Fatalf("resource %v", r)
	}
	op := e.setpointOperation(c.Admin, ref, "written")
	var log []map[string]any
	if err := json.Unmarshal([]byte(op["log"].(string)), &log); err != nil {
		t.Fatalf("log is not a JSON-formatted list: %v", op["log"])
	}
	micro := regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$`)
	var stages []string
	for _, l := range log {
		stages = append(stages, l["status"].(string))
		if !micro.MatchString(l["time"].(string)) || l["msg"] == "" {
			t.Errorf("log entry %v: time not ISO 8601 with microseconds in UTC, or no msg", l)
		}
	}
	if strings.Join(stages, ",") != "initialized,requested,written" || log[0]["acked"] != true || log[0]["dryrun"] != false {
		t.Fatalf("log %v", log)
	}
	pa, _ := log[2]["priorityArray"].(string)
	var slots []*float64
	if err := json.Unmarshal([]byte(pa), &slots); err != nil || len(slots) != 17 || slots[16] == nil || *slots[16] != 18 || slots[12] != nil {
		t.Fatalf("priorityArray %q, want 17 slots with the relinquish default 18", pa)
	}
	if _, ok := log[2]["overwritten_value"]; !ok || op["old_value"] != "null" || op["keep_out_of_service"] != true {
		t.Fatalf("written entry %v, operation %v", log[2], op)
	}

	// Overwriting the slot reports the old value; a more urgent value
	// masks it; a dry run shows the array and changes nothing.
	ref = e.do("POST", setpointPath(pid, "sp", "value", "22", "acked", "true"), c.Admin, nil).want(t, 200).resource(t)["reference"].(string)
	if op := e.setpointOperation(c.Admin, ref, "written"); op["old_value"] != "21.5" {
		t.Fatalf("old_value %v, want 21.5", op["old_value"])
	}
	e.do("POST", setpointPath(pid, "sp", "value", "16", "priority", "9"), c.Admin, nil).want(t, 200)
	var dry map[string]any
	e.waitFor("the priority-9 write at the device", func() bool {
		dry = e.do("POST", setpointPath(pid, "sp", "value", "24", "dryrun", "true"), c.Admin, nil).want(t, 200).resource(t)
		arr, _ := dry["priority_array"].([]any)
		return len(arr) == 17 && arr[8] == 16.0
	})
	if arr := dry["priority_array"].([]any); arr[12] != 22.0 || dry["old_value"] != 22.0 {
		t.Fatalf("dry run %v, want slot 13 = 22 and old_value 22", dry)
	}
	again := e.do("POST", setpointPath(pid, "sp", "value", "24", "dryrun", "true"), c.Admin, nil).want(t, 200).resource(t)
	if fmt.Sprint(again["priority_array"]) != fmt.Sprint(dry["priority_array"]) {
		t.Fatal("a dry run changed the priority array")
	}
	// An acked dry run ends in reported: its status and log say that
	// nothing was written (api.md 4.6 rule 6).
	ref = e.do("POST", setpointPath(pid, "sp", "value", "24", "dryrun", "true", "acked", "true"), c.Admin, nil).want(t, 200).resource(t)["reference"].(string)
	if op := e.setpointOperation(c.Admin, ref, "reported"); op["old_value"] != "22" || strings.Contains(op["log"].(string), `"status":"written"`) ||
		!strings.Contains(op["log"].(string), "nothing was written") {
		t.Fatalf("acked dry run: %v", op)
	}
	// null clears the slot.
	ref = e.do("POST", setpointPath(pid, "sp", "value", "null", "priority", "9", "acked", "true"), c.Admin, nil).want(t, 200).resource(t)["reference"].(string)
	if op := e.setpointOperation(c.Admin, ref, "written"); op["value"] != "null" || op["old_value"] != "16" {
		t.Fatalf("clear: %v", op)
	}
	// The device reports its present value (22 again) on data: stored.
	e.waitFor("the present value in the timeseries", func() bool {
		return e.sqlFloat(`SELECT count(*) FROM observations o JOIN datapoints d ON d.id = o.datapoint
			WHERE d.project_id = $1 AND d.datapoint_id = 'sp' AND o.value = 22`, pid) > 0
	})
	st := e.do("GET", fmt.Sprintf("/v2/project/%d/edge", pid), c.Admin, nil).want(t, 200)
	if st.JSON["configured"] != true || st.JSON["online"] != true || st.JSON["last_alive"] == nil {
		t.Fatalf("edge status %s", st.Body)
	}
}

// GET /v2/datapoint/setpoint/{reference} answers only callers who may
// read the operation's datapoint in its project.
func TestSetpointOperationAccess(t *testing.T) {
	e := newSetpointEnv(t)
	c := e.newCompany()
	pid := e.writableProject(c)
	ref := e.do("POST", setpointPath(pid, "sp", "value", "20", "acked", "true"), c.Admin, nil).want(t, 200).resource(t)["reference"].(string)
	get := e.endpointID("GET", "/v2/datapoint/setpoint/{reference}")

	reader, readerID := e.newUser(c)
	rbAssignProjectRole(e.testEnv, c.Admin, pid, rbCreateProjectRole(e.testEnv, c.Admin, pid, []int32{get}, rbTag("units", "degC", true, false)), readerID)
	blind, blindID := e.newUser(c)
	rbAssignProjectRole(e.testEnv, c.Admin, pid, rbCreateProjectRole(e.testEnv, c.Admin, pid, []int32{get}, rbTag("units", "other", true, true)), blindID)
	// A user granted the endpoint in another project only.
	elsewhere, elsewhereID := e.newUser(c)
	pid2, _ := e.newProject(c.Admin)
	rbAssignProjectRole(e.testEnv, c.Admin, pid2, rbCreateProjectRole(e.testEnv, c.Admin, pid2, []int32{get}, rbTag("units", "degC", true, false)), elsewhereID)
	other := e.newCompany()

	path := "/v2/datapoint/setpoint/" + ref
	e.do("GET", path, reader, nil).want(t, 200)
	e.do("GET", path, blind, nil).wantError(t, 403)
	rbDenied(t, e.do("GET", path, elsewhere, nil), get, "GET", "/v2/datapoint/setpoint/{reference}")
	e.do("GET", path, other.Admin, nil).wantError(t, 404)
	e.do("GET", "/v2/datapoint/setpoint/0b8f6a0e-9a57-4b44-8a0c-2f6a35c7b001", c.Admin, nil).wantError(t, 404)
	e.do("GET", "/v2/datapoint/setpoint/not-a-uuid", c.Admin, nil).wantError(t, 404)

	// An unacked write keeps nothing to look up.
	r := e.do("POST", setpointPath(pid, "sp", "value", "20"), c.Admin, nil).want(t, 200).resource(t)
	if _, has := r["reference"]; has {
		t.Fatalf("unacked write answered a reference: %v", r)
	}
}

// setpointOperation polls GET /v2/datapoint/setpoint/{reference} until
// the operation reaches state.
func (e *setpointEnv) setpointOperation(as cred, ref, state string) map[string]any {
	e.t.Helper()
	var op map[string]any
	e.waitFor("operation "+ref+" "+state, func() bool {
		op = e.do("GET", "/v2/datapoint/setpoint/"+ref, as, nil).want(e.t, 200).JSON
		if op["status"] == "failed" {
			e.t.Fatalf("operation failed: %v", op)
		}
		return op["status"] == state
	})
	return op
}
