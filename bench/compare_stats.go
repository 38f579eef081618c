package bench

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
)

// Comparison is both sides' medians of every numeric figure a scenario
// reported, and head's median over base's.
type Comparison struct {
	Keys  []string // every figure either side has, sorted
	Base  map[string]float64
	Head  map[string]float64
	Ratio map[string]float64 // head / base, where both sides have the figure and base's is not 0
}

// CompareRuns reduces each side's runs to medians. A figure counts for a
// side only when every run of that side reported it: a median over the
// runs that happened to report it would compare different things.
// Nested objects give dotted keys ("functions.mean.p50_ms").
func CompareRuns(base, head []map[string]any) Comparison {
	c := Comparison{Base: sideMedians(base), Head: sideMedians(head), Ratio: map[string]float64{}}
	seen := map[string]bool{}
	for _, m := range []map[string]float64{c.Base, c.Head} {
		for k := range m {
			if !seen[k] {
				seen[k] = true
				c.Keys = append(c.Keys, k)
			}
		}
	}
	sort.Strings(c.Keys)
	for k, b := range c.Base {
		// JSON has no infinity, and a ratio over 0 says nothing anyway.
		if h, ok := c.Head[k]; ok && b != 0 {
			c.Ratio[k] = h / b
		}
	}
	return c
}

func sideMedians(runs []map[string]any) map[string]float64 {
	samples := map[string][]float64{}
	for _, r := range runs {
		numericFigures("", r, samples)
	}
	out := map[string]float64{}
	for k, xs := range samples {
		if len(xs) == len(runs) {
			out[k] = midpointMedian(xs)
		}
	}
	return out
}

// numericFigures appends each numeric leaf of v to into[key]; booleans and
// strings are labels, not figures.
func numericFigures(prefix string, v map[string]any, into map[string][]float64) {
	for k, x := range v {
		key := prefix + k
		switch x := x.(type) {
		case float64:
			into[key] = append(into[key], x)
		case json.Number:
			if f, err := x.Float64(); err == nil {
				into[key] = append(into[key], f)
			}
		case map[string]any:
			numericFigures(key+".", x, into)
		}
	}
}

// midpointMedian averages the two middle values of an even count. Unlike
// Median (the upper middle, which scenarios report over odd counts), a
// comparison is often run with 2 or 4 rounds, where the upper middle
// would be the worse run's figure on one side and the better on the other.
func midpointMedian(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// LastJSONObject parses the last non-empty line of a scenario's output,
// the one JSON object every bdp-bench scenario ends with.
func LastJSONObject(out []byte) (map[string]any, error) {
	lines := bytes.Split(bytes.TrimRight(out, "\n\r\t "), []byte("\n"))
	last := bytes.TrimSpace(lines[len(lines)-1])
	if len(last) == 0 {
		return nil, errors.New("the scenario printed nothing")
	}
	var m map[string]any
	if err := json.Unmarshal(last, &m); err != nil {
		return nil, fmt.Errorf("its last line is no JSON object (%.120q): %w", last, err)
	}
	return m, nil
}

// WriteTable prints the comparison for people, one figure a line; the
// JSON object that follows it is for programs.
func (c Comparison) WriteTable(w io.Writer) error {
	cell := func(m map[string]float64, k string, f func(float64) string) string {
		if x, ok := m[k]; ok {
			return f(x)
		}
		return "-"
	}
	figure := func(x float64) string { return strconv.FormatFloat(x, 'g', 6, 64) }
	ratio := func(x float64) string { return strconv.FormatFloat(x, 'f', 3, 64) }
	if _, err := fmt.Fprintf(w, "%-32s %14s %14s %8s\n", "figure", "base median", "head median", "head/base"); err != nil {
		return err
	}
	for _, k := range c.Keys {
		if _, err := fmt.Fprintf(w, "%-32s %14s %14s %8s\n", k, cell(c.Base, k, figure), cell(c.Head, k, figure),
			cell(c.Ratio, k, ratio)); err != nil {
			return err
		}
	}
	return nil
}
