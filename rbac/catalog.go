// Package rbac decides who may do what: endpoint grants from company and
// project roles, and datapoint access from TagAuths.
//
// Everything here is pure: it works on a Catalog and on the roles a user
// holds, both loaded by the caller, so a permission check never touches
// the database. Values are immutable once built and safe for concurrent use.
package rbac

import (
	"fmt"

	"github.com/openbdp/bdp/fault"
	"github.com/openbdp/bdp/store"
)

// AllEndpoints is the shorthand id for "every endpoint the role may hold".
const AllEndpoints int32 = 0

// Catalog knows every endpoint id and its tag.
type Catalog struct {
	byID    map[int32]store.Endpoint
	all     Set // every id
	project Set // every id a project role may hold: all but company routes
	// everyone is what every user may call without a role (meta and user
	// routes): a role listing these grants nothing new.
	everyone Set
}

// NewCatalog indexes the persisted endpoint list.
func NewCatalog(eps []store.Endpoint) *Catalog {
	c := &Catalog{byID: make(map[int32]store.Endpoint, len(eps))}
	for _, e := range eps {
		c.byID[e.ID] = e
		c.all = c.all.With(e.ID)
		if e.Tag != store.TagCompany {
			c.project = c.project.With(e.ID)
		}
		if e.Tag == store.TagMeta || e.Tag == store.TagUser {
			c.everyone = c.everyone.With(e.ID)
		}
	}
	return c
}

// Endpoint returns the catalog entry of an id.
func (c *Catalog) Endpoint(id int32) (store.Endpoint, bool) {
	e, ok := c.byID[id]
	return e, ok
}

// AllIDs lists every endpoint id in ascending order: the company admin
// role's grant.
func (c *Catalog) AllIDs() []int32 { return c.all.IDs() }

// ProjectIDs lists every id a project role may hold: the project admin
// role's grant.
func (c *Catalog) ProjectIDs() []int32 { return c.project.IDs() }

// ValidateProjectRole checks the endpoint list of a project role: every id
// known, no company endpoint (api.md 5: company endpoints cannot be granted
// by project roles).
func (c *Catalog) ValidateProjectRole(ids []int32) error {
	for _, id := range ids {
		if id == AllEndpoints {
			continue
		}
		e, ok := c.byID[id]
		if !ok {
			return fault.Invalidf("authed_endpoints: unknown endpoint id %d", id)
		}
		if e.Tag == store.TagCompany {
			return fault.Invalidf("authed_endpoints: endpoint %d (%s %s) is a company endpoint and cannot be granted by a project role", id, e.Method, e.Path)
		}
	}
	return nil
}

// ValidateCompanyRole checks that every id of a company role is known.
func (c *Catalog) ValidateCompanyRole(ids []int32) error {
	for _, id := range ids {
		if _, ok := c.byID[id]; !ok && id != AllEndpoints {
			return fault.Invalidf("authed_endpoints: unknown endpoint id %d", id)
		}
	}
	return nil
}

// expand turns a role's endpoint list into a set; 0 stands for within.
func expand(ids []int32, within Set) Set {
	var s Set
	for _, id := range ids {
		if id == AllEndpoints {
			return s.Union(within)
		}
		if within.Has(id) {
			s = s.With(id)
		}
	}
	return s
}

// describe names an endpoint in error texts (decisions.md 3).
func (c *Catalog) describe(id int32) string {
	e := c.byID[id]
	return fmt.Sprintf("endpoint %d: %s %s", id, e.Method, e.Path)
}
