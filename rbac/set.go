package rbac

import "math/bits"

// Set is a set of endpoint ids as a bitmap: ids are small and dense, so a
// membership test is one shift and one mask. The zero value is empty.
// Methods never modify their receiver.
type Set []uint64

// Has reports whether id is in the set.
func (s Set) Has(id int32) bool {
	w := int(id) >> 6
	return id >= 0 && w < len(s) && s[w]&(1<<(uint(id)&63)) != 0
}

// With returns the set plus id.
func (s Set) With(id int32) Set {
	if id < 0 {
		return s
	}
	w := int(id) >> 6
	out := make(Set, max(len(s), w+1))
	copy(out, s)
	out[w] |= 1 << (uint(id) & 63)
	return out
}

// Union returns the ids in either set.
func (s Set) Union(o Set) Set {
	out := make(Set, max(len(s), len(o)))
	copy(out, s)
	for i, w := range o {
		out[i] |= w
	}
	return out
}

// Minus returns the ids of s that are not in o.
func (s Set) Minus(o Set) Set {
	out := make(Set, len(s))
	copy(out, s)
	for i := range out {
		if i < len(o) {
			out[i] &^= o[i]
		}
	}
	return out
}

// IDs lists the ids in ascending order.
func (s Set) IDs() []int32 {
	ids := []int32{}
	for i, w := range s {
		for w != 0 {
			b := bits.TrailingZeros64(w)
			ids = append(ids, int32(i*64+b))
			w &^= 1 << uint(b)
		}
	}
	return ids
}
