package rbac

import (
	"github.com/openbdp/bdp/fault"
	"github.com/openbdp/bdp/store"
)

// Permissions is a user's effective permission set: the union over every
// role they hold (a grant in one role is never revoked by another).
type Permissions struct {
	UserID    int64
	CompanyID int64
	cat       *Catalog
	// company holds the endpoints of the company roles; they apply to every
	// project and every datapoint of the company.
	company    Set
	hasCompany bool
	projects   map[int64]*projectGrant
}

// projectGrant is what the project roles give in one project.
type projectGrant struct {
	endpoints Set
	tags      []store.TagAuth
}

// Compute builds the permission set of a principal.
func Compute(cat *Catalog, p store.Principal) *Permissions {
	perms := &Permissions{UserID: p.User.ID, CompanyID: p.User.CompanyID, cat: cat, projects: map[int64]*projectGrant{}}
	perms.hasCompany = len(p.CompanyRoles) > 0
	for _, r := range p.CompanyRoles {
		perms.company = perms.company.Union(expand(r.AuthedEndpoints, cat.all))
	}
	for _, r := range p.ProjectRoles {
		g := perms.projects[r.ProjectID]
		if g == nil {
			g = &projectGrant{}
			perms.projects[r.ProjectID] = g
		}
		g.endpoints = g.endpoints.Union(expand(r.AuthedEndpoints, cat.project))
		g.tags = append(g.tags, r.AuthedTags...)
	}
	return perms
}

// HasCompanyRole reports whether the user holds a company role; such a
// user sees every project and datapoint of the company.
func (p *Permissions) HasCompanyRole() bool { return p.hasCompany }

// ProjectIDs lists the projects in which project roles grant something.
func (p *Permissions) ProjectIDs() []int64 {
	ids := make([]int64, 0, len(p.projects))
	for id := range p.projects {
		ids = append(ids, id)
	}
	return ids
}

// Allows reports whether the user may call endpoint id. projectID is the
// project the request addresses (0 for none); the caller has checked that
// the project belongs to the user's company.
func (p *Permissions) Allows(id int32, projectID int64) bool {
	e, ok := p.cat.byID[id]
	if !ok {
		return false
	}
	switch e.Tag {
	case store.TagMeta, store.TagUser:
		return true
	case store.TagCompany:
		return p.company.Has(id)
	case store.TagProject:
		if p.company.Has(id) {
			return true
		}
		g := p.projects[projectID]
		return g != nil && g.endpoints.Has(id)
	case store.TagGeneral:
		if p.company.Has(id) {
			return true
		}
		for _, g := range p.projects {
			if g.endpoints.Has(id) {
				return true
			}
		}
	}
	return false
}

// Check is Allows with the error decisions.md 3 prescribes.
func (p *Permissions) Check(id int32, projectID int64) error {
	if p.Allows(id, projectID) {
		return nil
	}
	return fault.Forbiddenf("unauthorized access to %s", p.cat.describe(id))
}

// CheckIn is Check for a general endpoint used on one project's
// resource (GET /v2/datapoint/setpoint/{reference}): the grant must hold
// in that project (or company-wide), not in any project of the user.
func (p *Permissions) CheckIn(id int32, projectID int64) error {
	if p.projectEndpoints(projectID).Has(id) {
		return nil
	}
	return fault.Forbiddenf("unauthorized access to %s", p.cat.describe(id))
}

// projectEndpoints is everything the user may call in a project.
func (p *Permissions) projectEndpoints(projectID int64) Set {
	s := p.company
	if g := p.projects[projectID]; g != nil {
		s = s.Union(g.endpoints)
	}
	return s
}

// CoversProjectRole checks that a project role grants nothing the user
// lacks in that project: no privilege escalation by creating, changing or
// assigning roles, and no changing, deleting or unassigning a role that
// holds more than the user (which would let a lesser user take grants
// from a greater one). What every user may call counts as held.
func (p *Permissions) CoversProjectRole(projectID int64, ids []int32, tags []store.TagAuth) error {
	extra := expand(ids, p.cat.project).Minus(p.projectEndpoints(projectID)).Minus(p.cat.everyone)
	if missing := extra.IDs(); len(missing) > 0 {
		return fault.Forbiddenf("the role would grant %s, which you do not hold", p.cat.describe(missing[0]))
	}
	if p.HasCompanyRole() {
		return nil // company roles see every datapoint
	}
	var held []store.TagAuth
	if g := p.projects[projectID]; g != nil {
		held = g.tags
	}
	for _, t := range tags {
		if t.Read && !tagCovered(held, t, func(h store.TagAuth) bool { return h.Read }) {
			return fault.Forbiddenf("the role would grant read on %s=%s, which you do not hold", t.Key, t.Value)
		}
		if t.Write && !tagCovered(held, t, func(h store.TagAuth) bool { return h.Write }) {
			return fault.Forbiddenf("the role would grant write on %s=%s, which you do not hold", t.Key, t.Value)
		}
	}
	return nil
}

// CoversCompanyRole checks that a company role grants nothing the user's
// company roles lack (see CoversProjectRole).
func (p *Permissions) CoversCompanyRole(ids []int32) error {
	extra := expand(ids, p.cat.all).Minus(p.company).Minus(p.cat.everyone)
	if missing := extra.IDs(); len(missing) > 0 {
		return fault.Forbiddenf("the role would grant %s, which you do not hold", p.cat.describe(missing[0]))
	}
	return nil
}

// tagCovered reports whether a held TagAuth with the right flag covers
// every datapoint that want can match. name=* covers every key, because
// every datapoint has a name.
func tagCovered(held []store.TagAuth, want store.TagAuth, flag func(store.TagAuth) bool) bool {
	for _, h := range held {
		if !flag(h) {
			continue
		}
		if h.Key == "name" && h.Value == "*" {
			return true
		}
		// Matching want's pattern as a literal string is sound: its * can
		// only be absorbed by a * of h, so every expansion of want matches h.
		if h.Key == want.Key && globMatch(h.Value, want.Value) {
			return true
		}
	}
	return false
}
