package chunkenc

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"slices"
)

// The times section (absent for a single point, whose time is the header's):
//
//	byte mode | uvarint unit | mode 0: uvarint d1, n-2 × zigzag (d_i - d_{i-1})
//	                         | mode 1: uvarint g, n-1 × zigzag (o_i - pred_i)
//
// where o_i = (t_i - t_0) / unit, d_i = o_i - o_{i-1}, and unit is the
// greatest common divisor of all the chunk's steps. Sensors report on a
// cadence, so the steps share a large divisor (60 s for minute data: every
// d_i is 1 and every delta-of-delta 0, a zero byte zstd makes almost free);
// jittered millisecond stamps still share 1000 µs, which keeps their varints
// short. The gcd is never worse than the largest power of ten dividing the
// steps, since that power divides the gcd.
//
// Mode 1 is for devices that sample on a grid of step g but stamp with
// jitter: pred_i is the grid point after the one nearest to o_{i-1}, so the
// residual is just the point's own jitter, where the delta-of-delta mixes
// three jitters (with six times the variance: measured 0.39 bytes a point
// more for ±2 s of jitter at millisecond resolution). The encoder picks the mode
// whose residuals have fewer significant bits (closer to what zstd's
// entropy coder pays than varint bytes); exact cadences cost zeros either way.
//
// Steps are computed in uint64: t_i > t_{i-1}, so the difference is positive
// and exact even across the whole int64 range, and the deltas of deltas wrap
// the same way in the encoder and the decoder.

const (
	timesDoD  = 0
	timesGrid = 1
	// maxGrid bounds offsets and grid steps in grid mode so that their
	// signed differences cannot overflow.
	maxGrid = 1 << 61
)

// appendTimes appends the times section of pts (len(pts) >= 1, strictly
// increasing) to b.
func appendTimes(b []byte, pts []Point, s *encScratch) []byte {
	if len(pts) < 2 {
		return b
	}
	var unit uint64
	for i := 1; i < len(pts); i++ {
		step := uint64(pts[i].UnixMicro) - uint64(pts[i-1].UnixMicro)
		// Once unit divides the next step, gcd is one modulo: cheap in the
		// common case of a regular cadence.
		if unit == 0 || step%unit != 0 {
			unit = gcd(unit, step)
		}
	}
	t0 := uint64(pts[0].UnixMicro)
	o := s.offs[:len(pts)]
	for i := range pts {
		o[i] = (uint64(pts[i].UnixMicro) - t0) / unit
	}
	bestG, best := uint64(0), 0
	for i := 2; i < len(o); i++ {
		best += zigzagBits(int64(o[i] - 2*o[i-1] + o[i-2]))
	}
	if o[len(o)-1] < maxGrid {
		for _, g := range gridSteps(o) {
			if g >= maxGrid {
				continue
			}
			if c := gridCost(o, g); c < best {
				bestG, best = g, c
			}
		}
	}
	if bestG == 0 {
		b = append(b, timesDoD)
		b = binary.AppendUvarint(b, unit)
		b = binary.AppendUvarint(b, o[1])
		for i := 2; i < len(o); i++ {
			b = appendZigzag(b, int64(o[i]-2*o[i-1]+o[i-2]))
		}
		return b
	}
	b = append(b, timesGrid)
	b = binary.AppendUvarint(b, unit)
	b = binary.AppendUvarint(b, bestG)
	var grid uint64
	for i := 1; i < len(o); i++ {
		b = appendZigzag(b, int64(o[i]-(grid+bestG)))
		grid = nearestGrid(grid+bestG, o[i], bestG)
	}
	return b
}

// gridSteps proposes grid steps for offsets o (len(o) >= 2, last below
// maxGrid). The grid must be exact, or the prediction drifts a little each
// step: the median step is only near it, but the mean of the regular steps
// (those within half a median of it) telescopes to the span over the count,
// which for jitter J is within J/count of the cadence, so rounded it is the
// cadence for a long chunk. Rounded to two significant digits it is the
// cadence of a short one too, as cadences are round numbers.
func gridSteps(o []uint64) [3]uint64 {
	var sample [63]uint64
	n := min(len(o)-1, len(sample))
	for k := range n {
		i := 1 + k*(len(o)-1)/n
		sample[k] = o[i] - o[i-1]
	}
	slices.Sort(sample[:n])
	m := sample[n/2]
	var sum, cnt uint64
	for i := 1; i < len(o); i++ {
		if d := o[i] - o[i-1]; d >= m-m/2 && d <= m+m/2 {
			sum, cnt = sum+d, cnt+1
		}
	}
	mean := (sum + cnt/2) / cnt
	round := uint64(1)
	for mean/round >= 100 {
		round *= 10
	}
	return [3]uint64{m, mean, (mean + round/2) / round * round}
}

// gridCost is the significant bits of the residuals of o on the grid g.
func gridCost(o []uint64, g uint64) int {
	c := 0
	var grid uint64
	for i := 1; i < len(o); i++ {
		c += zigzagBits(int64(o[i] - (grid + g)))
		grid = nearestGrid(grid+g, o[i], g)
	}
	return c
}

// nearestGrid returns the multiple of g nearest to o, given that pred is a
// multiple of g and usually that one: the common case costs a comparison,
// a gap a division. o, pred and g are below maxGrid.
func nearestGrid(pred, o, g uint64) uint64 {
	diff := int64(o) - int64(pred)
	if half := int64(g / 2); -half <= diff && diff <= half {
		return pred
	}
	k, r := diff/int64(g), diff%int64(g)
	if 2*r > int64(g) {
		k++
	} else if 2*r < -int64(g) {
		k--
	}
	return uint64(int64(pred) + k*int64(g))
}

func gcd(a, b uint64) uint64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

func appendZigzag(b []byte, v int64) []byte {
	u := uint64(v<<1) ^ uint64(v>>63)
	if u < 0x80 {
		return append(b, byte(u))
	}
	return binary.AppendUvarint(b, u)
}

// uvarint reads a uvarint at b[i:], returning the value and the index after
// it, or a negative index when b holds no valid varint there. Decoding is
// mostly varints, so it takes up to 8 bytes in one word: the first byte
// without the continuation bit ends the varint, and three mask-and-shift
// steps squeeze out the continuation bits. Longer varints and the last bytes
// of a section take the byte-at-a-time path.
func uvarint(b []byte, i int) (uint64, int) {
	if i >= 0 && i+8 <= len(b) {
		w := binary.LittleEndian.Uint64(b[i:])
		if stop := ^w & 0x8080808080808080; stop != 0 {
			n := bits.TrailingZeros64(stop) + 1 // bits up to the stop bit
			return squeeze(w & (uint64(1)<<n - 1)), i + n/8
		}
	}
	return uvarintSlow(b, i)
}

// squeeze drops the continuation bits of up to 8 varint bytes in w.
func squeeze(w uint64) uint64 {
	w &= 0x7f7f7f7f7f7f7f7f
	w = w&0x007f007f007f007f | w&0x7f007f007f007f00>>1
	w = w&0x00003fff00003fff | w&0x3fff00003fff0000>>2
	return w&0x000000000fffffff | w&0x0fffffff00000000>>4
}

func uvarintSlow(b []byte, i int) (uint64, int) {
	if i < 0 || i >= len(b) {
		return 0, -1
	}
	v, k := binary.Uvarint(b[i:])
	if k <= 0 {
		return 0, -1
	}
	return v, i + k
}

func unzigzag(u uint64) int64 { return int64(u>>1) ^ -int64(u&1) }

// decodeTimes fills pts[i].UnixMicro from the times section, which must be
// consumed exactly. Every offset is checked to increase and to stay within
// the header's span, and the last time must be the header's, so garbage
// cannot produce times out of order or outside the chunk's bounds.
func decodeTimes(pts []Point, body []byte, h Header) error {
	pts[0].UnixMicro = h.First
	if len(pts) == 1 {
		if len(body) != 0 {
			return fmt.Errorf("%w: times for a single point", ErrCorrupt)
		}
		return nil
	}
	if len(body) < 1 || body[0] > timesGrid {
		return fmt.Errorf("%w: bad times mode", ErrCorrupt)
	}
	mode, span := body[0], uint64(h.Last)-uint64(h.First)
	unit, i := uvarint(body, 1)
	if i < 0 || unit == 0 || span%unit != 0 {
		return fmt.Errorf("%w: bad time unit", ErrCorrupt)
	}
	// Offsets o are in units from the first time and must rise to maxO;
	// o*unit then cannot overflow.
	maxO, base := span/unit, uint64(h.First)
	var o uint64
	if mode == timesDoD {
		d, k := uvarint(body, i)
		for j := 1; j < len(pts); j++ {
			if j > 1 {
				var u uint64
				if k < len(body) && body[k] < 0x80 {
					u, k = uint64(body[k]), k+1
				} else if u, k = uvarint(body, k); k < 0 {
					return fmt.Errorf("%w: truncated times", ErrCorrupt)
				}
				d += uint64(unzigzag(u))
			}
			if k < 0 || d-1 >= maxO-o { // d == 0 wraps and fails too
				return fmt.Errorf("%w: bad time step", ErrCorrupt)
			}
			o += d
			pts[j].UnixMicro = int64(base + o*unit)
		}
		i = k
	} else {
		g, k := uvarint(body, i)
		if k < 0 || g == 0 || g >= maxGrid || maxO >= maxGrid {
			return fmt.Errorf("%w: bad time grid", ErrCorrupt)
		}
		var grid uint64
		for j := 1; j < len(pts); j++ {
			var u uint64
			if k < len(body) && body[k] < 0x80 {
				u, k = uint64(body[k]), k+1
			} else if u, k = uvarint(body, k); k < 0 {
				return fmt.Errorf("%w: truncated times", ErrCorrupt)
			}
			pred := grid + g
			next := pred + uint64(unzigzag(u))
			if next <= o || next > maxO {
				return fmt.Errorf("%w: bad time step", ErrCorrupt)
			}
			o = next
			grid = nearestGrid(pred, o, g)
			pts[j].UnixMicro = int64(base + o*unit)
		}
		i = k
	}
	if i != len(body) || o != maxO {
		return fmt.Errorf("%w: times do not end at the header's last time", ErrCorrupt)
	}
	return nil
}
