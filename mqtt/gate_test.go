package mqtt

import (
	"strconv"
	"testing"
)

// The Gate's decisions: the creator's datapoint access in the account's
// own project, write only with write rights, edge credentials unfiltered
// in their project, nothing for an account without a creator or outside
// its project or company.
func TestGateDecisions(t *testing.T) {
	e := newLiveEnv(t, liveEnvConfig{})
	tagged := Account{ProjectID: e.p1, CreatedBy: e.tagged, Write: true}
	taggedRead := Account{ProjectID: e.p1, CreatedBy: e.tagged}
	admin := Account{ProjectID: e.p1, CreatedBy: e.adminA, Write: true}
	edge := Account{ProjectID: e.p1, Edge: true}
	cases := []struct {
		name    string
		acct    Account
		project int64
		dp      string
		write   bool
		want    bool
	}{
		{"TagAuth read", tagged, e.p1, "room-1", false, true},
		{"TagAuth write", tagged, e.p1, "room-1", true, true},
		{"outside the TagAuths", tagged, e.p1, "office-1", false, false},
		{"read user may not write", taggedRead, e.p1, "room-1", true, false},
		{"read user reads", taggedRead, e.p1, "room-1", false, true},
		{"company role: every datapoint", admin, e.p1, "office-1", true, true},
		{"another project of the account's company", admin, e.p2, "office-1", false, false},
		{"a creator of another company", Account{ProjectID: e.q, CreatedBy: e.adminA}, e.q, "x", false, false},
		{"own company, own project", Account{ProjectID: e.q, CreatedBy: e.adminB}, e.q, "x", false, true},
		{"no creator", Account{ProjectID: e.p1, Write: true}, e.p1, "room-1", false, false},
		{"unknown creator", Account{ProjectID: e.p1, CreatedBy: 1 << 40}, e.p1, "room-1", false, false},
		{"edge in its project", edge, e.p1, "anything", true, true},
		{"edge elsewhere", edge, e.p2, "anything", false, false},
	}
	for _, c := range cases {
		if got := e.gate.Allowed(c.acct, c.project, c.dp, c.write); got != c.want {
			t.Errorf("%s: Allowed = %v, want %v", c.name, got, c.want)
		}
	}
	// MayRead judges datapoint topics and leaves other topics to the ACL.
	for topic, want := range map[string]bool{
		"project/" + itoa(e.p1) + "/datapoint/room-1":   true,
		"project/" + itoa(e.p1) + "/datapoint/office-1": false,
		"project/" + itoa(e.p1) + "/datapoint/+":        true, // a filter: the ACL decides
		"project/" + itoa(e.p1) + "/status":             true,
	} {
		if got := e.gate.MayRead(taggedRead, topic); got != want {
			t.Errorf("MayRead(%s) = %v, want %v", topic, got, want)
		}
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
