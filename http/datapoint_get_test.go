package http

import "testing"

// GET /v2/datapoint: a datapoint's setpoint bounds, to a caller who may
// read it.
func TestDatapointGetBounds(t *testing.T) {
	e, c, pid, _ := dpSetup(t)
	e.do("PUT", dpPath(pid, "valve"), c.Admin, map[string]any{"setpoint_min_value": -5, "setpoint_max_value": 40.5}).want(t, 200)
	role := rbCreateProjectRole(e, c.Admin, pid, []int32{e.endpointID("GET", "/v2/datapoint")}, rbTag("name", "valve", true, false))
	u, uid := e.newUser(c)
	rbAssignProjectRole(e, c.Admin, pid, role, uid)
	for _, tc := range []struct {
		name, dp string
		as       cred
		status   int
		min, max any
	}{
		{"bounds set", "valve", c.Admin, 200, -5.0, 40.5},
		{"no bounds", "damper", c.Admin, 200, nil, nil},
		{"read by TagAuth", "valve", u, 200, -5.0, 40.5},
		{"no read access", "other", u, 403, nil, nil},
		{"unknown", "nothing", c.Admin, 404, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do("GET", dpPath(pid, tc.dp), tc.as, nil).want(t, tc.status)
			if tc.status != 200 {
				if r.JSON["success"] != false || r.JSON["error"] == "" {
					t.Fatalf("not the error envelope: %s", r.Body)
				}
				return
			}
			if r.JSON["dataPointID"] != tc.dp || r.JSON["setpoint_min_value"] != tc.min || r.JSON["setpoint_max_value"] != tc.max {
				t.Fatalf("answer %s", r.Body)
			}
		})
	}
}
