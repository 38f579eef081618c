// Package files is the document store of companies and projects (issue 12).
package files

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/openbdp/bdp/fault"
)

// MaxPathBytes is the longest path a file may have, in bytes of UTF-8.
const MaxPathBytes = 1024

// NormalizePath checks a file path from a client and returns its canonical
// form. A path is one or more segments joined by "/"; names are
// case-sensitive. Anything that could name a different file than it seems
// to (a parent or current-directory segment, a leading or doubled slash, a
// backslash that another system reads as a separator) is refused rather
// than silently collapsed, so a client never writes to a path other than
// the one it sent. The errors are fault.Invalid (400) and never echo a
// long input.
func NormalizePath(p string) (string, error) {
	if p == "" {
		return "", fault.Invalidf("invalid path: it is empty")
	}
	if len(p) > MaxPathBytes {
		return "", fault.Invalidf("invalid path: it has %d bytes, at most %d are allowed", len(p), MaxPathBytes)
	}
	if !utf8.ValidString(p) {
		return "", fault.Invalidf("invalid path: it is not valid UTF-8")
	}
	if strings.HasPrefix(p, "/") {
		return "", fault.Invalidf("invalid path: absolute paths (starting with /) are not allowed")
	}
	for i, r := range p {
		if r == '\\' {
			return "", fault.Invalidf("invalid path: backslashes are not allowed (byte %d)", i)
		}
		if unicode.IsControl(r) {
			return "", fault.Invalidf("invalid path: control characters are not allowed (byte %d)", i)
		}
	}
	for seg := range strings.SplitSeq(p, "/") {
		switch seg {
		case "":
			return "", fault.Invalidf("invalid path: empty segments (// or a trailing /) are not allowed")
		case ".", "..":
			return "", fault.Invalidf("invalid path: %q segments are not allowed", seg)
		}
	}
	return p, nil
}
