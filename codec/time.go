package codec

import (
	"strings"
	"time"
)

// Timestamps: RFC 3339 as uploads and gateways send it, and the forms of
// the CSV import, parsed without time.Parse for the RFC 3339 shapes that
// nearly every file uses.

// ParseRFC3339 parses an RFC 3339 time as uploads and gateways send it.
// RFC 3339 lets the T and Z be lowercase (section 5.6), which Go's layout
// does not; no other letter is valid, so upper-casing the whole is safe.
func ParseRFC3339(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil && strings.ContainsAny(s, "tz") {
		t, err = time.Parse(time.RFC3339Nano, strings.ToUpper(s))
	}
	return t, err
}

// parseTimestamp reads the forms listed at the top of csv.go.
func parseTimestamp(b []byte) (time.Time, bool) {
	if t, ok := parseRFC3339ish(b); ok {
		return t, true
	}
	if t, ok := parseEpoch(b); ok {
		return t, true
	}
	if len(b) < 8 || len(b) > 40 {
		return time.Time{}, false
	}
	s := string(b)
	for _, layout := range csvTimeLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), true
		}
	}
	return time.Time{}, false
}

// parseEpoch reads Unix time as data loggers export it: ten digits of
// seconds with an optional fraction (1706695200, 1706695200.25), or
// thirteen of milliseconds (1706695200250). Other digit counts are not
// taken for epochs: eight digits are a compact date, and ten cover
// 2001 to 2286.
func parseEpoch(b []byte) (time.Time, bool) {
	whole, frac := b, []byte(nil)
	for i, c := range b {
		if c == '.' {
			whole, frac = b[:i], b[i+1:]
			break
		}
	}
	n, ok := digits(whole)
	if !ok {
		return time.Time{}, false
	}
	switch {
	case len(whole) == 13 && frac == nil:
		return time.UnixMilli(int64(n)).UTC(), true
	case len(whole) == 10 && (frac == nil || len(frac) > 0 && len(frac) <= 9):
		var ns int64
		if len(frac) > 0 {
			f, ok := digits(frac)
			if !ok {
				return time.Time{}, false
			}
			ns = int64(f)
			for range 9 - len(frac) {
				ns *= 10
			}
		}
		return time.Unix(int64(n), ns).UTC(), true
	}
	return time.Time{}, false
}

// csvTimeLayouts are the slow forms. None has a zone abbreviation: Go
// would invent a zero offset for one it does not know (CET), silently
// shifting the time.
var csvTimeLayouts = []string{
	"2006/01/02 15:04:05", "2006/01/02 15:04", "2006/01/02",
	"02.01.2006 15:04:05", "02.01.2006 15:04", "02.01.2006",
	time.RFC1123Z, "20060102T150405Z0700", "20060102T150405",
}

// parseRFC3339ish parses YYYY-MM-DD[(T| )h:m[:s[.frac]][ ][offset]]
// without time.Parse: digits by hand, days by arithmetic. Hours, minutes
// and seconds take one digit or two: people write 2018-12-18 8:00:00
// (api.md's own sample) and T3:00:00+01 (aedifion's import guide), and
// between colons a single digit cannot be misread.
func parseRFC3339ish(b []byte) (time.Time, bool) {
	if len(b) < 10 || b[4] != '-' || b[7] != '-' {
		return time.Time{}, false
	}
	y, ok1 := digits(b[0:4])
	mo, ok2 := digits(b[5:7])
	d, ok3 := digits(b[8:10])
	if !ok1 || !ok2 || !ok3 || mo < 1 || mo > 12 || d < 1 || d > daysIn(mo, y) {
		return time.Time{}, false
	}
	var hh, mm, ss, nsec, off int
	if rest := b[10:]; len(rest) > 0 {
		if c := rest[0]; c != 'T' && c != 't' && c != ' ' {
			return time.Time{}, false
		}
		var n int
		if hh, n = clockField(rest[1:]); n == 0 || len(rest) <= 1+n || rest[1+n] != ':' {
			return time.Time{}, false
		}
		rest = rest[2+n:]
		if mm, n = clockField(rest); n == 0 {
			return time.Time{}, false
		}
		rest = rest[n:]
		if len(rest) > 0 && rest[0] == ':' {
			if ss, n = clockField(rest[1:]); n == 0 {
				return time.Time{}, false
			}
			rest = rest[1+n:]
			if len(rest) > 1 && (rest[0] == '.' || rest[0] == ',') {
				i, scale := 1, 100_000_000
				for ; i < len(rest) && rest[i] >= '0' && rest[i] <= '9'; i++ {
					nsec += int(rest[i]-'0') * scale // digits past the 9th add 0
					scale /= 10
				}
				if i == 1 {
					return time.Time{}, false
				}
				rest = rest[i:]
			}
		}
		if hh > 23 || mm > 59 || ss > 59 {
			return time.Time{}, false
		}
		var ok bool
		if off, ok = parseOffset(rest); !ok {
			return time.Time{}, false
		}
	}
	sec := daysFromCivil(y, mo, d)*86400 + int64(hh*3600+mm*60+ss-off)
	return time.Unix(sec, int64(nsec)).UTC(), true
}

// clockField reads the one or two digits of an hour, minute or second at
// the start of b; n is how many (0: none).
func clockField(b []byte) (v, n int) {
	for n < 2 && n < len(b) && b[n] >= '0' && b[n] <= '9' {
		v = v*10 + int(b[n]-'0')
		n++
	}
	return v, n
}

// parseOffset reads "", Z, UTC, +hh, +hh:mm, +hhmm (optionally after one
// space) and returns it in seconds east of UTC.
func parseOffset(s []byte) (int, bool) {
	if len(s) > 1 && s[0] == ' ' {
		s = s[1:]
	}
	switch {
	case len(s) == 0, len(s) == 1 && (s[0] == 'Z' || s[0] == 'z'), string(s) == "UTC":
		return 0, true
	case len(s) < 3 || s[0] != '+' && s[0] != '-':
		return 0, false
	}
	h, ok := digits(s[1:3])
	m, okM := 0, true
	switch rest := s[3:]; {
	case len(rest) == 3 && rest[0] == ':':
		m, okM = digits(rest[1:])
	case len(rest) == 2:
		m, okM = digits(rest)
	case len(rest) != 0:
		return 0, false
	}
	if !ok || !okM || h > 23 || m > 59 {
		return 0, false
	}
	off := h*3600 + m*60
	if s[0] == '-' {
		off = -off
	}
	return off, true
}

func digits(b []byte) (int, bool) {
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

func daysIn(month, year int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// daysFromCivil counts days from 1970-01-01 to a proleptic Gregorian date
// (H. Hinnant's algorithm), for years 0 and later.
func daysFromCivil(y, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400
	if y < 0 {
		era = (y - 399) / 400 // floor division
	}
	yoe := y - era*400
	mp := (m + 9) % 12 // March = 0
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return int64(era*146097+doe) - 719468
}
