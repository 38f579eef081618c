package files

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/openbdp/bdp/fault"
)

func TestNormalizePath(t *testing.T) {
	long := strings.Repeat("a/", MaxPathBytes/2) + "b" // 1025 bytes
	for _, tc := range []struct {
		name, in, want, errHas string
	}{
		{"plain", "report.pdf", "report.pdf", ""},
		{"folders", "plans/floor 1/HVAC.dwg", "plans/floor 1/HVAC.dwg", ""},
		{"unicode", "Prüfbericht/Übergabe ✓.pdf", "Prüfbericht/Übergabe ✓.pdf", ""},
		{"dots inside names", "a..b/.hidden/c.", "a..b/.hidden/c.", ""},
		{"exactly the limit", strings.Repeat("x", MaxPathBytes), strings.Repeat("x", MaxPathBytes), ""},
		{"empty", "", "", "empty"},
		{"over the limit", long, "", "1025 bytes, at most 1024"},
		{"parent", "../etc/passwd", "", `".." segments`},
		{"parent inside", "a/../b", "", `".." segments`},
		{"parent at end", "a/..", "", `".." segments`},
		{"current dir", "a/./b", "", `"." segments`},
		{"absolute", "/etc/passwd", "", "absolute"},
		{"backslash", `a\b`, "", "backslashes"},
		{"windows parent", `..\b`, "", "backslashes"},
		{"newline", "a\nb", "", "control characters"},
		{"NUL", "a\x00b", "", "control characters"},
		{"DEL", "a\x7fb", "", "control characters"},
		{"C1 control", "a\u0085b", "", "control characters"},
		{"double slash", "a//b", "", "empty segments"},
		{"trailing slash", "a/b/", "", "empty segments"},
		{"invalid UTF-8", "a\xffb", "", "UTF-8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := NormalizePath(tc.in)
			if tc.errHas == "" {
				if err != nil || got != tc.want {
					t.Fatalf("NormalizePath(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
				}
				return
			}
			if !fault.Is(err, fault.Invalid) || !strings.Contains(fault.Message(err), tc.errHas) {
				t.Fatalf("NormalizePath(%q) = %q, %v; want an invalid error containing %q", tc.in, got, err, tc.errHas)
			}
			if len(fault.Message(err)) > 200 {
				t.Fatalf("error message echoes the input: %d bytes", len(fault.Message(err)))
			}
		})
	}
}

// Names are case-sensitive: two spellings are two files.
func TestNormalizePathKeepsCase(t *testing.T) {
	a, _ := NormalizePath("Plans/A.pdf")
	b, _ := NormalizePath("plans/a.pdf")
	if a == b {
		t.Fatalf("case folded: %q == %q", a, b)
	}
}

func FuzzNormalizePath(f *testing.F) {
	for _, s := range []string{"a", "a/b", "../x", "/x", `a\b`, "a//b", "a\x00", "a\xff", "ä/ö", "a/./b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got, err := NormalizePath(in)
		if err != nil {
			if !fault.Is(err, fault.Invalid) {
				t.Fatalf("NormalizePath(%q): error of kind %v: %v", in, fault.KindOf(err), err)
			}
			return
		}
		if got == "" || len(got) > MaxPathBytes || !utf8.ValidString(got) ||
			strings.HasPrefix(got, "/") || strings.Contains(got, `\`) || strings.Contains(got, "//") ||
			strings.HasSuffix(got, "/") || strings.IndexFunc(got, unicode.IsControl) >= 0 {
			t.Fatalf("NormalizePath(%q) accepted %q", in, got)
		}
		for seg := range strings.SplitSeq(got, "/") {
			if seg == ".." || seg == "." || seg == "" {
				t.Fatalf("NormalizePath(%q) accepted segment %q in %q", in, seg, got)
			}
		}
		again, err := NormalizePath(got)
		if err != nil || again != got {
			t.Fatalf("not idempotent: %q -> %q -> %q, %v", in, got, again, err)
		}
	})
}
