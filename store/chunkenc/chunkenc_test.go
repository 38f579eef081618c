package chunkenc

import (
	"encoding/binary"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
)

func newCodec(t testing.TB) *Codec {
	t.Helper()
	c, err := NewCodec()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// roundTrip encodes pts, decodes them and fails unless every time and every
// value's bits come back.
func roundTrip(t testing.TB, c *Codec, pts []Point) []byte {
	t.Helper()
	data, err := c.Encode(nil, pts)
	if err != nil {
		t.Fatalf("encode: %v", err)
	}
	got, err := c.Decode(nil, data)
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	if len(got) != len(pts) {
		t.Fatalf("decoded %d points, want %d", len(got), len(pts))
	}
	for i := range pts {
		if got[i].UnixMicro != pts[i].UnixMicro ||
			math.Float64bits(got[i].Value) != math.Float64bits(pts[i].Value) {
			t.Fatalf("point %d: got (%d, %#x), want (%d, %#x)", i, got[i].UnixMicro,
				math.Float64bits(got[i].Value), pts[i].UnixMicro, math.Float64bits(pts[i].Value))
		}
	}
	h, _, err := ParseHeader(data)
	if err != nil {
		t.Fatalf("header: %v", err)
	}
	if h.N != len(pts) || len(pts) > 0 && (h.First != pts[0].UnixMicro || h.Last != pts[len(pts)-1].UnixMicro) {
		t.Fatalf("header %+v does not match the points", h)
	}
	return data
}

func series(ts []int64, vs ...float64) []Point {
	pts := make([]Point, len(vs))
	for i := range vs {
		pts[i] = Point{ts[i%len(ts)] + int64(i/len(ts))*3600e6, vs[i]}
	}
	return pts
}

func TestRoundTrip(t *testing.T) {
	c := newCodec(t)
	nan1 := math.Float64frombits(0x7ff8000000000001)
	nan2 := math.Float64frombits(0xfff0000000000abc) // negative, signalling
	nan3 := math.Float64frombits(0x7fffffffffffffff)
	minute := minuteTimes(16)
	running := make([]float64, 500)
	sum := 0.0
	for i, v := range temperature(rng(7), len(running)) {
		sum += v
		running[i] = sum / float64(i+1)
	}
	tests := []struct {
		name string
		pts  []Point
	}{
		{"empty", nil},
		{"single point", []Point{{monday, 21.37}}},
		{"single special", []Point{{-1, math.Copysign(0, -1)}}},
		{"fixed cadence decimals", fixedDecimal(1)},
		{"jittered", jittered(2)},
		{"on-off", onOff(3)},
		{"meter", meter(4)},
		{"moving mean", movingMean(5)},
		{"smoothed", smoothed(6)},
		{"sixteenths", sixteenths(7)},
		{"running mean", zip(minuteTimes(len(running)), running)},
		{"specials", series(minute, math.NaN(), nan1, nan2, nan3, math.Inf(1), math.Inf(-1),
			math.Copysign(0, -1), 0, math.MaxFloat64, -math.MaxFloat64, math.SmallestNonzeroFloat64,
			-math.SmallestNonzeroFloat64, 0x1p-1022, 0x1.fffffffffffffp-1023, 1e300, 1e-300)},
		{"specials among decimals", series(minute, 21.37, math.NaN(), 21.38, math.Copysign(0, -1),
			21.39, 0, nan1, 21.4, math.Inf(1), 21.41, 1e-300, 21.42, 0.1, 0.2, 0.30000000000000004, 0.3)},
		{"huge and tiny decimals", series(minute, 1e15, 123456789012.345, 9007199254740992, 9007199254740993,
			1e-15, 1.5e-10, 123456.000001, -1e15, 4503599627370496.5, 1e22, 1e23, 1e-9, 0.000123, 5e-324)},
		{"negative zero run", series(minute, math.Copysign(0, -1), math.Copysign(0, -1), 0, math.Copysign(0, -1))},
		{"before 1970", zip([]int64{time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro(),
			time.Date(1969, 12, 31, 23, 59, 59, 999999000, time.UTC).UnixMicro(), 0, 1}, []float64{1, 2, 3, 4})},
		{"year 9999", zip([]int64{time.Date(9999, 12, 31, 23, 58, 0, 0, time.UTC).UnixMicro(),
			time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC).UnixMicro()}, []float64{1.5, -2.25})},
		{"whole int64 range", zip([]int64{math.MinInt64, -1, 0, math.MaxInt64 - 1, math.MaxInt64},
			[]float64{1, 2, 3, 4, 5})},
		{"microsecond steps", zip([]int64{5, 6, 8, 11, 15, 1e12}, []float64{1, 1, 1, 1, 1, 1})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { roundTrip(t, c, tt.pts) })
	}
}

// TestMaxPoints round-trips the largest chunk there can be, of the values
// that take the most room: the bounds Decode holds zstd to must admit it.
func TestMaxPoints(t *testing.T) {
	if testing.Short() {
		t.Skip("a million points")
	}
	c, r := newCodec(t), rng(8)
	pts := make([]Point, MaxPoints)
	v := 0.0
	for i := range pts {
		v += r.NormFloat64()
		pts[i] = Point{int64(i) * 1e6, v}
		if i > 0 {
			pts[i].UnixMicro = pts[i-1].UnixMicro + 1 + r.Int64N(1e12)
		}
	}
	data := roundTrip(t, c, pts)
	t.Logf("%d points of random steps and a full-precision walk: %d bytes", len(pts), len(data))
	for i := range pts {
		pts[i].Value = math.Float64frombits(r.Uint64())
	}
	roundTrip(t, c, pts)
}

func TestDecodeAppends(t *testing.T) {
	c := newCodec(t)
	a, b := fixedDecimal(1)[:100], onOff(2)[:50]
	da, _ := c.Encode(nil, a)
	db, _ := c.Encode(nil, b)
	got, err := c.Decode(nil, da)
	if err == nil {
		got, err = c.Decode(got, db)
	}
	if err != nil || len(got) != 150 || got[99] != a[99] || got[100] != b[0] {
		t.Fatalf("appending decode: %d points, %v", len(got), err)
	}
}

func TestEncodeRejects(t *testing.T) {
	c := newCodec(t)
	for name, pts := range map[string][]Point{
		"duplicate time": {{10, 1}, {20, 2}, {20, 3}},
		"out of order":   {{10, 1}, {30, 2}, {20, 3}},
		"too many":       make([]Point, MaxPoints+1),
	} {
		if _, err := c.Encode(nil, pts); err == nil {
			t.Errorf("%s: encoded without an error", name)
		}
	}
}

func TestDecodeRejects(t *testing.T) {
	c := newCodec(t)
	for _, k := range kinds {
		data := roundTrip(t, c, k.gen(11)[:300])
		for n := range len(data) {
			if _, err := c.Decode(nil, data[:n]); !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrVersion) {
				t.Fatalf("%s cut to %d of %d bytes: %v", k.name, n, len(data), err)
			}
		}
		bad := append([]byte{Version + 1}, data[1:]...)
		if _, err := c.Decode(nil, bad); !errors.Is(err, ErrVersion) {
			t.Fatalf("%s with version %d: %v", k.name, bad[0], err)
		}
		if _, err := c.Decode(nil, append(data, 0)); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("%s with a trailing byte: %v", k.name, err)
		}
	}
	// A short raw chunk, then every byte of it flipped: an error or some
	// points, but never a panic and never times out of order.
	data := roundTrip(t, c, series(minuteTimes(4), 21.37, math.NaN(), 1, 2))
	for i := range data {
		for bit := range 8 {
			mut := append([]byte(nil), data...)
			mut[i] ^= 1 << bit
			checkDecoded(t, c, mut)
		}
	}
}

// TestEmptyFrame: a compressed section may decompress to nothing (the times
// of a single point); it must still be decompressed, not read as it stands.
func TestEmptyFrame(t *testing.T) {
	c := newCodec(t)
	enc, err := zstd.NewWriter(nil, zstd.WithZeroFrames(true), zstd.WithSingleSegment(true))
	if err != nil {
		t.Fatal(err)
	}
	frame := enc.EncodeAll(nil, nil)
	data, _ := c.Encode(nil, []Point{{monday, 21.5}})
	h, i, _ := ParseHeader(data)
	if h.N != 1 || data[i] != 0 {
		t.Fatalf("expected an empty raw times section at %d: %x", i, data)
	}
	mut := append(append(append(data[:i:i], byte(len(frame))<<1|1), frame...), data[i+1:]...)
	got, err := c.Decode(nil, mut)
	if err != nil || len(got) != 1 || got[0] != (Point{monday, 21.5}) {
		t.Fatalf("decoded %v, %v", got, err)
	}
}

// checkDecoded decodes data, which may be garbage, and checks what a
// successful decode promises.
func checkDecoded(t testing.TB, c *Codec, data []byte) {
	pts, err := c.Decode(nil, data)
	if err != nil {
		return
	}
	h, _, _ := ParseHeader(data)
	if len(pts) != h.N || h.N > 0 && (pts[0].UnixMicro != h.First || pts[h.N-1].UnixMicro != h.Last) {
		t.Fatalf("decoded %d points, header %+v", len(pts), h)
	}
	for i := 1; i < len(pts); i++ {
		if pts[i].UnixMicro <= pts[i-1].UnixMicro {
			t.Fatalf("decoded times out of order at %d", i)
		}
	}
	roundTrip(t, c, pts)
}

// TestSizes holds the codec to the goals for sealed data, in pure
// codec bytes (PostgreSQL's overhead comes on top), on a week of minute data.
func TestSizes(t *testing.T) {
	c := newCodec(t)
	perPoint := map[string]float64{}
	for _, k := range kinds {
		pts := k.gen(1)
		data := roundTrip(t, c, pts)
		bpp := float64(len(data)) / float64(len(pts))
		perPoint[k.name] = bpp
		t.Logf("%-15s %6d bytes  %.3f B/point", k.name, len(data), bpp)
		if k.goal > 0 && bpp > k.goal {
			t.Errorf("%s: %.3f B/point, goal %.2f", k.name, bpp, k.goal)
		}
	}
	// The design's experiment mix: 70 exact-cadence sensors, 20 jittered,
	// 10 on/off signals.
	mix := (70*perPoint["fixed-decimal"] + 20*perPoint["jittered"] + 10*perPoint["on-off"]) / 100
	t.Logf("design mix (70/20/10) %.3f B/point", mix)
	if mix > 1.37 {
		t.Errorf("mix: %.3f B/point, goal 1.37", mix)
	}
}

func TestUvarint(t *testing.T) {
	r := rng(9)
	for range 100000 {
		v := r.Uint64() >> r.IntN(64)
		pad := r.IntN(10)
		b := binary.AppendUvarint(make([]byte, pad), v)
		b = append(b, make([]byte, r.IntN(10))...)
		got, i := uvarint(b, pad)
		want, k := binary.Uvarint(b[pad:])
		if got != want || i != pad+k {
			t.Fatalf("uvarint(%x, %d) = %d, %d; want %d, %d", b, pad, got, i, want, pad+k)
		}
	}
	// Overlong and truncated varints fail as encoding/binary's do.
	for _, b := range [][]byte{{0x80}, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02}, {}} {
		if _, i := uvarint(b, 0); i >= 0 {
			t.Fatalf("uvarint(%x) read %d bytes", b, i)
		}
	}
}

// TestConcurrent shares one Codec between goroutines, as its doc allows
// (run with -race to mean something).
func TestConcurrent(t *testing.T) {
	c := newCodec(t)
	done := make(chan struct{})
	for g := range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range 5 {
				pts := kinds[(g+i)%len(kinds)].gen(uint64(g*10 + i))[:2000]
				data, err := c.Encode(nil, pts)
				if err != nil {
					t.Error(err)
					return
				}
				got, err := c.Decode(nil, data)
				if err != nil || len(got) != len(pts) || got[1999] != pts[1999] {
					t.Errorf("goroutine %d: %d points, %v", g, len(got), err)
					return
				}
			}
		}()
	}
	for range 4 {
		<-done
	}
}
