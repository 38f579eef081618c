package auth

import (
	"crypto/hmac"
	"crypto/sha256"
	"sync"
	"time"
)

// CredentialCache remembers recently verified email/password pairs so a
// busy client does not pay the slow hash on every request. Entries are
// keyed by an HMAC of the credentials under a per-process random key: the
// cache never holds a password, and a memory dump reveals nothing usable
// offline. Safe for concurrent use.
type CredentialCache struct {
	key []byte
	ttl time.Duration
	now func() time.Time

	mu      sync.Mutex
	entries map[[sha256.Size]byte]cacheEntry
	byUser  map[int64][][sha256.Size]byte
	// drops counts DropUser calls. A verification that began before a drop
	// may have read the old password hash, so its Put is ignored.
	drops uint64
}

type cacheEntry struct {
	userID  int64
	expires time.Time
	// refreshing is set once a caller was told to verify the credentials
	// again ahead of expiry (GetOrRefresh).
	refreshing bool
}

// maxCacheEntries bounds memory; past it the cache starts over.
const maxCacheEntries = 100_000

// NewCredentialCache returns an empty cache; ttl 0 disables caching.
func NewCredentialCache(key []byte, ttl time.Duration, now func() time.Time) *CredentialCache {
	if now == nil {
		now = time.Now
	}
	return &CredentialCache{key: key, ttl: ttl, now: now,
		entries: map[[sha256.Size]byte]cacheEntry{}, byUser: map[int64][][sha256.Size]byte{}}
}

func (c *CredentialCache) digest(email, password string) [sha256.Size]byte {
	m := hmac.New(sha256.New, c.key)
	m.Write([]byte(email))
	m.Write([]byte{0})
	m.Write([]byte(password))
	var d [sha256.Size]byte
	m.Sum(d[:0])
	return d
}

// Get returns the user whose credentials these are, if verified recently.
func (c *CredentialCache) Get(email, password string) (int64, bool) {
	if c.ttl <= 0 {
		return 0, false
	}
	d := c.digest(email, password)
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[d]
	if !ok || !c.now().Before(e.expires) {
		return 0, false
	}
	return e.userID, true
}

// GetOrRefresh is Get for a busy client: in the last quarter of an
// entry's life it tells one caller, and only one, to verify the
// credentials again now (refresh true, ok true), while every other caller
// keeps the cached answer. Without it the entry expired under a client
// sending many requests at once, and all of them waited for the one slow
// hash: uploads stalled 0.2-0.9 s once a minute. The refreshing caller's
// Put renews the entry; if the password no longer matches, it calls
// Forget.
func (c *CredentialCache) GetOrRefresh(email, password string) (userID int64, ok, refresh bool) {
	if c.ttl <= 0 {
		return 0, false, false
	}
	d := c.digest(email, password)
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[d]
	now := c.now()
	if !ok || !now.Before(e.expires) {
		return 0, false, false
	}
	if !e.refreshing && e.expires.Sub(now) <= c.ttl/4 {
		e.refreshing = true
		c.entries[d] = e
		return e.userID, true, true
	}
	return e.userID, true, false
}

// Forget drops one pair of credentials: a refresh found they no longer
// match.
func (c *CredentialCache) Forget(email, password string) {
	d := c.digest(email, password)
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.entries, d)
}

// Begin is called before reading a user's password hash for a
// verification; its result goes to Put.
func (c *CredentialCache) Begin() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.drops
}

// Put records verified credentials of a user, unless a user was dropped
// since the verification began (its hash may have been the old one).
func (c *CredentialCache) Put(email, password string, userID int64, begun uint64) {
	if c.ttl <= 0 {
		return
	}
	d := c.digest(email, password)
	c.mu.Lock()
	defer c.mu.Unlock()
	if begun != c.drops {
		return
	}
	if len(c.entries) >= maxCacheEntries {
		c.entries = map[[sha256.Size]byte]cacheEntry{}
		c.byUser = map[int64][][sha256.Size]byte{}
	}
	if _, had := c.entries[d]; !had {
		c.byUser[userID] = append(c.byUser[userID], d)
	}
	c.entries[d] = cacheEntry{userID: userID, expires: c.now().Add(c.ttl)}
}

// DropUser forgets every credential of a user: called when the password
// changes or the user is deleted.
func (c *CredentialCache) DropUser(userID int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.drops++
	for _, d := range c.byUser[userID] {
		delete(c.entries, d)
	}
	delete(c.byUser, userID)
}

// DropAll forgets every credential: called when changes to users may have
// gone unseen (the notifications of another process were missed).
func (c *CredentialCache) DropAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.drops++
	c.entries = map[[sha256.Size]byte]cacheEntry{}
	c.byUser = map[int64][][sha256.Size]byte{}
}
