package http

import (
	"context"
	"encoding/base64"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/openbdp/bdp/fault"
	"github.com/openbdp/bdp/rbac"
	"github.com/openbdp/bdp/store"
)

// authenticate identifies the caller from HTTP Basic credentials (email
// and password) or a bearer token, and returns the caller's roles and
// permission set. Every failure is a 401.
func (s *Server) authenticate(c *fiber.Ctx) (store.Principal, *rbac.Permissions, error) {
	h := c.Get(fiber.HeaderAuthorization)
	scheme, cred, _ := strings.Cut(h, " ")
	cred = strings.TrimSpace(cred)
	var userID int64
	var err error
	switch {
	case h == "":
		return store.Principal{}, nil, fault.Unauthenticatedf("credentials required")
	case strings.EqualFold(scheme, "Basic"):
		email, password, ok := parseBasic(cred)
		if !ok {
			return store.Principal{}, nil, fault.Unauthenticatedf("malformed Basic credentials")
		}
		userID, err = s.verifyPassword(c.UserContext(), email, password, clientAddr(c))
	case strings.EqualFold(scheme, "Bearer") && cred != "":
		return s.verifyToken(c.UserContext(), cred)
	default:
		return store.Principal{}, nil, fault.Unauthenticatedf("unsupported Authorization scheme; use Basic or Bearer")
	}
	if err != nil {
		return store.Principal{}, nil, err
	}
	p, perms, err := s.authz.get(c.UserContext(), userID)
	if fault.Is(err, fault.NotFound) {
		s.creds.DropUser(userID) // deleted since the credentials were cached
		return p, nil, fault.Unauthenticatedf("wrong email or password")
	}
	return p, perms, err
}

func parseBasic(cred string) (email, password string, ok bool) {
	raw, err := base64.StdEncoding.DecodeString(cred)
	if err != nil {
		return "", "", false
	}
	email, password, ok = strings.Cut(string(raw), ":")
	email = strings.TrimSpace(email) // as it is stored; the password is taken as given
	return email, password, ok && email != ""
}

// dummyHash makes a wrong email cost as much as a wrong password, so
// response times do not tell which emails exist.
const dummyHash = "$argon2id$v=19$m=47104,t=1,p=1$c29tZXNhbHRzb21lc2FsdA$2jJcG1mT0W0n3r4m6vZ8Cq3a8gqkHfbpQm1JqzX0Xyc"

// checkPassword checks email and password against the stored hash and
// remembers them in the credentials cache when they match.
func (s *Server) checkPassword(ctx context.Context, email, password string) (int64, error) {
	begun := s.creds.Begin()
	u, err := s.store.UserByEmail(ctx, email)
	hash := u.PasswordHash
	if fault.Is(err, fault.NotFound) {
		hash = dummyHash
	} else if err != nil {
		return 0, err
	}
	match, verr := s.hasher.Verify(ctx, password, hash)
	if verr != nil && err == nil {
		return 0, verr
	}
	if err != nil || !match {
		return 0, fault.Unauthenticatedf("wrong email or password")
	}
	s.creds.Put(email, password, u.ID, begun)
	return u.ID, nil
}

func (s *Server) verifyToken(ctx context.Context, token string) (store.Principal, *rbac.Permissions, error) {
	userID, fp, err := s.tokens.Parse(token)
	if err != nil {
		return store.Principal{}, nil, fault.Unauthenticatedf("invalid or expired token")
	}
	p, perms, err := s.authz.get(ctx, userID)
	if fault.Is(err, fault.NotFound) || (err == nil && !s.tokens.Matches(fp, p.User.PasswordHash)) {
		return store.Principal{}, nil, fault.Unauthenticatedf("invalid or expired token")
	}
	return p, perms, err
}

// principalCache keeps each active user's roles and permission set, so a
// request costs no database round trip for authorization. Any change to
// users, roles or projects calls invalidate, which bumps a generation and
// makes every entry stale at once; the TTL bounds how long another node's
// change can go unseen. Safe for concurrent use.
type principalCache struct {
	store   *store.Store
	catalog *rbac.Catalog
	ttl     time.Duration

	gen      atomic.Uint64
	mu       sync.RWMutex
	entries  map[int64]principalEntry
	projects sync.Map // project id -> company id; projects never change company
}

type principalEntry struct {
	principal store.Principal
	perms     *rbac.Permissions
	gen       uint64
	loaded    time.Time
}

func newPrincipalCache(st *store.Store, cat *rbac.Catalog) *principalCache {
	return &principalCache{store: st, catalog: cat, ttl: 5 * time.Second, entries: map[int64]principalEntry{}}
}

func (pc *principalCache) get(ctx context.Context, userID int64) (store.Principal, *rbac.Permissions, error) {
	gen := pc.gen.Load()
	pc.mu.RLock()
	e, ok := pc.entries[userID]
	pc.mu.RUnlock()
	if ok && e.gen == gen && time.Since(e.loaded) < pc.ttl {
		return e.principal, e.perms, nil
	}
	p, err := pc.store.Principal(ctx, userID)
	if err != nil {
		return p, nil, err
	}
	e = principalEntry{principal: p, perms: rbac.Compute(pc.catalog, p), gen: gen, loaded: time.Now()}
	pc.mu.Lock()
	if len(pc.entries) > 100_000 {
		pc.entries = map[int64]principalEntry{}
	}
	pc.entries[userID] = e
	pc.mu.Unlock()
	return e.principal, e.perms, nil
}

// invalidate makes every cached principal stale.
func (pc *principalCache) invalidate() { pc.gen.Add(1) }

// projectCompany returns the company of a project, remembered after the
// first lookup.
func (pc *principalCache) projectCompany(ctx context.Context, projectID int64) (int64, error) {
	if v, ok := pc.projects.Load(projectID); ok {
		return v.(int64), nil
	}
	c, err := pc.store.ProjectCompany(ctx, projectID)
	if err != nil {
		return 0, err
	}
	pc.projects.Store(projectID, c)
	return c, nil
}

// forgetProject drops a deleted project.
func (pc *principalCache) forgetProject(projectID int64) { pc.projects.Delete(projectID) }
