package rbac

import "github.com/openbdp/bdp/store"

// Access is what a user may do with one datapoint.
type Access struct {
	Read, Write bool
}

// Datapoint is what TagAuths look at: its name (the dataPointID, TagAuth
// key "name") and its tags (any other key).
type Datapoint struct {
	ID   string
	Tags []store.DatapointTag
}

// DatapointAccess is the one place that decides datapoint access: company
// roles see everything of their company's projects; project roles see what
// their TagAuths match, read and write judged separately.
func (p *Permissions) DatapointAccess(projectID int64, dp Datapoint) Access {
	if p.HasCompanyRole() {
		return Access{Read: true, Write: true}
	}
	g := p.projects[projectID]
	if g == nil {
		return Access{}
	}
	var a Access
	for _, t := range g.tags {
		if (a.Read || !t.Read) && (a.Write || !t.Write) {
			continue // this TagAuth could add nothing
		}
		if tagMatches(t, dp) {
			a.Read = a.Read || t.Read
			a.Write = a.Write || t.Write
			if a.Read && a.Write {
				break
			}
		}
	}
	return a
}

// FilterDatapoints keeps the datapoints the user may read (or write, when
// write is true), in order.
func (p *Permissions) FilterDatapoints(projectID int64, dps []Datapoint, write bool) []Datapoint {
	out := dps[:0:0]
	for _, dp := range dps {
		a := p.DatapointAccess(projectID, dp)
		if (write && a.Write) || (!write && a.Read) {
			out = append(out, dp)
		}
	}
	return out
}

func tagMatches(t store.TagAuth, dp Datapoint) bool {
	if t.Key == "name" {
		return globMatch(t.Value, dp.ID)
	}
	for _, tag := range dp.Tags {
		if tag.Key == t.Key && globMatch(t.Value, tag.Value) {
			return true
		}
	}
	return false
}

// globMatch matches s against pattern, where * stands for any run of
// characters (also none) and every other character for itself.
func globMatch(pattern, s string) bool {
	// Iterative matching with backtracking to the last star: linear in
	// practice, never exponential.
	p, i := 0, 0
	star, mark := -1, 0
	for i < len(s) {
		switch {
		case p < len(pattern) && pattern[p] == '*':
			star, mark = p, i
			p++
		case p < len(pattern) && pattern[p] == s[i]:
			p++
			i++
		case star >= 0:
			p = star + 1
			mark++
			i = mark
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// ReachesDatapoints reports whether the user may read (or write, when
// write is true) any datapoint of the project at all: a company role
// reaches every datapoint; a project role needs some TagAuth of the
// project with that flag. What a user cannot reach, nothing they create
// (an MQTT user) may reach either.
func (p *Permissions) ReachesDatapoints(projectID int64, write bool) bool {
	if p.HasCompanyRole() {
		return true
	}
	g := p.projects[projectID]
	if g == nil {
		return false
	}
	for _, t := range g.tags {
		if (write && t.Write) || (!write && t.Read) {
			return true
		}
	}
	return false
}
