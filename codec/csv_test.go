package codec

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

// csvResult is what reading a whole file gives: observations and failing
// lines, each with its line number.
type csvResult struct {
	obs   []CSVObservation
	lines []int
	errs  []*LineError
}

func readAllCSV(t testing.TB, r io.Reader) (Dialect, csvResult) {
	t.Helper()
	cr, err := NewCSVReader(r)
	if err != nil {
		t.Fatal(err)
	}
	var res csvResult
	for {
		o, line, err := cr.Next()
		var le *LineError
		switch {
		case errors.Is(err, io.EOF):
			return cr.Dialect(), res
		case errors.As(err, &le):
			if le.Line != line {
				t.Fatalf("LineError line %d, Next line %d", le.Line, line)
			}
			res.errs = append(res.errs, le)
		case err != nil:
			t.Fatal(err)
		default:
			res.obs = append(res.obs, o)
			res.lines = append(res.lines, line)
		}
	}
}

var tBase = time.Date(2024, 1, 31, 10, 0, 0, 0, time.UTC)

// Every failing-line rule of api.md 4.7 rule 2, and the ones we add.
func TestCSVFailingLines(t *testing.T) {
	good := "dp-1,1.5,2024-01-31T10:00:00Z\n"
	tests := []struct {
		name, line, reason string
	}{
		{"backslash in identifier", `dp\1,1.5,2024-01-31T10:00:00Z`, `identifier "dp\\1" contains a backslash`},
		{"timestamp cannot be parsed", "dp-1,1.5,yesterday", `timestamp "yesterday" cannot be parsed`},
		{"impossible date", "dp-1,1.5,2023-02-29", `timestamp "2023-02-29" cannot be parsed`},
		{"hour 24", "dp-1,1.5,2024-01-31T24:00:00Z", `timestamp "2024-01-31T24:00:00Z" cannot be parsed`},
		{"bad offset", "dp-1,1.5,2024-01-31T10:00:00+1", `timestamp "2024-01-31T10:00:00+1" cannot be parsed`},
		{"empty timestamp", "dp-1,1.5,", `timestamp "" cannot be parsed`},
		{"eleven digits are no epoch", "dp-1,1.5,17066952000", `timestamp "17066952000" cannot be parsed`},
		{"an epoch with an empty fraction", "dp-1,1.5,1706695200.", `timestamp "1706695200." cannot be parsed`},
		{"year before 1900", "dp-1,1.5,1899-12-31T23:00:00Z", `timestamp "1899-12-31T23:00:00Z" is outside the years 1900 to 9999`},
		{"offset moves it before 1900", "dp-1,1.5,1900-01-01T00:30:00+01:00", `timestamp "1900-01-01T00:30:00+01:00" is outside the years 1900 to 9999`},
		{"value is not a float", "dp-1,abc,2024-01-31", `value "abc" is not a number`},
		{"empty value", "dp-1,,2024-01-31", `value is empty`},
		{"NaN", "dp-1,NaN,2024-01-31", `value "NaN" is not a finite number`},
		{"Inf", "dp-1,+Inf,2024-01-31", `value "+Inf" is not a finite number`},
		{"overflow", "dp-1,1e999,2024-01-31", `value "1e999" is not a finite number`},
		{"extra field", "dp-1,1.5,2024-01-31,x", "extra field: 4 fields, expected 3 (identifier, value, timestamp)"},
		{"trailing delimiter", "dp-1,1.5,2024-01-31,", "extra field: 4 fields, expected 3 (identifier, value, timestamp)"},
		{"extra quoted field", `"dp-1",1.5,2024-01-31,"a,b",c`, "extra field: 5 fields, expected 3 (identifier, value, timestamp)"},
		{"missing field", "dp-1,1.5", "missing field: 2 fields, expected 3 (identifier, value, timestamp)"},
		{"one field", "dp-1", "missing field: 1 fields, expected 3 (identifier, value, timestamp)"},
		{"empty identifier", ",1.5,2024-01-31", "identifier is empty"},
		{"blank quoted identifier", `"",1.5,2024-01-31`, "identifier is empty"},
		{"control character", "dp\x01,1.5,2024-01-31", `identifier "dp\x01" contains a control character`},
		{"invalid UTF-8", "dp\xff,1.5,2024-01-31", `identifier "dp\xff" is not valid UTF-8`},
		{"identifier too long", strings.Repeat("x", 513) + ",1.5,2024-01-31", "identifier is longer than 512 bytes"},
		{"unterminated quote", `"dp-1,1.5,2024-01-31`, "unterminated quoted field"},
		{"text after closing quote", `"dp"x,1.5,2024-01-31`, "malformed quoted field: text after the closing quote"},
		{"several faults: fields first", "dp\\1,abc", "missing field: 2 fields, expected 3 (identifier, value, timestamp)"},
		{"several faults: identifier before value", "dp\\1,abc,never", `identifier "dp\\1" contains a backslash`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// A good line first and last: the bad one is line 2 and does
			// not disturb its neighbours.
			file := good + tt.line + "\n" + good
			_, res := readAllCSV(t, strings.NewReader(file))
			if len(res.errs) == 0 || res.errs[0].Line != 2 || res.errs[0].Reason != tt.reason {
				t.Fatalf("errors %v, want line 2: %s", res.errs, tt.reason)
			}
			if want := "2: " + tt.reason; res.errs[0].Error() != want {
				t.Fatalf("Error() = %q, want %q", res.errs[0].Error(), want)
			}
			if len(res.obs) < 2 || res.lines[0] != 1 || res.lines[len(res.lines)-1] != strings.Count(file, "\n") {
				t.Fatalf("good lines %v of %d observations", res.lines, len(res.obs))
			}
		})
	}
}

// A decimal comma is no float, also where the delimiter is not a comma.
func TestCSVDecimalComma(t *testing.T) {
	_, res := readAllCSV(t, strings.NewReader("a;1;2024-01-31\nb;1,5;2024-01-31\nc;2.5;2024-01-31\n"))
	if len(res.obs) != 2 || len(res.errs) != 1 || res.errs[0].Error() != `2: value "1,5" is not a number` {
		t.Fatalf("%+v", res)
	}
}

// Quoted text in reasons is cut short.
func TestCSVLongFieldInReason(t *testing.T) {
	_, res := readAllCSV(t, strings.NewReader("a,"+strings.Repeat("x", 1000)+",2024-01-31\n"))
	if len(res.errs) != 1 || len(res.errs[0].Reason) > 120 || !strings.HasSuffix(res.errs[0].Reason, `"... is not a number`) {
		t.Fatalf("%v", res.errs)
	}
}

func TestCSVLongLine(t *testing.T) {
	file := "a,1,2024-01-31\nb," + strings.Repeat("9", 70_000) + ",2024-01-31\nc,3,2024-01-31\n"
	_, res := readAllCSV(t, strings.NewReader(file))
	if len(res.errs) != 1 || res.errs[0].Line != 2 || !strings.Contains(res.errs[0].Reason, "longer than") {
		t.Fatalf("errors %v", res.errs)
	}
	if len(res.obs) != 2 || res.obs[1].DataPointID != "c" || res.lines[1] != 3 {
		t.Fatalf("observations %+v lines %v", res.obs, res.lines)
	}
}

// Each dialect, with quoted fields holding delimiters and quotes.
func TestCSVDialects(t *testing.T) {
	for _, q := range []byte{'"', '\''} {
		for _, d := range []byte{',', ';', '\t', '|'} {
			name := fmt.Sprintf("delim %q quote %q", d, q)
			t.Run(name, func(t *testing.T) {
				Q, D := string(q), string(d)
				inner := D
				if d == '\t' {
					inner = "," // a tab is a control character: no identifier holds one
				}
				file := strings.Join([]string{
					"plain" + D + "1" + D + "2024-01-31T10:00:00Z",
					Q + "with" + inner + "delim" + Q + D + "2.5" + D + "2024-01-31 10:00:00",
					Q + "with " + Q + Q + "quote" + Q + Q + Q + D + Q + "-3e2" + Q + D + Q + "2024-01-31" + Q,
					"  spaced  " + D + " 4 " + D + " 2024-01-31T11:00:00+01:00 ",
					"mid" + Q + "quote" + D + "5" + D + "2024-01-31T10:00:00Z",
				}, "\r\n")
				dl, res := readAllCSV(t, strings.NewReader(file))
				if dl.Delimiter != d || dl.Quote != q || dl.Header {
					t.Fatalf("dialect %+v", dl)
				}
				if len(res.errs) != 0 {
					t.Fatalf("errors %v", res.errs)
				}
				want := []string{"plain", "with" + inner + "delim", "with " + Q + "quote" + Q, "spaced", "mid" + Q + "quote"}
				values := []float64{1, 2.5, -300, 4, 5}
				if len(res.obs) != len(want) {
					t.Fatalf("observations %+v", res.obs)
				}
				for i, o := range res.obs {
					if o.DataPointID != want[i] || o.Value != values[i] || res.lines[i] != i+1 {
						t.Fatalf("line %d: %+v, want %q %v", res.lines[i], o, want[i], values[i])
					}
				}
			})
		}
	}
}

func TestCSVHeader(t *testing.T) {
	tests := []struct {
		name, file string
		header     bool
		obs        int
		errLines   []int
	}{
		{"header", "dataPointID,value,timestamp\na,1,2024-01-31\nb,2,2024-01-31\n", true, 2, nil},
		{"header with quotes", "\"id\";\"value\";\"time\"\na;1;2024-01-31\n", true, 1, nil},
		{"header only", "id,value,time\n", true, 0, nil},
		{"no header", "a,1,2024-01-31\nb,2,2024-01-31\n", false, 2, nil},
		{"bad value on line 1 is no header", "a,x,2024-01-31\nb,2,2024-01-31\n", false, 1, []int{1}},
		{"bad time on line 1 is no header", "a,1,never\nb,2,2024-01-31\n", false, 1, []int{1}},
		{"line 2 does not parse either", "id,value,time\nb,x,never\nc,3,2024-01-31\n", false, 1, []int{1, 2}},
		{"blank line 1", "\nid,value,time\nb,2,2024-01-31\n", false, 1, []int{2}},
		{"header then blank lines", "id,value,time\n\n\nb,2,2024-01-31\n", true, 1, nil},
		{"byte order mark", "\xef\xbb\xbfid,value,time\nb,2,2024-01-31\n", true, 1, nil},
		{"byte order mark, no header", "\xef\xbb\xbfb,2,2024-01-31\n", false, 1, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dl, res := readAllCSV(t, strings.NewReader(tt.file))
			if dl.Header != tt.header || len(res.obs) != tt.obs || len(res.errs) != len(tt.errLines) {
				t.Fatalf("header %v, %d observations, errors %v", dl.Header, len(res.obs), res.errs)
			}
			for i, l := range tt.errLines {
				if res.errs[i].Line != l {
					t.Fatalf("errors %v, want lines %v", res.errs, tt.errLines)
				}
			}
			if tt.name == "byte order mark, no header" && res.obs[0].DataPointID != "b" {
				t.Fatalf("the BOM stuck to the identifier: %q", res.obs[0].DataPointID)
			}
		})
	}
}

// Line numbers are physical lines: blank lines and CRLF endings count
// right, and a last line without a newline is read.
func TestCSVLineNumbers(t *testing.T) {
	file := "a,1,2024-01-31\r\n\r\n   \nb,2,2024-01-31\nbad\n\nc,3,2024-01-31"
	_, res := readAllCSV(t, strings.NewReader(file))
	if fmt.Sprint(res.lines) != "[1 4 7]" || len(res.errs) != 1 || res.errs[0].Line != 5 {
		t.Fatalf("lines %v errors %v", res.lines, res.errs)
	}
	if _, res := readAllCSV(t, strings.NewReader("")); len(res.obs)+len(res.errs) != 0 {
		t.Fatalf("empty file: %+v", res)
	}
}

// The reader streams: a file far bigger than its buffer, delivered a few
// bytes at a time, reads the same as one delivered whole, and its lines
// cross buffer boundaries at every offset.
func TestCSVStreaming(t *testing.T) {
	var b bytes.Buffer
	const n = 40_000
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "datapoint-%d,%d.25,2024-01-31T10:%02d:%02d.%03dZ\n", i%97, i, i/60%60, i%60, i%1000)
		if i%1000 == 0 {
			b.WriteString("broken line\n")
		}
	}
	_, whole := readAllCSV(t, bytes.NewReader(b.Bytes()))
	_, bits := readAllCSV(t, iotest.HalfReader(iotest.OneByteReader(bytes.NewReader(b.Bytes()))))
	_, halves := readAllCSV(t, iotest.HalfReader(bytes.NewReader(b.Bytes())))
	for _, r := range []csvResult{bits, halves} {
		if len(r.obs) != n || len(r.errs) != n/1000 || fmt.Sprint(r.obs) != fmt.Sprint(whole.obs) || fmt.Sprint(r.lines) != fmt.Sprint(whole.lines) {
			t.Fatalf("%d observations, %d errors; differs from reading it whole", len(r.obs), len(r.errs))
		}
	}
	if whole.obs[n-1].Value != n-1+0.25 || whole.lines[n-1] != n+n/1000 {
		t.Fatalf("last: %+v at line %d", whole.obs[n-1], whole.lines[n-1])
	}
}

// A failing read is the reader's error, not a line's.
func TestCSVReadError(t *testing.T) {
	boom := errors.New("connection reset")
	// Past the 64 KiB the dialect is detected from, so Next meets it.
	first := strings.Repeat("a,1,2024-01-31\n", 10_000)
	cr, err := NewCSVReader(io.MultiReader(strings.NewReader(first), iotest.ErrReader(boom)))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10_000; i++ {
		if _, _, err := cr.Next(); err != nil {
			t.Fatal(err)
		}
	}
	var le *LineError
	if _, _, err := cr.Next(); !errors.Is(err, boom) || errors.As(err, &le) {
		t.Fatalf("got %v", err)
	}
	if _, err := NewCSVReader(iotest.ErrReader(boom)); !errors.Is(err, boom) {
		t.Fatalf("NewCSVReader: %v", err)
	}
}

// FuzzCSVReader: whatever the bytes, the reader does not panic, line
// numbers grow, and what it returns passes Validate.
func FuzzCSVReader(f *testing.F) {
	for _, s := range []string{
		"a,1,2024-01-31\n", "id;value;time\r\nx;2;2024-01-31 10:00:00+01\n", `"a,""b",1,2024-01-31T10:00:00.5Z`,
		"'a|b'|1|31.01.2024 10:00", "\xef\xbb\xbf\n\n,,\n", "a\t1\t20240131T100000Z\n\"", "x,1e309,2024-02-30",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cr, err := NewCSVReader(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		last := 0
		for {
			o, line, err := cr.Next()
			if errors.Is(err, io.EOF) {
				return
			}
			if line <= last || line > bytes.Count(data, []byte("\n"))+1 {
				t.Fatalf("line %d after %d", line, last)
			}
			last = line
			var le *LineError
			if err != nil && !errors.As(err, &le) {
				t.Fatal(err)
			}
			if err == nil {
				if verr := Validate(o.DataPointID, o.Time, o.Value); verr != nil {
					t.Fatalf("line %d: invalid observation %+v: %v", line, o, verr)
				}
			}
		}
	})
}

// benchCSV is a typical file: 10,000 datapoints, RFC 3339 times.
func benchCSV(lines int, form func(i int) string) []byte {
	var b bytes.Buffer
	for i := 0; i < lines; i++ {
		fmt.Fprintf(&b, "building-a/floor-%d/sensor-%d,%d.%d,%s\n", i%10_000/100, i%10_000, i%400, i%10, form(i))
	}
	return b.Bytes()
}

func benchmarkCSV(b *testing.B, data []byte) {
	b.SetBytes(int64(len(data)))
	lines := 0
	for b.Loop() {
		cr, err := NewCSVReader(bytes.NewReader(data))
		if err != nil {
			b.Fatal(err)
		}
		for {
			_, _, err := cr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			lines++
		}
	}
	b.ReportMetric(float64(lines)/b.Elapsed().Seconds(), "lines/s")
}

func BenchmarkCSVReaderRFC3339(b *testing.B) {
	benchmarkCSV(b, benchCSV(200_000, func(i int) string {
		return tBase.Add(time.Duration(i/10_000) * time.Minute).Format(time.RFC3339)
	}))
}

func BenchmarkCSVReaderOffsetsAndFractions(b *testing.B) {
	benchmarkCSV(b, benchCSV(200_000, func(i int) string {
		return tBase.Add(time.Duration(i) * time.Millisecond).In(time.FixedZone("", 3600)).Format("2006-01-02 15:04:05.000-07:00")
	}))
}

func BenchmarkCSVReaderQuoted(b *testing.B) {
	var data bytes.Buffer
	for i := 0; i < 200_000; i++ {
		fmt.Fprintf(&data, "\"building, a/sensor \"\"%d\"\"\",\"%d.5\",%s\n", i%10_000, i%400, tBase.Add(time.Duration(i)*time.Second).Format(time.RFC3339))
	}
	benchmarkCSV(b, data.Bytes())
}

func BenchmarkCSVReaderSlowTimestamps(b *testing.B) {
	benchmarkCSV(b, benchCSV(50_000, func(i int) string {
		return tBase.Add(time.Duration(i) * time.Second).Format("02.01.2006 15:04:05")
	}))
}

// A quoted field may hold a line break (standard CSV): the lines form one
// record, numbered by its first line, and no fragment of it is read as a
// line of its own. A quote that never closes is a typo: it costs its own
// line only, also when the lines after it cross the read buffer.
func TestCSVQuotedLineBreaks(t *testing.T) {
	good := func(i int) string { return fmt.Sprintf("dp-%d,%d,2024-01-31T10:00:00Z\n", i, i) }
	t.Run("one record over two lines", func(t *testing.T) {
		file := good(1) + "\"dp\nmultiline\",2,2024-01-01T01:00:00Z\n" + good(4)
		_, res := readAllCSV(t, strings.NewReader(file))
		if len(res.errs) != 1 || res.errs[0].Line != 2 || !strings.Contains(res.errs[0].Reason, "control character") {
			t.Fatalf("errors %v, want one for line 2 (a line break in the identifier)", res.errs)
		}
		if !slices.Equal(res.lines, []int{1, 4}) {
			t.Fatalf("good lines %v, want 1 and 4", res.lines)
		}
	})
	t.Run("a stray quote across the buffer", func(t *testing.T) {
		var b strings.Builder
		n := 0
		for b.Len() < csvBufSize-200 {
			n++
			b.WriteString(good(n))
		}
		n++
		b.WriteString(`"stray,1,2024-01-31T10:00:00Z` + "\n")
		stray := n
		for b.Len() < csvBufSize+3*csvMaxLine {
			n++
			b.WriteString(good(n))
		}
		_, res := readAllCSV(t, strings.NewReader(b.String()))
		if len(res.errs) != 1 || res.errs[0].Line != stray || res.errs[0].Reason != "unterminated quoted field" {
			t.Fatalf("errors %v, want one for line %d", res.errs, stray)
		}
		if len(res.obs) != n-1 || res.lines[stray-1] != stray+1 {
			t.Fatalf("%d good lines, want %d", len(res.obs), n-1)
		}
	})
}

// A stray quote whose line is followed, within the record limit, by a line
// with quotes of its own: the quote then closes in the wrong place, and the
// lines in between are still read as lines (continue mode keeps them).
func TestCSVStrayQuoteBeforeQuotedLines(t *testing.T) {
	for name, file := range map[string]string{
		"an opening quote later": "dp-1,1,2024-01-31\n\"c1,2,2024-01-31\nc3,3,2024-01-31\nc4,4,2024-01-31\n\"c5\",5,2024-01-31\ndp-6,6,2024-01-31\n",
		"all fields quoted":      "\"a\",\"1\",\"2024-01-31\"\n\"b\",\"2\",\"2024-01-31\n\"c\",\"3\",\"2024-01-31\"\n",
	} {
		t.Run(name, func(t *testing.T) {
			_, res := readAllCSV(t, strings.NewReader(file))
			lines := strings.Count(file, "\n")
			if len(res.errs) != 1 || res.errs[0].Line != 2 || res.errs[0].Reason != "unterminated quoted field" {
				t.Fatalf("errors %v, want one for line 2", res.errs)
			}
			if len(res.obs)+len(res.errs) != lines {
				t.Fatalf("%d good lines %v and %d failing of %d lines: some went missing", len(res.obs), res.lines, len(res.errs), lines)
			}
		})
	}
}
