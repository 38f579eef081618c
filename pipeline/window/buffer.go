package window

import "time"

// buffer holds a window's observations in one contiguous slice, sorted by
// strictly increasing time: the contents are buf[head:]. Dropping the oldest
// only advances head; the dead prefix is reclaimed by sliding the contents
// to the front when the slice is full. This keeps what a ring buffer gives
// (amortised O(1) append and drop, no allocation per observation) while the
// contents stay one slice that aggregates read in place, where a ring would
// wrap and need copying.
type buffer struct {
	buf  []Observation
	head int
}

// obs is the contents, capped so that a caller's append cannot write into
// the buffer.
func (b *buffer) obs() []Observation { return b.buf[b.head:len(b.buf):len(b.buf)] }

func (b *buffer) len() int { return len(b.buf) - b.head }

func (b *buffer) clear() { b.buf, b.head = b.buf[:0], 0 }

// dropOldest removes the first k observations.
func (b *buffer) dropOldest(k int) {
	b.head += k
	if b.head == len(b.buf) {
		b.clear()
	}
}

// search is the index (relative to head) of the first observation at or
// after t. Appending in time order is the common case, so it checks the end
// before a binary search.
func (b *buffer) search(t time.Time) int {
	obs := b.buf[b.head:]
	n := len(obs)
	if n == 0 || obs[n-1].Time.Before(t) {
		return n
	}
	lo, hi := 0, n
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if obs[m].Time.Before(t) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// after is the index (relative to head) of the first observation after t.
func (b *buffer) after(t time.Time) int {
	obs := b.buf[b.head:]
	n := len(obs)
	if n == 0 || !obs[n-1].Time.After(t) {
		return n
	}
	lo, hi := 0, n
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if obs[m].Time.After(t) {
			hi = m
		} else {
			lo = m + 1
		}
	}
	return lo
}

// countUpTo is the number of observations at or before t, counted from the
// oldest: a time window evicts one or two per observation, so a scan beats
// a binary search, and each observation is passed over once before it goes.
func (b *buffer) countUpTo(t time.Time) int {
	k := 0
	for _, o := range b.buf[b.head:] {
		if o.Time.After(t) {
			break
		}
		k++
	}
	return k
}

// put stores o in time order: a value at an existing time replaces that
// observation's value (decisions.md 4). It returns the index of o.
func (b *buffer) put(o Observation) int {
	i := b.search(o.Time)
	if i < b.len() && b.buf[b.head+i].Time.Equal(o.Time) {
		b.buf[b.head+i].Value = o.Value
		return i
	}
	b.insert(i, o)
	return i
}

// insert puts o at index i (relative to head), shifting newer observations
// one place up; late data is rare and usually lands near the end, so the
// shift is short. A full slice whose dead prefix is at least an eighth of it
// is compacted instead of grown: copying at most 7/8 of the slice to win 1/8
// keeps the cost amortised O(1) per observation, and a count window (whose
// slack is at least a seventh of n, see addCount) then never grows.
func (b *buffer) insert(i int, o Observation) {
	if c := cap(b.buf); len(b.buf) == c && b.head > 0 && b.head >= c/8 {
		b.compact(c)
	}
	b.buf = append(b.buf, Observation{})
	at := b.head + i
	copy(b.buf[at+1:], b.buf[at:len(b.buf)-1])
	b.buf[at] = o
}

// compact slides the contents to the front of a slice of capacity c, a new
// one when c differs from the current capacity.
func (b *buffer) compact(c int) {
	live := b.buf[b.head:]
	if c != cap(b.buf) {
		nb := make([]Observation, len(live), c)
		copy(nb, live)
		b.buf, b.head = nb, 0
		return
	}
	// No clearing of the tail: times are UTC (nil location), so the dead
	// slots hold no pointers worth releasing.
	n := copy(b.buf, live)
	b.buf, b.head = b.buf[:n], 0
}

// shrink gives memory back after a burst: when the contents fill less than
// a quarter of a large slice, it moves them into one twice their size.
func (b *buffer) shrink() {
	if c := cap(b.buf); c > 64 && b.len() < c/4 {
		b.compact(max(2*b.len(), 16))
	}
}
