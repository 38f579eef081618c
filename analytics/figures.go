package analytics

import (
	"math"
	"strconv"
	"strings"
)

// The texts of an outcome are stored with marks where figures go, not
// with the figures written in: a reader sees KPIs in the units and
// currency they ask for (units_system, currency_system), and the text
// must say the same figure in the same unit. A mark is {id}, the figure
// with the identifier id (a KPI or a threshold of the outcome) followed by
// its unit, or {#id}, the number alone (for counts, or where the text
// names the unit in words). Fill writes them in.

// Figure is a figure as a reader sees it: converted to the reader's unit
// and rounded with Round.
type Figure struct {
	Value float64
	Unit  string
}

// Round is the precision every figure of a result is shown with, in the
// KPI list and in the texts alike: two decimals, or three significant
// digits for a figure below 1 in magnitude (a base load of 0.004 kW is
// not 0). It hides a float's noise (33.33333333333311 is 33.33).
func Round(v float64) float64 {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return v
	}
	decimals := 2
	if a := math.Abs(v); a < 1 {
		decimals = 2 - int(math.Floor(math.Log10(a)))
	}
	r, err := strconv.ParseFloat(strconv.FormatFloat(v, 'f', decimals, 64), 64)
	if err != nil {
		return v
	}
	return r
}

// Fill writes the figures into text, one language's side of a Text, in
// that language's number format (lang "de": decimal comma). A mark whose
// figure is unknown stays as it is; a text without marks (an outcome
// stored before texts had them) is returned unchanged.
func Fill(text, lang string, figures map[string]Figure) string {
	if !strings.Contains(text, "{") {
		return text
	}
	var b strings.Builder
	for {
		open := strings.IndexByte(text, '{')
		if open < 0 {
			break
		}
		end := strings.IndexByte(text[open:], '}')
		if end < 0 {
			break
		}
		end += open
		b.WriteString(text[:open])
		id, bare := text[open+1:end], false
		if strings.HasPrefix(id, "#") {
			id, bare = id[1:], true
		}
		f, ok := figures[id]
		switch {
		case !ok:
			b.WriteString(text[open : end+1])
		case bare:
			b.WriteString(numeral(f.Value, lang))
		default:
			b.WriteString(withUnit(numeral(f.Value, lang), f.Unit))
		}
		text = text[end+1:]
	}
	b.WriteString(text)
	return b.String()
}

// numeral writes v in lang's format: its shortest form, with a decimal
// comma in German.
func numeral(v float64, lang string) string {
	s := strconv.FormatFloat(v, 'f', -1, 64)
	if lang == "de" {
		s = strings.Replace(s, ".", ",", 1)
	}
	return s
}

// withUnit joins a number and its unit as both languages write them: a
// space between (also before %), no unit for a count.
func withUnit(n, unit string) string {
	switch unit {
	case "", "-", "count":
		return n
	}
	return n + " " + unit
}
