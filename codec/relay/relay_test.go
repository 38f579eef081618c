package relay

import (
	"errors"
	"go/parser"
	"go/token"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/openbdp/bdp/codec/relaypb"
)

var t0 = time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC).UnixMicro()

// seconds is a run of n observations a second apart, valued 0, 1, ...
func seconds(dp string, n int) Run {
	r := Run{DataPointID: dp, Times: make([]int64, n), Values: make([]float64, n)}
	for i := range n {
		r.Times[i], r.Values[i] = t0+int64(i)*1e6, float64(i)
	}
	return r
}

// same compares batches bit for bit: NaN equals a NaN of the same bits,
// 0 does not equal -0.
func same(a, b Batch) bool {
	if a.ProjectID != b.ProjectID || len(a.Runs) != len(b.Runs) {
		return false
	}
	for i, r := range a.Runs {
		s := b.Runs[i]
		if r.DataPointID != s.DataPointID || len(r.Times) != len(s.Times) || len(r.Values) != len(s.Values) {
			return false
		}
		for j := range r.Times {
			if r.Times[j] != s.Times[j] || math.Float64bits(r.Values[j]) != math.Float64bits(s.Values[j]) {
				return false
			}
		}
	}
	return true
}

func TestRoundTrip(t *testing.T) {
	nanPayload := math.Float64frombits(0x7ff8_0000_dead_beef)
	year1900 := time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()
	year9999 := time.Date(9999, 12, 31, 23, 59, 59, 999_999_000, time.UTC).UnixMicro()
	cases := []struct {
		name string
		b    Batch
	}{
		{"no runs", Batch{ProjectID: 1}},
		{"one observation", Batch{ProjectID: 7, Runs: []Run{{DataPointID: "a", Times: []int64{t0}, Values: []float64{1.5}}}}},
		{"runs in delivery order, not by name", Batch{ProjectID: 1 << 40, Runs: []Run{seconds("z", 3), seconds("a", 2), seconds("m", 1)}}},
		{"values bit for bit", Batch{ProjectID: 2, Runs: []Run{{DataPointID: "v",
			Times:  []int64{t0, t0 + 1, t0 + 2, t0 + 3, t0 + 4, t0 + 5, t0 + 6, t0 + 7, t0 + 8},
			Values: []float64{math.NaN(), nanPayload, math.Inf(1), math.Inf(-1), math.Copysign(0, -1), 0, math.MaxFloat64, math.SmallestNonzeroFloat64, -1e-300}}}}},
		{"the calendar's ends, before 1970", Batch{ProjectID: 3, Runs: []Run{{DataPointID: "c", Times: []int64{year1900, 0, year9999}, Values: []float64{1, 2, 3}}}}},
		{"equal times (a value and the one replacing it)", Batch{ProjectID: 3, Runs: []Run{{DataPointID: "d", Times: []int64{t0, t0, t0 + 1}, Values: []float64{1, 2, 3}}}}},
		{"times out of order", Batch{ProjectID: 3, Runs: []Run{{DataPointID: "e", Times: []int64{t0, t0 - 5e6, math.MaxInt64, math.MinInt64}, Values: []float64{1, 2, 3, 4}}}}},
		{"one datapoint in two runs", Batch{ProjectID: 4, Runs: []Run{seconds("x", 2), seconds("y", 1), seconds("x", 2)}}},
		{"a long datapoint id", Batch{ProjectID: 5, Runs: []Run{seconds(strings.Repeat("ü", 256), 2)}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			data, err := Marshal(c.b)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Unmarshal(data)
			if err != nil {
				t.Fatal(err)
			}
			if !same(got, c.b) {
				t.Fatalf("got %+v\nwant %+v", got, c.b)
			}
		})
	}
}

// Marshal does not change its input (the differences go elsewhere).
func TestMarshalLeavesTheBatch(t *testing.T) {
	b := Batch{ProjectID: 1, Runs: []Run{seconds("a", 5)}}
	want := Batch{ProjectID: 1, Runs: []Run{seconds("a", 5)}}
	if _, err := Marshal(b); err != nil {
		t.Fatal(err)
	}
	if !same(b, want) {
		t.Fatalf("Marshal changed its batch: %+v", b)
	}
}

// The format is compact: observations a second apart take the 8 bytes
// of their value and 3 of their time difference.
func TestCompact(t *testing.T) {
	data, err := Marshal(Batch{ProjectID: 1, Runs: []Run{seconds("dp", 1000)}})
	if err != nil {
		t.Fatal(err)
	}
	if len(data) > 11*1000+40 {
		t.Fatalf("%d bytes for 1,000 observations, want about 11,000", len(data))
	}
}

func TestMarshalRefuses(t *testing.T) {
	cases := []struct {
		name string
		b    Batch
	}{
		{"no project", Batch{Runs: []Run{seconds("a", 1)}}},
		{"more times than values", Batch{ProjectID: 1, Runs: []Run{{DataPointID: "a", Times: []int64{1, 2}, Values: []float64{1}}}}},
	}
	for _, c := range cases {
		if _, err := Marshal(c.b); err == nil {
			t.Errorf("%s: no error", c.name)
		}
	}
}

func TestUnmarshalRefuses(t *testing.T) {
	enc := func(m *relaypb.Batch) []byte {
		data, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	cases := []struct {
		name string
		data []byte
	}{
		{"not protobuf", []byte("{\"project_id\": 1}")},
		{"cut short", enc(&relaypb.Batch{ProjectId: 1, Runs: []*relaypb.Run{{DataPointId: "a", TimeUs: []int64{1}, Value: []float64{1}}}})[:9]},
		{"no project", enc(&relaypb.Batch{Runs: []*relaypb.Run{{DataPointId: "a", TimeUs: []int64{1}, Value: []float64{1}}}})},
		{"a time without value", enc(&relaypb.Batch{ProjectId: 1, Runs: []*relaypb.Run{{DataPointId: "a", TimeUs: []int64{1, 2}, Value: []float64{1}}}})},
		{"no datapoint id", enc(&relaypb.Batch{ProjectId: 1, Runs: []*relaypb.Run{{TimeUs: []int64{1}, Value: []float64{1}}}})},
		{"a control character in the id", enc(&relaypb.Batch{ProjectId: 1, Runs: []*relaypb.Run{{DataPointId: "a\nb", TimeUs: []int64{1}, Value: []float64{1}}}})},
	}
	for _, c := range cases {
		if b, err := Unmarshal(c.data); err == nil {
			t.Errorf("%s: decoded as %+v", c.name, b)
		}
	}
}

// flat is a batch's observations in order, as "dp@time=value".
func flat(bs ...Batch) []string {
	var out []string
	for _, b := range bs {
		for _, r := range b.Runs {
			for i, t := range r.Times {
				out = append(out, r.DataPointID+"@"+strconv.FormatInt(t, 10)+"="+strconv.FormatFloat(r.Values[i], 'g', -1, 64))
			}
		}
	}
	return out
}

func TestSplit(t *testing.T) {
	long := strings.Repeat("L", 400)
	cases := []struct {
		name     string
		b        Batch
		maxBytes int
		pieces   int // 0: more than one
	}{
		{"fits", Batch{ProjectID: 1, Runs: []Run{seconds("a", 100), seconds("b", 100)}}, 1 << 20, 1},
		{"between runs", Batch{ProjectID: 1, Runs: []Run{seconds("a", 100), seconds("b", 100), seconds("c", 100)}}, 1500, 0},
		{"a run larger than a message", Batch{ProjectID: 1, Runs: []Run{seconds("a", 10), seconds("big", 5000), seconds("c", 10)}}, 4000, 0},
		{"long ids", Batch{ProjectID: 1, Runs: []Run{seconds(long, 3), seconds(long+"2", 3), seconds(long+"3", 3)}}, 1000, 0},
		{"times far apart", Batch{ProjectID: 1, Runs: []Run{{DataPointID: "f", Times: []int64{math.MinInt64, 0, math.MaxInt64, 0, 1}, Values: []float64{1, 2, 3, 4, 5}}}}, 100, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			parts, err := Split(c.b, c.maxBytes)
			if err != nil {
				t.Fatal(err)
			}
			if c.pieces > 0 && len(parts) != c.pieces || c.pieces == 0 && len(parts) < 2 {
				t.Fatalf("%d pieces", len(parts))
			}
			for i, p := range parts {
				data, err := Marshal(p)
				if err != nil {
					t.Fatal(err)
				}
				if len(data) > c.maxBytes {
					t.Errorf("piece %d takes %d bytes, over %d", i, len(data), c.maxBytes)
				}
				if p.ProjectID != c.b.ProjectID || len(p.Runs) == 0 {
					t.Errorf("piece %d: project %d, %d runs", i, p.ProjectID, len(p.Runs))
				}
			}
			if got, want := flat(parts...), flat(c.b); strings.Join(got, " ") != strings.Join(want, " ") {
				t.Fatalf("the pieces hold %d observations in another order than the batch's %d", len(got), len(want))
			}
		})
	}
	if _, err := Split(Batch{ProjectID: 1, Runs: []Run{seconds(long, 2)}}, 300); !errors.Is(err, ErrTooSmall) {
		t.Fatalf("a limit below one observation: %v", err)
	}
}

// Like codec, relay is pure: besides the standard library it imports only
// protobuf, codec and its generated code (no pipeline, store, I/O).
func TestImportsArePure(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	forbidden := []string{"os", "net", "net/http", "database/sql", "log", "log/slog", "os/exec"}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			first, _, _ := strings.Cut(path, "/")
			switch {
			case strings.HasPrefix(path, "google.golang.org/protobuf/"),
				path == "github.com/openbdp/bdp/codec", path == "github.com/openbdp/bdp/codec/relaypb":
			case strings.Contains(first, "."), slices.Contains(forbidden, path):
				t.Errorf("%s imports %s", name, path)
			}
		}
	}
}

// Whatever the bytes, Unmarshal returns an error or a batch that encodes
// back to itself; it never panics.
func FuzzUnmarshal(f *testing.F) {
	for _, b := range []Batch{{ProjectID: 1, Runs: []Run{seconds("a", 3), seconds("b", 1)}}, {ProjectID: 9}} {
		data, err := Marshal(b)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := Unmarshal(data)
		if err != nil {
			return
		}
		again, err := Marshal(b)
		if err != nil {
			t.Fatalf("decoded %+v does not encode: %v", b, err)
		}
		b2, err := Unmarshal(again)
		if err != nil || !same(b, b2) {
			t.Fatalf("round trip of %+v: %+v, %v", b, b2, err)
		}
	})
}
