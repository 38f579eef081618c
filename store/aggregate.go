package store

import (
	"cmp"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// Sampled reads over sealed weeks are aggregated here, in Go, from the
// decoded chunks and the head rows; over rows alone PostgreSQL aggregates
// (ReadSampled). Both must answer the same bits, so this file does what
// PostgreSQL 15 does for float8, step for step:
//
//   - avg: float8_accum's Youngs-Cramer state (N, Sx, Sxx), the rows in
//     time order (the index order PostgreSQL reads them in); Sx or Sxx
//     overflowing is SQLSTATE 22003, and ReadSampled then asks
//     avg(value::numeric), which rounds each value to 15 significant
//     digits (float8_numeric's %.15g), sums exactly, divides at
//     select_div_scale's scale rounding half away from zero, and parses
//     the decimal back (numeric_float8);
//   - percentile_cont(0.5): lo + (hi - lo) * 0.5 of the two middle values
//     (float8_lerp); wide, of the halved values, times two;
//   - mode(): the most frequent value, the smallest among equals;
//   - min, max, count, distinct as in SQL.
//
// Values are finite: ingestion refuses NaN and infinities.

// errAggregateOverflow stands for SQLSTATE 22003 in the Go aggregates, so
// ReadSampled's fallback and its answer work alike on both paths.
var errAggregateOverflow = &pgconn.PgError{Code: "22003", Message: "value out of range: overflow"}

// pointSource yields points in ascending time order, one per time;
// false at the end.
type pointSource func() (Point, bool, error)

// slicePoints is a pointSource over points already read.
func slicePoints(pts []Point) pointSource {
	i := 0
	return func() (Point, bool, error) {
		if i == len(pts) {
			return Point{}, false, nil
		}
		i++
		return pts[i-1], true, nil
	}
}

// aggregateBins answers what ReadSampled's SQL answers for the points of
// next: one point per interval that holds observations (distinct: one
// per value), in ascending order; wide is aggregateWideSQL's variant. It
// holds one interval's values at a time.
func aggregateBins(next pointSource, every time.Duration, origin time.Time, agg Aggregation, wide bool) ([]Point, error) {
	step := every.Microseconds()
	var out []Point
	var values []float64
	bin := int64(0)
	flush := func() error {
		if len(values) == 0 {
			return nil
		}
		at := time.UnixMicro(bin).UTC()
		if agg == Distinct {
			for _, v := range distinctValues(values) {
				out = append(out, Point{Time: at, Value: v})
			}
			if len(out) > MaxReadPoints {
				return ErrOverReadLimit
			}
			return nil
		}
		v, err := aggregateValues(values, agg, wide)
		out = append(out, Point{Time: at, Value: v})
		return err
	}
	for {
		p, ok, err := next()
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		if b := binMicros(p.Time, step, origin); b != bin || len(values) == 0 {
			if err := flush(); err != nil {
				return nil, err
			}
			bin, values = b, values[:0]
		}
		values = append(values, p.Value)
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return out, nil
}

// aggregateValues is one interval's aggregate; values is in time order
// and may be reordered.
func aggregateValues(values []float64, agg Aggregation, wide bool) (float64, error) {
	switch agg {
	case Mean:
		if wide {
			return numericMean(values), nil
		}
		return youngsCramerMean(values)
	case Min:
		return slices.Min(values), nil
	case Max:
		return slices.Max(values), nil
	case Count:
		return float64(len(values)), nil
	case Median:
		return median(values, wide)
	case Mode:
		return mode(values), nil
	}
	return 0, errUnknownAggregation
}

var errUnknownAggregation = &pgconn.PgError{Code: "42883", Message: "unknown aggregation"}

// youngsCramerMean is avg(float8): float8_accum over the values in order,
// then Sx / N.
func youngsCramerMean(values []float64) (float64, error) {
	var n, sx, sxx float64
	for _, v := range values {
		oldN := n
		n++
		sx += v
		if oldN > 0 {
			// The conversions round each product, as C does without
			// FMA: Go may otherwise fuse a multiply and an add.
			tmp := float64(v*n) - sx
			sxx += float64(tmp*tmp) / float64(n*oldN)
			if math.IsInf(sx, 0) || math.IsInf(sxx, 0) {
				return 0, errAggregateOverflow
			}
		}
	}
	return sx / n, nil
}

// numericMean is avg(value::numeric)::double precision.
func numericMean(values []float64) float64 {
	sum := new(big.Rat)
	dscale := 0
	for _, v := range values {
		d, scale := float8Numeric(v)
		sum.Add(sum, d)
		dscale = max(dscale, scale)
	}
	n := new(big.Rat).SetInt64(int64(len(values)))
	rscale := selectDivScale(sum, dscale, n)
	q := new(big.Rat).Quo(sum, n)
	f, _ := strconv.ParseFloat(roundHalfAway(q, rscale), 64)
	return f
}

// float8Numeric is float8_numeric: the value printed with %.15g, read as
// a numeric; it answers the exact decimal and its display scale (digits
// after the point, %g having dropped trailing zeros).
func float8Numeric(v float64) (*big.Rat, int) {
	s := strconv.FormatFloat(v, 'e', 14, 64) // 15 significant digits, rounded as %.15g
	mant, exp, _ := strings.Cut(s, "e")
	e, _ := strconv.Atoi(exp)
	digits := strings.TrimRight(strings.Replace(strings.TrimPrefix(mant, "-"), ".", "", 1), "0")
	r, _ := new(big.Rat).SetString(s)
	if digits == "" {
		return r, 0 // zero
	}
	// digits d1d2...dk × 10^(e-k+1): k-1-e digits after the point.
	return r, max(0, len(digits)-1-e)
}

// selectDivScale is PostgreSQL's select_div_scale for sum / n, sum of
// display scale dscale and n a positive integer (scale 0).
func selectDivScale(sum *big.Rat, dscale int, n *big.Rat) int {
	const minSigDigits, decDigits, maxDisplayScale = 16, 4, 1000
	w1, d1 := nbaseLead(sum)
	w2, d2 := nbaseLead(n)
	qweight := w1 - w2
	if d1 <= d2 {
		qweight--
	}
	rscale := minSigDigits - qweight*decDigits
	rscale = max(rscale, dscale, 0)
	return min(rscale, maxDisplayScale)
}

// nbaseLead is the weight and value of the first non-zero base-10000
// digit of |x| (0, 0 for zero), as numeric stores it.
func nbaseLead(x *big.Rat) (weight int, digit int64) {
	a := new(big.Rat).Abs(x)
	if a.Sign() == 0 {
		return 0, 0
	}
	nbase := big.NewRat(10000, 1)
	pow := big.NewRat(1, 1) // 10000^weight
	for a.Cmp(pow) < 0 {
		pow.Quo(pow, nbase)
		weight--
	}
	for next := new(big.Rat).Mul(pow, nbase); a.Cmp(next) >= 0; next.Mul(pow, nbase) {
		pow.Set(next)
		weight++
	}
	q := new(big.Rat).Quo(a, pow)
	return weight, new(big.Int).Quo(q.Num(), q.Denom()).Int64()
}

// roundHalfAway prints q rounded to scale decimal places, half away from
// zero (numeric's round_var).
func roundHalfAway(q *big.Rat, scale int) string {
	pow := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil)
	num := new(big.Int).Mul(new(big.Int).Abs(q.Num()), pow)
	whole, rem := new(big.Int).QuoRem(num, q.Denom(), new(big.Int))
	if rem.Lsh(rem, 1).Cmp(q.Denom()) >= 0 {
		whole.Add(whole, big.NewInt(1))
	}
	s := whole.String()
	if q.Sign() < 0 {
		s = "-" + s
	}
	return s + "e-" + strconv.Itoa(scale)
}

// median is percentile_cont(0.5); wide: of the halved values, doubled.
func median(values []float64, wide bool) (float64, error) {
	slices.SortFunc(values, cmp.Compare[float64])
	n := len(values)
	lo, hi := values[(n-1)/2], values[n/2]
	if wide {
		lo, hi = lo*0.5, hi*0.5
	}
	m := lo
	if n%2 == 0 {
		m = lo + float64((hi-lo)*0.5)
	}
	if wide {
		if m *= 2; math.IsInf(m, 0) {
			return 0, errAggregateOverflow
		}
	}
	return m, nil
}

// mode is mode(): the most frequent value, the smallest among equally
// frequent ones (-0 and 0 are one value, as in float8 comparisons).
func mode(values []float64) float64 {
	slices.SortFunc(values, cmp.Compare[float64])
	best, bestN := values[0], 0
	for i := 0; i < len(values); {
		j := i
		for j < len(values) && values[j] == values[i] {
			j++
		}
		if j-i > bestN {
			best, bestN = values[i], j-i
		}
		i = j
	}
	return best
}

// distinctValues are the distinct values, ascending.
func distinctValues(values []float64) []float64 {
	slices.SortFunc(values, cmp.Compare[float64])
	return slices.CompactFunc(values, func(a, b float64) bool { return a == b })
}

// sampleFrom is ReadSampled over the points a source yields: the
// aggregates, the wide variant where PostgreSQL's would overflow or
// answer an infinity (of a source made anew: src makes one), and the same
// answers and errors.
func sampleFrom(src func() (pointSource, error), every time.Duration, origin time.Time, agg Aggregation) ([]Point, error) {
	next, err := src()
	if err != nil {
		return nil, err
	}
	out, err := aggregateBins(next, every, origin, agg, false)
	if _, ok := aggregateWideSQL[agg]; ok && (isOutOfRange(err) || (err == nil && anyInfinite(out))) {
		if next, err = src(); err != nil {
			return nil, err
		}
		out, err = aggregateBins(next, every, origin, agg, true)
	}
	return out, err
}
