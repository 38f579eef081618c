package window

import (
	"math"
	"strconv"
	"strings"
	"time"
	"unsafe"
)

// SlotBytes is what one kept observation costs in a window's buffer: an
// Observation by value (a time.Time of 24 bytes and a float64), no pointer
// behind it.
const SlotBytes = int64(unsafe.Sizeof(Observation{}))

// pinOverhead is the part of a pin that does not depend on its data: the
// Pin with its window by value, the cron state, the median's scratch slice
// header.
const pinOverhead = int64(unsafe.Sizeof(Pin{}) + unsafe.Sizeof(cronState{}) + unsafe.Sizeof([]float64{}))

// MaxKept is the most observations a window of r holds when its source
// sends at most one observation every interval: n for a count window; for a
// time window the observations of its span; for a cron window those of its
// longest period (cronSpan). Never more than MaxObservations, which every
// window enforces whatever the source's rate, so a time or cron window
// whose longest span cannot be bounded cheaply (a cron schedule whose
// day-of-month or month is restricted) counts at that cap.
func (r Range) MaxKept(interval time.Duration) int {
	if r.Count > 0 {
		return r.Count
	}
	span := r.Duration
	if span == 0 {
		span = min(cronSpan(r.CronStart), cronSpan(r.CronEnd))
	}
	if interval <= 0 || span >= time.Duration(MaxObservations)*interval {
		return MaxObservations
	}
	// (latest-d, latest] and [S, E) hold at most ⌈span/interval⌉
	// observations spaced by interval; one more for the observation a time
	// window keeps for a moment before it evicts the oldest.
	return int((span+interval-1)/interval) + 1
}

// EstimateBytes is an upper bound of the heap a pin of range r and
// aggregate a holds once its window is full, its source sending at most one
// observation every interval. It follows buffer.go:
//
//   - a count window allocates n + countSlack(n) slots once (addCount);
//   - a time or cron window grows by append. It grows only when its slice
//     is full and the dead prefix is under an eighth of it, so before a
//     growth the slice held fewer than 8/7 of the kept observations, and
//     after it at most Go's growth of that (double below 256 slots, then
//     about 1.25 times), rounded up to the allocator's size class;
//   - a median over more than 64 observations keeps a scratch copy of the
//     values (8 bytes each), made as large as the window.
//
// Garbage (a slice just outgrown) is not counted: it goes at the next
// collection.
func EstimateBytes(r Range, a Aggregate, interval time.Duration) int64 {
	kept := r.MaxKept(interval)
	var slots int
	if r.Count > 0 {
		slots = r.Count + countSlack(r.Count)
	} else {
		slots = appendGrowth((kept*8+6)/7 + 1)
	}
	est := pinOverhead + allocSize(int64(slots)*SlotBytes)
	if a == Median && kept > 64 {
		est += allocSize(int64(kept) * 8)
	}
	return est
}

// appendGrowth is the capacity append gives a full slice of c elements
// (runtime.nextslicecap since Go 1.20, before size-class rounding).
func appendGrowth(c int) int {
	if c < 256 {
		return max(2*c, 1)
	}
	return c + (c+3*256)/4
}

// allocSize bounds what the allocator hands out for b bytes: small sizes
// round up to a size class (at most 12.5% more), large ones to 8 KiB pages.
func allocSize(b int64) int64 {
	if b <= 32<<10 {
		return b + (b+7)/8
	}
	const page = 8 << 10
	return (b + page - 1) / page * page
}

// cronSpan bounds the longest stretch between two consecutive points of a
// five-field cron schedule: a cron window collects from a start point to
// the first end point after it and is cleared at the next start point, so
// its longest period is at most the smaller of its two schedules' spans.
// A schedule that fires every day the same way (day of month, month and
// weekday all "*") repeats daily, one that differs only by weekday repeats
// weekly: its gaps come from one cycle of the minute and hour fields. Other
// schedules (the 31st, February, "L") are not worked out: their span is
// unbounded, which MaxKept turns into MaxObservations.
func cronSpan(expr string) time.Duration {
	const unbounded = time.Duration(math.MaxInt64)
	f := strings.Fields(expr)
	if len(f) != 5 || f[2] != "*" || f[3] != "*" {
		return unbounded
	}
	minutes, ok1 := cronSet(f[0], 0, 59)
	hours, ok2 := cronSet(f[1], 0, 23)
	days, ok3 := cronSet(f[4], 0, 7)
	if !ok1 || !ok2 || !ok3 {
		return unbounded
	}
	if days[7] { // 7 is Sunday too
		days[0] = true
	}
	// The minutes of one week at which the schedule fires, then the largest
	// gap between neighbours, the last one wrapping to the first of the
	// next week.
	const week = 7 * 24 * 60
	first, prev, gap := -1, -1, 0
	for m := 0; m < week; m++ {
		if !days[m/(24*60)] || !hours[m/60%24] || !minutes[m%60] {
			continue
		}
		if first < 0 {
			first = m
		} else {
			gap = max(gap, m-prev)
		}
		prev = m
	}
	if first < 0 {
		return unbounded
	}
	gap = max(gap, first+week-prev)
	return time.Duration(gap) * time.Minute
}

// cronSet reads one numeric cron field (lists of *, n, n-m, each with an
// optional /step) into the set of values from lo to hi; ok is false for
// any other syntax (names, L, W, #), which the caller then does not bound.
func cronSet(field string, lo, hi int) (set [60]bool, ok bool) {
	for _, item := range strings.Split(field, ",") {
		base, step, stepped := item, 1, false
		if parts := strings.Split(item, "/"); len(parts) == 2 {
			s, err := strconv.Atoi(parts[1])
			if err != nil || s < 1 {
				return set, false
			}
			base, step, stepped = parts[0], s, true
		} else if len(parts) != 1 {
			return set, false
		}
		from, to := lo, hi
		switch r := strings.Split(base, "-"); {
		case base == "*":
		case len(r) == 1:
			v, err := strconv.Atoi(base)
			if err != nil {
				return set, false
			}
			from = v
			if !stepped {
				to = v // "5" alone; "5/10" runs from 5 to hi
			}
		case len(r) == 2:
			a, errA := strconv.Atoi(r[0])
			b, errB := strconv.Atoi(r[1])
			if errA != nil || errB != nil {
				return set, false
			}
			from, to = a, b
		default:
			return set, false
		}
		if from < lo || to > hi || from > to {
			return set, false
		}
		for v := from; v <= to; v += step {
			set[v] = true
		}
	}
	return set, true
}

// HeldBytes is what the calculation's windows hold now: each pin, its
// window's buffer (its capacity, in size classes), the cron state and a
// median's scratch where there are: the figure EstimateBytes bounds,
// measured.
func (c *Calc) HeldBytes() int64 {
	var n int64
	for _, p := range c.pins {
		n += allocSize(int64(unsafe.Sizeof(Pin{}))) + allocSize(int64(cap(p.w.buf))*SlotBytes)
		if p.w.cron != nil {
			n += allocSize(int64(unsafe.Sizeof(cronState{})))
		}
		if p.scratch != nil {
			n += allocSize(int64(unsafe.Sizeof([]float64{}))) + allocSize(int64(cap(*p.scratch))*8)
		}
	}
	return n
}
