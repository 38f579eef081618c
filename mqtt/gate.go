package mqtt

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/openbdp/bdp/codec"
	"github.com/openbdp/bdp/fault"
	"github.com/openbdp/bdp/rbac"
	"github.com/openbdp/bdp/store"
)

// Gate decides which datapoints an MQTT user may receive and publish to:
// never more than the user who created it may read or write now, judged
// by the one function that decides datapoint access for HTTP too
// (rbac.Permissions.DatapointAccess) with the creator's roles and the
// datapoint's tags. Decisions are cached and every cache is dropped at
// once when PostgreSQL tells of a change to users, roles or datapoint
// tags (store.ListenCredentialsChanged), so a creator who loses a grant
// takes it from their MQTT users then. Safe for concurrent use.
type Gate struct {
	store   *store.Store
	catalog *rbac.Catalog

	// gen counts invalidations; an entry loaded under an older one is
	// stale. A load that raced an invalidation stores its result under
	// the generation it started in, so it is never used.
	gen atomic.Uint64

	mu        sync.RWMutex
	creators  map[int64]creatorEntry
	projects  map[int64]projectEntry
	decisions map[decisionKey]decisionEntry
}

type creatorEntry struct {
	perms *rbac.Permissions // nil: the creator is gone or has no roles
	gen   uint64
}

type projectEntry struct {
	company int64
	tags    map[string][]store.DatapointTag // dataPointID → tags; absent: none
	gen     uint64
}

type decisionKey struct {
	creator, project int64
	dataPointID      string
}

type decisionEntry struct {
	access rbac.Access
	gen    uint64
}

// maxDecisions bounds the decision cache; past it, it starts afresh.
const maxDecisions = 1 << 20

// gateLoadTimeout bounds the database lookups of one decision.
const gateLoadTimeout = 5 * time.Second

// NewGate returns a gate over st.
func NewGate(st *store.Store) *Gate {
	// DatapointAccess looks at company roles and TagAuths only, not at
	// endpoints: an empty endpoint catalog computes it as HTTP's does.
	return &Gate{store: st, catalog: rbac.NewCatalog(nil), creators: map[int64]creatorEntry{},
		projects: map[int64]projectEntry{}, decisions: map[decisionKey]decisionEntry{}}
}

// Listen follows changes committed by any process on the database until
// ctx ends: users, roles, role assignments (migration 00006) and datapoint
// tags (00008) each invalidate every cached decision. It returns when ctx
// ends; run it on a goroutine the caller joins.
func (g *Gate) Listen(ctx context.Context) {
	g.store.ListenCredentialsChanged(ctx, func(store.AccessChange) { g.Invalidate() })
}

// Invalidate makes every cached decision stale.
func (g *Gate) Invalidate() { g.gen.Add(1) }

// Allowed tells whether acct may read (or, with write, publish to) the
// datapoint. An edge account is not datapoint-filtered (its tree is
// edge/{project_id}/, checked by the ACL); any other account needs write
// rights to write, and its creator's access to the datapoint as of now.
// A creator who was deleted or holds no role of the project's company
// gives nothing; so does a failed lookup.
func (g *Gate) Allowed(acct Account, projectID int64, dataPointID string, write bool) bool {
	ok, _ := g.decideFor(acct, projectID, dataPointID, write)
	return ok
}

// decideFor is Allowed with the reason it could not decide: a database
// that did not answer (the decision is not cached then).
func (g *Gate) decideFor(acct Account, projectID int64, dataPointID string, write bool) (bool, error) {
	if acct.ProjectID != projectID {
		return false, nil
	}
	if acct.Edge {
		return true, nil
	}
	if acct.CreatedBy == 0 || write && !acct.Write {
		return false, nil
	}
	a, err := g.access(acct.CreatedBy, projectID, dataPointID)
	if write {
		return a.Write, err
	}
	return a.Read, err
}

// MayRead tells whether acct may receive a publish on topic: for a
// datapoint topic the Gate's read decision, for any other topic true
// (the ACL decides those). The broker's ACL hook asks it on every
// delivery to a subscriber (mochi calls OnACLCheck with write false for
// each), so that TagAuths hide from an MQTT user what they hide from its
// creator.
func (g *Gate) MayRead(acct Account, topic string) bool {
	projectID, dataPointID, ok := parseLiveTopic(topic)
	if !ok {
		return true
	}
	return g.Allowed(acct, projectID, dataPointID, false)
}

func (g *Gate) access(creator, projectID int64, dataPointID string) (rbac.Access, error) {
	gen := g.gen.Load()
	key := decisionKey{creator, projectID, dataPointID}
	g.mu.RLock()
	d, ok := g.decisions[key]
	g.mu.RUnlock()
	if ok && d.gen == gen {
		return d.access, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), gateLoadTimeout)
	defer cancel()
	a, err := g.decide(ctx, gen, creator, projectID, dataPointID)
	if err != nil {
		return rbac.Access{}, err // not cached: the next message asks again
	}
	g.mu.Lock()
	if len(g.decisions) >= maxDecisions {
		g.decisions = map[decisionKey]decisionEntry{}
	}
	g.decisions[key] = decisionEntry{access: a, gen: gen}
	g.mu.Unlock()
	return a, nil
}

// decide computes one decision from the creator's permissions and the
// project's tags, each cached for the generation.
func (g *Gate) decide(ctx context.Context, gen uint64, creator, projectID int64, dataPointID string) (rbac.Access, error) {
	perms, err := g.permissions(ctx, gen, creator)
	if err != nil || perms == nil {
		return rbac.Access{}, err
	}
	proj, err := g.project(ctx, gen, projectID)
	if err != nil {
		return rbac.Access{}, err
	}
	if proj.company != perms.CompanyID {
		return rbac.Access{}, nil // a company role reaches its own company only
	}
	return perms.DatapointAccess(projectID, rbac.Datapoint{ID: dataPointID, Tags: proj.tags[dataPointID]}), nil
}

func (g *Gate) permissions(ctx context.Context, gen uint64, creator int64) (*rbac.Permissions, error) {
	g.mu.RLock()
	e, ok := g.creators[creator]
	g.mu.RUnlock()
	if ok && e.gen == gen {
		return e.perms, nil
	}
	p, err := g.store.Principal(ctx, creator)
	var perms *rbac.Permissions
	switch {
	case fault.Is(err, fault.NotFound):
		// Deleted: nothing (its MQTT users go with it).
	case err != nil:
		return nil, err
	default:
		perms = rbac.Compute(g.catalog, p)
	}
	g.mu.Lock()
	g.creators[creator] = creatorEntry{perms: perms, gen: gen}
	g.mu.Unlock()
	return perms, nil
}

func (g *Gate) project(ctx context.Context, gen uint64, projectID int64) (projectEntry, error) {
	g.mu.RLock()
	e, ok := g.projects[projectID]
	g.mu.RUnlock()
	if ok && e.gen == gen {
		return e, nil
	}
	company, err := g.store.ProjectCompany(ctx, projectID)
	if err != nil {
		return e, err
	}
	// One query for the whole project: after an invalidation, the next
	// messages of a project's many datapoints need no query each.
	dps, err := g.store.ProjectDatapoints(ctx, projectID, nil)
	if err != nil {
		return e, err
	}
	e = projectEntry{company: company, tags: make(map[string][]store.DatapointTag), gen: gen}
	for _, dp := range dps {
		if len(dp.Tags) > 0 {
			e.tags[dp.ID] = dp.Tags
		}
	}
	g.mu.Lock()
	g.projects[projectID] = e
	g.mu.Unlock()
	return e, nil
}

// parseLiveTopic reads a concrete datapoint topic; a filter (wildcards)
// or any other topic is not one.
func parseLiveTopic(topic string) (projectID int64, dataPointID string, ok bool) {
	projectID, dataPointID, err := codec.ParseDatapointTopic(topic)
	return projectID, dataPointID, err == nil
}
