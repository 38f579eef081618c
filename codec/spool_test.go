package codec

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

// What the import spool writes, it reads back the same: identifiers new,
// repeated and long, times to the nanosecond, every float bit pattern.
func TestSpoolRoundTrip(t *testing.T) {
	type rec struct {
		id string
		t  time.Time
		v  float64
	}
	t0 := time.Date(2026, 11, 27, 6, 0, 0, 123456789, time.UTC)
	var want []rec
	for i := range 1000 {
		want = append(want, rec{fmt.Sprintf("dp%d", i%7), t0.Add(time.Duration(i) * time.Second), float64(i) / 3})
	}
	want = append(want, rec{strings.Repeat("x", 5000), t0, math.Copysign(0, -1)}, rec{"dp0", time.Unix(-1, 5).UTC(), math.Inf(1)})
	var buf bytes.Buffer
	var enc SpoolEncoder
	for _, r := range want {
		if err := enc.Write(&buf, r.id, r.t, r.v); err != nil {
			t.Fatal(err)
		}
	}
	dec := NewSpoolDecoder(bufio.NewReader(&buf))
	for i, w := range want {
		id, tm, v, err := dec.Next()
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if id != w.id || !tm.Equal(w.t) || math.Float64bits(v) != math.Float64bits(w.v) {
			t.Fatalf("record %d read back as (%.20s, %s, %v), want (%.20s, %s, %v)", i, id, tm, v, w.id, w.t, w.v)
		}
	}
	if _, _, _, err := dec.Next(); err == nil {
		t.Error("a record read past the end")
	}
}

// A damaged spool is an error, not a panic or a wrong record.
func TestSpoolDamaged(t *testing.T) {
	var buf bytes.Buffer
	var enc SpoolEncoder
	if err := enc.Write(&buf, "a", time.Unix(0, 0), 1); err != nil {
		t.Fatal(err)
	}
	whole := buf.Bytes()
	for name, b := range map[string][]byte{
		"cut short":            whole[:len(whole)-1],
		"unknown table entry":  {9},
		"identifier too long":  {1, 0xff, 0xff, 0x7f},
		"identifier cut short": {1, 5, 'a'},
	} {
		if _, _, _, err := NewSpoolDecoder(bufio.NewReader(bytes.NewReader(b))).Next(); err == nil {
			t.Errorf("%s: read without an error", name)
		}
	}
}
