package fault

import (
	"strings"
	"testing"
)

func TestClip(t *testing.T) {
	long := strings.Repeat("ä", MaxQuoted+5)
	cases := []struct {
		name, in, want string
		n              int
	}{
		{"short stays", "abc", "abc", 5},
		{"exactly n stays", "abcde", "abcde", 5},
		{"cut and marked", "abcdef", "abcde…", 5},
		{"never half a character", "äöüß", "äö…", 2},
		{"n characters, not bytes", "äöü", "äöü", 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := ClipTo(c.in, c.n); got != c.want {
				t.Errorf("ClipTo(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
			}
		})
	}
	if got := Clip(long); got != strings.Repeat("ä", MaxQuoted)+"…" {
		t.Errorf("Clip of %d characters kept %d", MaxQuoted+5, len([]rune(got))-1)
	}
}
