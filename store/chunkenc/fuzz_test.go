package chunkenc

import (
	"encoding/binary"
	"math"
	"testing"
)

// The fuzz targets are for local runs (go test -run '^$' -fuzz FuzzRoundTrip
// -fuzztime 20s ./store/chunkenc/); in CI only their seeds run.

// pointsFrom turns fuzz bytes into a valid series: 9 bytes a point, a
// selector and a word, so the fuzzer reaches every time mode (exact cadence,
// jitter, microsecond steps, huge steps) and every value kind (any bit
// pattern, decimals of several scales, repeats).
func pointsFrom(start int64, data []byte) []Point {
	var pts []Point
	t := start
	for ; len(data) >= 9; data = data[9:] {
		sel, w := data[0], binary.LittleEndian.Uint64(data[1:9])
		var step int64
		switch sel & 3 {
		case 0:
			step = 60e6
		case 1:
			step = 60e6 + int64(int8(w))*1000
		case 2:
			step = 1 + int64(w%1000)
		default:
			step = int64(w>>1) + 1
		}
		if len(pts) > 0 {
			if t > math.MaxInt64-step {
				break
			}
			t += step
		}
		var v float64
		switch sel >> 2 & 3 {
		case 0:
			v = math.Float64frombits(w)
		case 1:
			v = float64(int32(w)) / 100
		case 2:
			v = float64(int64(w)>>11) / math.Pow10(int(w>>4&31))
		default:
			if len(pts) > 0 {
				v = pts[len(pts)-1].Value
			}
		}
		pts = append(pts, Point{t, v})
	}
	return pts
}

func FuzzRoundTrip(f *testing.F) {
	f.Add(int64(0), []byte{})
	f.Add(monday, make([]byte, 9*40))
	seed := make([]byte, 0, 9*64)
	for i := range 64 {
		seed = append(seed, byte(i))
		seed = binary.LittleEndian.AppendUint64(seed, uint64(i)*0x9e3779b97f4a7c15)
	}
	f.Add(int64(-1), seed)
	f.Add(int64(math.MinInt64), seed)
	f.Add(int64(math.MaxInt64-1e9), seed)
	c := newCodec(f)
	f.Fuzz(func(t *testing.T, start int64, data []byte) {
		roundTrip(t, c, pointsFrom(start, data))
	})
}

func FuzzDecode(f *testing.F) {
	c := newCodec(f)
	for _, k := range kinds {
		for _, n := range []int{1, 2, 5, 100} {
			data, err := c.Encode(nil, k.gen(3)[:n])
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data)
		}
	}
	f.Add([]byte{})
	f.Add([]byte{Version, 0xff, 0xff, 0xff, 0xff, 0x7f})
	f.Add([]byte{Version, 3, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		checkDecoded(t, c, data)
	})
}
