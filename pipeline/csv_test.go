package pipeline

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/openbdp/bdp/codec"
)

// The CSV import's source: every observation is the project's, failing
// lines come through as codec's line errors with their file line, and a
// read error stays the reader's. (codec's tests cover the format.)
func TestCSVReader(t *testing.T) {
	file := "id;value;time\r\na;1.5;2024-01-31T11:00:00+01:00\nb;x;2024-01-31\n\nc;-2;31.01.2024 10:00\n"
	cr, err := NewCSVReader(strings.NewReader(file), 7)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2024, 1, 31, 10, 0, 0, 0, time.UTC)
	want := []struct {
		obs    Observation
		line   int
		reason string
	}{
		{Observation{7, "a", t0, 1.5}, 2, ""},
		{Observation{}, 3, `value "x" is not a number`},
		{Observation{7, "c", t0, -2}, 5, ""},
	}
	for _, w := range want {
		o, line, err := cr.Next()
		var le *codec.LineError
		switch {
		case w.reason != "":
			if !errors.As(err, &le) || le.Line != w.line || le.Reason != w.reason || line != w.line {
				t.Fatalf("line %d: got %v at %d, want %q", w.line, err, line, w.reason)
			}
		case err != nil || line != w.line || !sameObservation(o, w.obs):
			t.Fatalf("line %d: got %+v at %d (%v), want %+v", w.line, o, line, err, w.obs)
		}
	}
	if _, _, err := cr.Next(); !errors.Is(err, io.EOF) {
		t.Fatalf("after the last line: %v, want io.EOF", err)
	}
	boom := errors.New("connection reset")
	if _, err := NewCSVReader(iotest.ErrReader(boom), 7); !errors.Is(err, boom) {
		t.Fatalf("NewCSVReader: %v, want the read error", err)
	}
}

// A typical file (10,000 datapoints, RFC 3339 times) read as the CSV
// import reads it (codec's BenchmarkCSVReader* are the reader alone).
func BenchmarkCSVReaderRFC3339(b *testing.B) {
	var data bytes.Buffer
	t0 := time.Date(2024, 1, 31, 10, 0, 0, 0, time.UTC)
	for i := range 200_000 {
		fmt.Fprintf(&data, "building-a/floor-%d/sensor-%d,%d.%d,%s\n", i%10_000/100, i%10_000, i%400, i%10,
			t0.Add(time.Duration(i/10_000)*time.Minute).Format(time.RFC3339))
	}
	b.SetBytes(int64(data.Len()))
	lines := 0
	for b.Loop() {
		cr, err := NewCSVReader(bytes.NewReader(data.Bytes()), 1)
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
