package store

import (
	"bytes"
	"context"
	"io"
	"math"
	"testing"
	"time"
)

// The hand-made binary COPY must store exactly what pgx's encoding did:
// times truncated to the microsecond at both ends of the allowed years and
// before 1970, any finite value bit for bit, on the fast path and on the
// upsert path that a replay takes.
func TestWriteObservationsRoundTripsTimesAndValues(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	berlin := time.FixedZone("CET", 3600)
	cases := []struct {
		name  string
		in    time.Time
		want  time.Time
		value float64
	}{
		{"year 1900", time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC), -273.15},
		{"before 1970 with microseconds", time.Date(1969, 12, 31, 23, 59, 59, 999_999_000, time.UTC), time.Date(1969, 12, 31, 23, 59, 59, 999_999_000, time.UTC), 1e-300},
		{"nanoseconds are truncated", time.Date(2024, 3, 4, 10, 0, 0, 123_456_789, time.UTC), time.Date(2024, 3, 4, 10, 0, 0, 123_456_000, time.UTC), math.MaxFloat64},
		{"the PostgreSQL epoch", time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC), math.Copysign(0, -1)},
		{"an offset zone", time.Date(2024, 3, 4, 11, 0, 0, 1000, berlin), time.Date(2024, 3, 4, 10, 0, 0, 1000, time.UTC), 42},
		{"year 9999", time.Date(9999, 12, 31, 23, 59, 59, 999_999_000, time.UTC), time.Date(9999, 12, 31, 23, 59, 59, 999_999_000, time.UTC), -1.5},
	}
	var rows []Row
	for i, c := range cases {
		rows = append(rows, Row{Datapoint: int64(i + 1), Time: c.in, Value: c.value})
	}
	check := func(path string, scale float64) {
		t.Helper()
		for i, c := range cases {
			var got time.Time
			var v float64
			err := s.pool.QueryRow(ctx, `SELECT time, value FROM observations WHERE datapoint = $1`, int64(i+1)).Scan(&got, &v)
			if err != nil {
				t.Fatalf("%s, %s: %v", path, c.name, err)
			}
			want := c.value * scale
			if !got.Equal(c.want) || math.Float64bits(v) != math.Float64bits(want) {
				t.Errorf("%s, %s: stored %s %v, want %s %v", path, c.name, got.UTC(), v, c.want, want)
			}
		}
	}
	if err := s.WriteObservations(ctx, rows); err != nil {
		t.Fatal(err)
	}
	check("copy", 1)
	// The same times again: the batch meets stored rows and is upserted.
	for i := range rows {
		rows[i].Value *= -1
	}
	if err := s.WriteObservations(ctx, rows); err != nil {
		t.Fatal(err)
	}
	check("upsert", -1)
	var n int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM observations`).Scan(&n); err != nil || n != len(cases) {
		t.Fatalf("%d rows stored (%v), want %d", n, err, len(cases))
	}
}

// Whatever the reader's buffer size (at least the signature), the reads
// together make one well-formed stream.
func TestBinaryCopyReadsWholeRows(t *testing.T) {
	rows := make([]Row, 100)
	for i := range rows {
		rows[i] = Row{Datapoint: int64(i), Time: time.Unix(int64(i), 0), Value: float64(i)}
	}
	want := append([]byte(nil), copySignature...)
	for _, r := range rows {
		var b [copyRowSize]byte
		putRow(b[:], r)
		want = append(want, b[:]...)
	}
	want = append(want, 0xff, 0xff)
	for _, size := range []int{copyRowSize, copyRowSize + 1, 3 * copyRowSize, 1 << 16} {
		c := &binaryCopy{rows: rows}
		var got bytes.Buffer
		buf := make([]byte, size)
		for {
			n, err := c.Read(buf)
			got.Write(buf[:n])
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("buffer %d: %v", size, err)
			}
		}
		if !bytes.Equal(got.Bytes(), want) {
			t.Fatalf("buffer %d: the stream differs from the expected %d bytes (got %d)", size, len(want), got.Len())
		}
	}
}
