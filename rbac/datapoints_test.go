package rbac

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openbdp/bdp/store"
)

func TestGlobMatch(t *testing.T) {
	tests := []struct {
		pattern, s string
		want       bool
	}{
		{"", "", true},
		{"", "a", false},
		{"a", "", false},
		{"abc", "abc", true},
		{"abc", "abd", false},
		{"abc", "ab", false},
		{"abc", "abcd", false},
		{"ABC", "abc", false},
		{"*", "", true},
		{"*", "anything at all", true},
		{"**", "", true},
		{"**", "x", true},
		{"sensor*", "sensor", true},
		{"sensor*", "sensor1", true},
		{"sensor*", "sensor/floor/1", true},
		{"sensor*", "sensoR1", false},
		{"sensor*", "my-sensor1", false},
		{"*temp", "temp", true},
		{"*temp", "room-temp", true},
		{"*temp", "room-temp2", false},
		{"*temp", "emp", false},
		{"a*b*c", "abc", true},
		{"a*b*c", "aXXbYYc", true},
		{"a*b*c", "abcbc", true},
		{"a*b*c", "acb", false},
		{"a*b*c", "abcd", false},
		{"a*b*c", "ab", false},
		{"*a*", "bab", true},
		{"*a*", "bbb", false},
		{"a*a", "a", false},
		{"a*a", "aa", true},
		{"a*ab", "aaab", true},
		{"a*ab", "aaba", false},
		{"*.*", "x.y", true},
		{"*.*", "xy", false},
		{"?", "?", true}, // ? is a plain character
		{"?", "a", false},
		{"b*", "*", false},
		{"*", "*", true},
		{"bâtiment*", "bâtiment-1", true},
	}
	for _, tt := range tests {
		if got := globMatch(tt.pattern, tt.s); got != tt.want {
			t.Errorf("globMatch(%q, %q) = %v, want %v", tt.pattern, tt.s, got, tt.want)
		}
	}
}

// Patterns with many stars on long inputs are the classic trap for
// backtracking matchers: a naive one takes exponential time here.
func TestGlobMatchPathological(t *testing.T) {
	long := strings.Repeat("a", 20000)
	tests := []struct {
		pattern, s string
		want       bool
	}{
		{"a*a*a*a*b", long, false},
		{"a*a*a*a*a*a*a*a*a*a*a*a*b", long, false},
		{"*a*a*a*a*a*a*a*a*a*a*a*a*a*b*", long, false},
		{"a*a*a*a*b", long + "b", true},
		{"a*a*a*a*a*a*a*a*a*a*a*a*b", long[:10000] + "b" + long[:10000], false},
		{"*a*a*a*a*a*a*a*a*a*a*a*a*a*b*", long[:10000] + "b" + long[:10000], true},
		{strings.Repeat("*a", 200) + "b", long, false},
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, tt := range tests {
			if got := globMatch(tt.pattern, tt.s); got != tt.want {
				t.Errorf("globMatch(%.30q…, %d chars) = %v, want %v", tt.pattern, len(tt.s), got, tt.want)
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("globMatch takes more than 5 s on pathological patterns")
	}
}

func dp(id string, tags ...string) Datapoint {
	d := Datapoint{ID: id}
	for _, kv := range tags {
		k, v, _ := strings.Cut(kv, "=")
		d.Tags = append(d.Tags, store.DatapointTag{Key: k, Value: v, Source: "system"})
	}
	return d
}

func TestDatapointAccess(t *testing.T) {
	readOnly := perms(nil, projectRole(project1, ids(epGetProject), tagAuth("name", "sensor*", true, false)))
	writeOnly := perms(nil, projectRole(project1, nil, tagAuth("name", "valve*", false, true)))
	wildcard := perms(nil, projectRole(project1, nil, tagAuth("name", "*", true, true)))
	// Read from one TagAuth, write from another (in another role), and a
	// TagAuth granting nothing that must not take anything away.
	combined := perms(nil,
		projectRole(project1, nil, tagAuth("name", "ahu-*", true, false)),
		projectRole(project1, nil, tagAuth("name", "ahu-1-*", false, true), tagAuth("name", "*", false, false)),
	)
	byTag := perms(nil, projectRole(project1, nil, tagAuth("site", "north*", true, false), tagAuth("units", "degC", false, true)))
	company := perms([]store.CompanyRole{companyRole(epGetCompany)})
	companyAndProject := perms([]store.CompanyRole{companyRole()}, projectRole(project1, nil, tagAuth("name", "x", true, false)))
	noTags := perms(nil, projectRole(project1, ids(AllEndpoints)))
	none := perms(nil)

	rw, r, w, no := Access{true, true}, Access{Read: true}, Access{Write: true}, Access{}
	tests := []struct {
		name    string
		p       *Permissions
		project int64
		dp      Datapoint
		want    Access
	}{
		{"read-only: match", readOnly, project1, dp("sensor1"), r},
		{"read-only: prefix itself", readOnly, project1, dp("sensor"), r},
		{"read-only: no match", readOnly, project1, dp("meter1"), no},
		{"read-only: other project", readOnly, project2, dp("sensor1"), no},
		{"read-only: case matters", readOnly, project1, dp("Sensor1"), no},
		{"write-only: match", writeOnly, project1, dp("valve-3"), w},
		{"write-only: no match", writeOnly, project1, dp("sensor1"), no},
		{"wildcard: anything", wildcard, project1, dp("whatever/it/is"), rw},
		{"wildcard: not in another project", wildcard, project2, dp("x"), no},
		{"combined: read and write", combined, project1, dp("ahu-1-supply"), rw},
		{"combined: read only", combined, project1, dp("ahu-2-supply"), r},
		{"combined: nothing", combined, project1, dp("boiler"), no},
		{"tag key: matching tag reads", byTag, project1, dp("x1", "site=north-wing"), r},
		{"tag key: both tags", byTag, project1, dp("x2", "units=degC", "site=north"), rw},
		{"tag key: write via units", byTag, project1, dp("x3", "units=degC"), w},
		{"tag key: value mismatch", byTag, project1, dp("x4", "site=south", "units=K"), no},
		{"tag key: name is not a tag", byTag, project1, dp("north-1"), no},
		{"tag key: key mismatch", byTag, project1, dp("x5", "region=north"), no},
		{"company role sees all", company, project1, dp("anything"), rw},
		{"company role sees all, any project", company, project2, dp("anything", "site=x"), rw},
		{"company role wins over TagAuths", companyAndProject, project1, dp("not-x"), rw},
		{"project grant without TagAuths sees nothing", noTags, project1, dp("sensor1"), no},
		{"no roles see nothing", none, project1, dp("sensor1"), no},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.p.DatapointAccess(tt.project, tt.dp); got != tt.want {
				t.Fatalf("DatapointAccess(%d, %q) = %+v, want %+v", tt.project, tt.dp.ID, got, tt.want)
			}
		})
	}
}

// An MQTT user's rights need some TagAuth with that flag in the project
// (or a company role, which reaches every datapoint).
func TestReachesDatapoints(t *testing.T) {
	readOnly := perms(nil, projectRole(project1, ids(epGetProject), tagAuth("name", "sensor*", true, false)))
	writeOnly := perms(nil, projectRole(project1, nil, tagAuth("name", "valve*", false, true)))
	flagless := perms(nil, projectRole(project1, ids(AllEndpoints), tagAuth("name", "*", false, false)))
	company := perms([]store.CompanyRole{companyRole()})
	tests := []struct {
		name        string
		p           *Permissions
		project     int64
		read, write bool
	}{
		{"read TagAuth", readOnly, project1, true, false},
		{"read TagAuth, other project", readOnly, project2, false, false},
		{"write TagAuth only", writeOnly, project1, false, true},
		{"TagAuth without flags", flagless, project1, false, false},
		{"company role", company, project2, true, true},
		{"no roles", perms(nil), project1, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if r, w := tt.p.ReachesDatapoints(tt.project, false), tt.p.ReachesDatapoints(tt.project, true); r != tt.read || w != tt.write {
				t.Fatalf("read %v write %v, want %v %v", r, w, tt.read, tt.write)
			}
		})
	}
}

func TestFilterDatapoints(t *testing.T) {
	p := perms(nil,
		projectRole(project1, nil, tagAuth("name", "sensor*", true, false)),
		projectRole(project1, nil, tagAuth("name", "valve*", false, true), tagAuth("name", "sensor9", true, true)),
	)
	all := []Datapoint{dp("valve1"), dp("sensor9"), dp("meter"), dp("sensor1"), dp("valve2")}
	names := func(dps []Datapoint) []string {
		out := []string{}
		for _, d := range dps {
			out = append(out, d.ID)
		}
		return out
	}
	if got, want := names(p.FilterDatapoints(project1, all, false)), []string{"sensor9", "sensor1"}; !slices.Equal(got, want) {
		t.Errorf("readable = %v, want %v", got, want)
	}
	if got, want := names(p.FilterDatapoints(project1, all, true)), []string{"valve1", "sensor9", "valve2"}; !slices.Equal(got, want) {
		t.Errorf("writable = %v, want %v", got, want)
	}
	if got := p.FilterDatapoints(project2, all, false); len(got) != 0 {
		t.Errorf("another project: %v, want nothing", names(got))
	}
	company := perms([]store.CompanyRole{companyRole()})
	if got := names(company.FilterDatapoints(project2, all, true)); !slices.Equal(got, names(all)) {
		t.Errorf("company role: %v, want all", got)
	}
	if got := names(all); !slices.Equal(got, []string{"valve1", "sensor9", "meter", "sensor1", "valve2"}) {
		t.Errorf("FilterDatapoints changed its input: %v", got)
	}
}
