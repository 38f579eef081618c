package codec

import (
	"bytes"
	"testing"
)

// The dialect is judged on the lines that parse, not on which delimiter
// is most frequent, and a partial last line of the sample is left out.
func TestSniff(t *testing.T) {
	for _, tc := range []struct {
		name   string
		sample string
		eof    bool
		want   Dialect
	}{
		{"commas in the identifiers, semicolons between", "a,b;1;2024-01-31\nc,d,e;2;2024-01-31\n", true, Dialect{';', '"', false}},
		{"quoted commas", "\"a,b\",1,2024-01-31\n\"c,d\",2,2024-01-31\n", true, Dialect{',', '"', false}},
		{"single quotes used more", "'a|b'|1|2024-01-31\n'c'|2|2024-01-31\n", true, Dialect{'|', '\'', false}},
		{"header", "id\tvalue\ttime\na\t1\t2024-01-31\n", true, Dialect{'\t', '"', true}},
		{"nothing parses: comma and double quote", "hello\nworld\n", true, Dialect{',', '"', false}},
		{"empty", "", true, Dialect{',', '"', false}},
		{"a partial last line does not count", "a;1;2024-01-31\nb,2,2024-01-31\nc,3,2024-", false, Dialect{',', '"', false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := sniff([]byte(tc.sample), tc.eof); got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// FuzzSniff: whatever the sample, sniffing does not panic and picks one of
// the dialects the reader knows, and a file written in a dialect with a
// valid line first is read in that dialect.
func FuzzSniff(f *testing.F) {
	for _, s := range []string{"a,1,2024-01-31\n", "x;y;z\n1;2;3", "'a|b'|1|31.01.2024 10:00", "\"", "\n\n\t|", ""} {
		f.Add([]byte(s), true)
		f.Add([]byte(s), false)
	}
	f.Fuzz(func(t *testing.T, sample []byte, eof bool) {
		d := sniff(sample, eof)
		if bytes.IndexByte(csvDelimiters, d.Delimiter) < 0 || bytes.IndexByte(csvQuotes, d.Quote) < 0 {
			t.Fatalf("%q: dialect %+v", sample, d)
		}
		if bytes.ContainsAny(sample, ",;\t|\"'\r\n") {
			return
		}
		if id := bytes.TrimSpace(sample); len(id) == 0 || checkID(id) != "" {
			return
		}
		// A valid identifier without delimiters, quotes or line breaks, in
		// a file of each delimiter.
		for _, delim := range csvDelimiters {
			line := append(append(append([]byte{}, sample...), delim), "1"+string(delim)+"2024-01-31\n"...)
			if got := sniff(line, true); got.Delimiter != delim {
				t.Fatalf("%q: delimiter %q, want %q", line, got.Delimiter, delim)
			}
		}
	})
}
