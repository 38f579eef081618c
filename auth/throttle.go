package auth

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"net/netip"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// ThrottleConfig sets how many failed password checks are tolerated. Zero
// fields take the defaults.
type ThrottleConfig struct {
	// AccountFailures is how many failures one account (email, ignoring
	// case, existing or not) may have within Window; beyond, attempts are
	// refused until the oldest ones age out. Default 10.
	AccountFailures int
	// AddressFailures is the same for one client address (an IPv6 address
	// counts as its /64, which one client usually owns whole). Default 100.
	AddressFailures int
	// Window is how long a failure counts. Default 1 minute.
	Window time.Duration
	// MaxKeys bounds the accounts, and separately the addresses, that are
	// tracked, so that cycling through names or addresses cannot grow
	// memory without bound. Default 100,000 (about 8.5 MiB each when full).
	MaxKeys int
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// OnFailure, when set, is told every failure counted by Done, with
	// the account and address as counted (AccountKey, AddressKey), so that
	// other processes can count it too (Share). It runs on the login's
	// goroutine after the count, outside the throttle's lock, and must not
	// block. RecordRemote does not call it: a notice goes around once.
	OnFailure func(account string, addr netip.Addr)
	// OnReset, when set, is told when a successful login cleared its
	// account's failures (not when there were none to clear), so that the
	// other processes clear theirs. Same rules as OnFailure.
	OnReset func(account string)
}

// Default limits of ThrottleConfig.
const (
	DefaultAccountFailures = 10
	DefaultAddressFailures = 100
	DefaultFailureWindow   = time.Minute
	DefaultThrottleKeys    = 100_000
)

// Scopes a Throttled error names.
const (
	ScopeAccount = "account"
	ScopeAddress = "address"
)

// Throttled refuses an attempt: the account or address had too many
// failures recently. The attempt must not be verified, even with the
// right password, or throttling would be no obstacle to guessing.
type Throttled struct {
	Scope      string        // ScopeAccount or ScopeAddress
	RetryAfter time.Duration // at least one second
}

func (e *Throttled) Error() string {
	return fmt.Sprintf("too many failed logins for this %s; retry in %d s", e.Scope, e.RetrySeconds())
}

// RetrySeconds is RetryAfter rounded up to whole seconds, as Retry-After
// carries it.
func (e *Throttled) RetrySeconds() int64 {
	return int64((e.RetryAfter + time.Second - 1) / time.Second)
}

// maxFailureLimit keeps counts in int32.
const maxFailureLimit = 1 << 30

// throttleSlots divides the window: failures are counted per slot, so an
// entry has a fixed size whatever the limits are, and a failure ages out
// between Window*(slots-1)/slots and Window after it happened.
const throttleSlots = 10

// Throttle limits failed authentications per account and per client
// address (HTTP Basic, the token grant, and MQTT CONNECT later). Callers
// ask Check before looking at the credentials at all (a cached correct
// password is refused as well while throttled), then Begin before the slow
// verification and Done with its outcome. Safe for concurrent use. Its
// counts are this process's; a Share adds the other processes' of the
// same database.
type Throttle struct {
	cfg     ThrottleConfig
	slotLen time.Duration
	origin  time.Time
	seed    maphash.Seed

	mu        sync.RWMutex // Check, on every request, only reads
	accounts  map[uint64]*failureCount
	addresses map[uint64]*failureCount
	// changed is closed and replaced whenever an attempt ends, waking the
	// Begin calls that wait for attempts in progress.
	changed chan struct{}
}

// NewThrottle fills in defaults and checks the configuration.
func NewThrottle(cfg ThrottleConfig) (*Throttle, error) {
	if cfg.AccountFailures == 0 {
		cfg.AccountFailures = DefaultAccountFailures
	}
	if cfg.AddressFailures == 0 {
		cfg.AddressFailures = DefaultAddressFailures
	}
	if cfg.Window == 0 {
		cfg.Window = DefaultFailureWindow
	}
	if cfg.MaxKeys == 0 {
		cfg.MaxKeys = DefaultThrottleKeys
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.AccountFailures < 1 || cfg.AddressFailures < 1 || cfg.MaxKeys < 1 ||
		cfg.AccountFailures > maxFailureLimit || cfg.AddressFailures > maxFailureLimit {
		return nil, fmt.Errorf("auth: throttle limits must be from 1 to %d", maxFailureLimit)
	}
	if cfg.Window < time.Second {
		return nil, errors.New("auth: throttle window must be at least 1s")
	}
	return &Throttle{cfg: cfg, slotLen: cfg.Window / throttleSlots, origin: cfg.Now(), seed: maphash.MakeSeed(),
		accounts: map[uint64]*failureCount{}, addresses: map[uint64]*failureCount{}, changed: make(chan struct{})}, nil
}

// Config returns the configuration in effect, defaults filled in.
func (t *Throttle) Config() ThrottleConfig { return t.cfg }

// Check returns a *Throttled error when account or addr may not try now.
// It is cheap: call it before any cache or database lookup.
func (t *Throttle) Check(account string, addr netip.Addr) error {
	acc, adr := t.keys(account, addr)
	t.mu.RLock()
	defer t.mu.RUnlock()
	if t.accounts[acc] == nil && t.addresses[adr] == nil {
		return nil // no failures: the common case skips the clock
	}
	slot, now := t.now()
	return t.refusal(acc, adr, slot, now)
}

// Attempt is one password verification admitted by Begin. Exactly one
// call to Done or Cancel must follow.
type Attempt struct {
	t        *Throttle
	acc, adr uint64
	// The keys themselves, for the hooks only.
	account string
	addr    netip.Addr
}

// Begin admits a verification for account and addr, or refuses it with a
// *Throttled error. Verifications in progress count as failures until they
// end, so concurrent guesses cannot overshoot the limits; a caller beyond
// them waits (until ctx ends) for those in progress to finish: if they
// fail it is refused, if they succeed it goes ahead.
func (t *Throttle) Begin(ctx context.Context, account string, addr netip.Addr) (*Attempt, error) {
	account, addr = AccountKey(account), AddressKey(addr)
	acc, adr := t.hashes(account, addr)
	for {
		slot, now := t.now()
		t.mu.Lock()
		if err := t.refusal(acc, adr, slot, now); err != nil {
			t.mu.Unlock()
			return nil, err
		}
		a, b := t.entry(t.accounts, acc, slot), t.entry(t.addresses, adr, slot)
		if int(a.total()+a.pending) < t.cfg.AccountFailures && int(b.total()+b.pending) < t.cfg.AddressFailures {
			a.pending++
			b.pending++
			t.mu.Unlock()
			return &Attempt{t: t, acc: acc, adr: adr, account: account, addr: addr}, nil
		}
		changed := t.changed
		t.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// Done ends the attempt: a failure is counted against its account and
// address; a success forgets the account's failures (not the address's,
// or one good login would reset a guesser's count).
func (a *Attempt) Done(ok bool) {
	cleared := false
	a.end(func(acc, adr *failureCount) {
		if ok {
			cleared = acc.total() > 0
			acc.counts = [throttleSlots]int32{}
		} else {
			acc.counts[mod(acc.newest)]++
			adr.counts[mod(adr.newest)]++
		}
	})
	cfg := &a.t.cfg
	switch {
	case !ok && cfg.OnFailure != nil:
		cfg.OnFailure(a.account, a.addr)
	case cleared && cfg.OnReset != nil:
		cfg.OnReset(a.account)
	}
}

// RecordRemote counts a failure another process saw (Share) in the
// current slot, as if it had happened here now. It tells no hook.
func (t *Throttle) RecordRemote(account string, addr netip.Addr) {
	acc, adr := t.keys(account, addr)
	slot, _ := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	a, b := t.entry(t.accounts, acc, slot), t.entry(t.addresses, adr, slot)
	a.counts[mod(a.newest)]++
	b.counts[mod(b.newest)]++
}

// ResetRemote clears the failures of an account that logged in
// successfully through another process (Share). It tells no hook.
func (t *Throttle) ResetRemote(account string) {
	acc := maphash.String(t.seed, AccountKey(account))
	t.mu.Lock()
	defer t.mu.Unlock()
	if f := t.accounts[acc]; f != nil {
		f.counts = [throttleSlots]int32{}
	}
}

// Cancel ends an attempt that could not be verified (the user store
// failed): it counts as neither failure nor success.
func (a *Attempt) Cancel() {
	a.end(func(_, _ *failureCount) {})
}

// end takes the attempt off its account's and address's pending counts,
// records its outcome and wakes the attempts waiting for it.
func (a *Attempt) end(record func(acc, adr *failureCount)) {
	t := a.t
	slot, _ := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	acc, adr := t.entry(t.accounts, a.acc, slot), t.entry(t.addresses, a.adr, slot)
	// An entry evicted meanwhile comes back without the pending count.
	acc.pending, adr.pending = max(acc.pending-1, 0), max(adr.pending-1, 0)
	record(acc, adr)
	t.wake()
}

// wake wakes the Begin calls waiting for attempts in progress. Holds t.mu.
func (t *Throttle) wake() {
	close(t.changed)
	t.changed = make(chan struct{})
}

func (t *Throttle) now() (int64, time.Time) {
	now := t.cfg.Now()
	return max(int64(now.Sub(t.origin)/t.slotLen), 0), now // a clock set back counts as the origin
}

// refusal returns the *Throttled error for the keys, or nil. Holds t.mu,
// for reading at least; it changes nothing.
func (t *Throttle) refusal(acc, adr uint64, slot int64, now time.Time) error {
	scope, wait := ScopeAccount, t.wait(t.accounts[acc], int32(t.cfg.AccountFailures), slot, now)
	if w := t.wait(t.addresses[adr], int32(t.cfg.AddressFailures), slot, now); w > wait {
		scope, wait = ScopeAddress, w
	}
	if wait <= 0 {
		return nil
	}
	return &Throttled{Scope: scope, RetryAfter: max(wait, time.Second)}
}

// wait is how long until fewer than limit failures of f remain in the
// window; 0 when there are fewer already.
func (t *Throttle) wait(f *failureCount, limit int32, slot int64, now time.Time) time.Duration {
	if f == nil {
		return 0
	}
	remaining := f.totalAt(slot)
	if remaining < limit {
		return 0
	}
	for s := slot - throttleSlots + 1; s <= slot; s++ {
		remaining -= f.countAt(s)
		if remaining < limit {
			// Slot s leaves the window when slot s+throttleSlots begins.
			return t.origin.Add(time.Duration(s+throttleSlots) * t.slotLen).Sub(now)
		}
	}
	return 0 // unreachable: remaining reaches 0 < limit
}

// entry returns the count of key, creating it, and evicting others when
// m is full. Holds t.mu.
func (t *Throttle) entry(m map[uint64]*failureCount, key uint64, slot int64) *failureCount {
	if f, ok := m[key]; ok {
		f.advance(slot)
		return f
	}
	if len(m) >= t.cfg.MaxKeys {
		t.evict(m, slot)
	}
	f := &failureCount{newest: slot}
	m[key] = f
	return f
}

// evict makes room in a full map: first every entry that no longer holds
// a failure or an attempt in progress; if that frees less than an eighth,
// arbitrary further entries (map order), so each eviction pays for many
// insertions. Dropping a live entry forgets its failures: the price of
// bounded memory, which the per-address limit keeps an attacker from
// exploiting cheaply.
func (t *Throttle) evict(m map[uint64]*failureCount, slot int64) {
	for k, f := range m {
		f.advance(slot)
		if f.total() == 0 && f.pending == 0 {
			delete(m, k)
		}
	}
	target := t.cfg.MaxKeys - max(t.cfg.MaxKeys/8, 1)
	for k, f := range m {
		if len(m) <= target {
			break
		}
		if f.pending == 0 {
			delete(m, k)
		}
	}
}

// MaxAccountKey is the longest account key in bytes: an email's limit
// (254), above every real account (MQTT keys are at most 69). Longer
// names, which can only fail, are counted by their first 254 bytes, so a
// key always fits in a notice to the other processes (Share).
const MaxAccountKey = 254

// AccountKey is account as the throttle counts it: lowercased, as emails
// are matched, and clipped to MaxAccountKey bytes at a character
// boundary. Lowercasing leaves valid UTF-8 (invalid bytes become U+FFFD)
// except on its ASCII path, which is valid already. Applying it again
// changes nothing.
func AccountKey(account string) string {
	account = strings.ToLower(account)
	if len(account) <= MaxAccountKey {
		return account
	}
	n := MaxAccountKey
	for n > 0 && !utf8.RuneStart(account[n]) {
		n--
	}
	return account[:n]
}

// AddressKey is addr as the throttle counts it: an IPv4-mapped address as
// IPv4, an IPv6 address as its /64 (which one client usually owns whole),
// without zone. Applying it again changes nothing.
func AddressKey(addr netip.Addr) netip.Addr {
	addr = addr.Unmap()
	if addr.Is6() {
		if p, err := addr.Prefix(64); err == nil {
			addr = p.Addr()
		}
	}
	return addr
}

// keys hashes the account and address keys, so an entry's size does not
// depend on what a client sends.
func (t *Throttle) keys(account string, addr netip.Addr) (acc, adr uint64) {
	return t.hashes(AccountKey(account), AddressKey(addr))
}

// hashes is keys of keys already made by AccountKey and AddressKey.
func (t *Throttle) hashes(account string, addr netip.Addr) (acc, adr uint64) {
	b := addr.As16() // IPv4 as ::ffff:a.b.c.d; an invalid address is one key (zeros)
	return maphash.String(t.seed, account), maphash.Bytes(t.seed, b[:])
}

// failureCount holds one key's failures per slot of the window, and its
// verifications in progress.
type failureCount struct {
	counts  [throttleSlots]int32
	newest  int64 // the slot counts[mod(newest)] belongs to
	pending int32
}

// advance moves the window to slot, clearing the slots it leaves.
func (f *failureCount) advance(slot int64) {
	if slot <= f.newest {
		return
	}
	if slot-f.newest >= throttleSlots {
		f.counts = [throttleSlots]int32{}
	} else {
		for s := f.newest + 1; s <= slot; s++ {
			f.counts[mod(s)] = 0
		}
	}
	f.newest = slot
}

// countAt is the count of slot without moving the window (for readers):
// slots outside the window held by counts have none.
func (f *failureCount) countAt(s int64) int32 {
	if s > f.newest || s <= f.newest-throttleSlots {
		return 0
	}
	return f.counts[mod(s)]
}

// totalAt is the failures within the window ending at slot, read only.
func (f *failureCount) totalAt(slot int64) int32 {
	var n int32
	for s := slot - throttleSlots + 1; s <= slot; s++ {
		n += f.countAt(s)
	}
	return n
}

func (f *failureCount) total() int32 {
	var n int32
	for _, c := range f.counts {
		n += c
	}
	return n
}

// mod is the index of slot in counts; slots before the origin (negative)
// hold nothing but are visited when the window reaches back past it.
func mod(slot int64) int { return int((slot%throttleSlots + throttleSlots) % throttleSlots) }
