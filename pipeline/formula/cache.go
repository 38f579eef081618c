package formula

import (
	"runtime"
	"strings"
	"sync"
	"weak"
)

// Cache compiles formulas so that Programs of the same formula share one
// compiled part. A compiled formula (the expr bytecode, its constants and
// function table, and the generated source) takes from about 1 KB for
// P1 + P2 to about 5 KB for a five-pin formula that calls functions, while
// a further Program takes a pointer (BenchmarkProgramHeap): the VMs that
// run a formula are pooled with its compiled part, so Programs sharing it
// share them too. Thousands of virtual datapoints often use a handful of
// formulas, so sharing saves most of that memory, and the compile time
// (tens of microseconds against well under one for a hit).
//
// The cache holds its entries weakly: a compiled formula that no Program
// uses any more is collected as usual, and its entry is then removed, so a
// long-running process whose formulas change does not accumulate old ones.
// Errors are not cached. A Cache is safe for concurrent use; create it with
// NewCache.
type Cache struct {
	mu sync.Mutex
	m  map[string]weak.Pointer[compiled]
}

// NewCache returns an empty Cache.
func NewCache() *Cache {
	return &Cache{m: make(map[string]weak.Pointer[compiled])}
}

// Compile is like the package's Compile, but the returned Program shares its
// compiled part with every other live Program this cache returned for the
// same src and pins (in the same order).
func (c *Cache) Compile(src string, pins []string) (*Program, error) {
	// Checking the pins first makes the key unambiguous (see cacheKey) and
	// fails a bad list the same way as Compile, whatever is cached.
	if err := checkPins(pins); err != nil {
		return nil, err
	}
	key := cacheKey(src, pins)
	if cp := c.lookup(key); cp != nil {
		return &Program{c: cp}, nil
	}
	// Compile without the lock, so that compiling one formula does not hold
	// up lookups of others. Two goroutines may compile the same formula at
	// once; the first to store it wins and the other's copy is dropped.
	cp, err := compile(src, pins)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old := c.m[key].Value(); old != nil {
		return &Program{c: old}, nil
	}
	wp := weak.Make(cp)
	c.m[key] = wp
	// The cleanup's argument holds no strong reference to cp, which would
	// keep it alive for ever.
	runtime.AddCleanup(cp, c.remove, cacheEntry{key: key, wp: wp})
	return &Program{c: cp}, nil
}

func (c *Cache) lookup(key string) *compiled {
	c.mu.Lock()
	defer c.mu.Unlock()
	// A missing key gives the zero weak.Pointer, whose Value is nil, as is
	// that of an entry whose formula was collected but not yet removed.
	return c.m[key].Value()
}

// cacheEntry identifies a map entry for its cleanup.
type cacheEntry struct {
	key string
	wp  weak.Pointer[compiled]
}

// remove runs once e's compiled formula has been collected. By then the key
// may hold a newer compilation of the same formula (stored after the old
// one's weak pointer went nil), which must stay.
func (c *Cache) remove(e cacheEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m[e.key] == e.wp {
		delete(c.m, e.key)
	}
}

// len returns the number of entries, including any whose formula has been
// collected but whose cleanup has not run yet. For tests.
func (c *Cache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}

// cacheKey is injective for pins lists that passed checkPins: a pin name is
// a non-empty identifier, so it contains neither ',' nor NUL, and the first
// NUL in the key ends the pins. src, which may contain anything, comes last.
func cacheKey(src string, pins []string) string {
	var b strings.Builder
	n := len(pins) + len(src)
	for _, p := range pins {
		n += len(p)
	}
	b.Grow(n)
	for i, p := range pins {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(p)
	}
	b.WriteByte(0)
	b.WriteString(src)
	return b.String()
}
