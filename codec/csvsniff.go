package codec

import "bytes"

// Dialect detection of the CSV import: the delimiter, the quote character
// and whether line 1 is a header, judged on the first lines of the file.

// sniff picks the dialect under which most sample lines are valid (three
// fields, a number, a timestamp); lines with three fields count as a
// tie-breaker. Then it decides on the header.
func sniff(sample []byte, eof bool) Dialect {
	lines := sampleLines(sample, eof)
	best, bestScore := Dialect{Delimiter: ',', Quote: '"'}, 0
	for _, q := range csvQuotes {
		if q == '\'' && bytes.Count(sample, []byte{'\''}) <= bytes.Count(sample, []byte{'"'}) {
			// The quote character is the one used more; else a line that
			// is broken under " might tip the choice to '.
			continue
		}
		for _, d := range csvDelimiters {
			if score := sniffScore(lines, Dialect{Delimiter: d, Quote: q}); score > bestScore {
				best, bestScore = Dialect{Delimiter: d, Quote: q}, score
			}
		}
	}
	if len(lines) > 0 {
		v1, t1, ok1 := sampleFields(lines[0], best)
		header := ok1 && !valueParses(v1) && !timeParses(t1)
		if header && len(lines) > 1 {
			v2, t2, ok2 := sampleFields(lines[1], best)
			header = ok2 && valueParses(v2) && timeParses(t2)
		}
		best.Header = header
	}
	return best
}

// sniffScore is 3 for each valid line under d and 1 for each line with
// three fields but a bad value or timestamp.
func sniffScore(lines [][]byte, d Dialect) int {
	score := 0
	for _, l := range lines {
		if v, ts, ok := sampleFields(l, d); ok {
			score++
			if valueParses(v) && timeParses(ts) {
				score += 2
			}
		}
	}
	return score
}

// sampleLines returns the first non-blank lines of sample; lines[0] is
// the file's line 1 only if that is not blank (a header must be there).
func sampleLines(sample []byte, eof bool) [][]byte {
	var out [][]byte
	for len(sample) > 0 && len(out) < csvSniffLines {
		i := bytes.IndexByte(sample, '\n')
		if i < 0 && !eof {
			break // a partial line
		}
		if i < 0 {
			i = len(sample)
		}
		l := trimCR(sample[:i])
		if !isBlank(l) {
			out = append(out, l)
		} else if len(out) == 0 {
			out = append(out, nil) // a blank line 1 is no header
		}
		sample = sample[min(i+1, len(sample)):]
	}
	return out
}

// sampleFields returns the value and timestamp of a sample line with
// three fields.
func sampleFields(line []byte, d Dialect) (value, ts []byte, ok bool) {
	var f [3][]byte
	n, reason := split(line, d, &f)
	if reason != "" || n != 3 {
		return nil, nil, false
	}
	return f[1], f[2], true
}

func valueParses(b []byte) bool { _, reason := parseValue(b); return reason == "" }

func timeParses(b []byte) bool { _, ok := parseTimestamp(b); return ok }
