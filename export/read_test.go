package export

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/openbdp/bdp/store"
)

var h0 = time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)

func hour(i int) time.Time { return h0.Add(time.Duration(i) * time.Hour) }

// cells writes points as hour:value, null for NaN.
func cells(pts []store.Point) string {
	out := make([]string, len(pts))
	for i, p := range pts {
		v := fmt.Sprint(p.Value)
		if math.IsNaN(p.Value) {
			v = "null"
		}
		out[i] = fmt.Sprintf("%d:%s", int(p.Time.Sub(h0)/time.Hour), v)
	}
	return strings.Join(out, " ")
}

func TestFillIntervals(t *testing.T) {
	pts := []store.Point{{Time: hour(1), Value: 2}, {Time: hour(4), Value: 8}}
	tests := []struct {
		how        Interpolation
		start, end time.Time
		want       string
	}{
		{InterpNone, hour(0), hour(6), "1:2 4:8"},
		{InterpNull, hour(0), hour(6), "0:null 1:2 2:null 3:null 4:8 5:null"},
		{InterpPrevious, hour(0), hour(6), "0:null 1:2 2:2 3:2 4:8 5:8"},
		{InterpLinear, hour(0), hour(6), "0:null 1:2 2:4 3:6 4:8 5:null"},
		// end inside an interval: that interval counts; start inside one
		// begins at its start.
		{InterpNull, hour(1).Add(30 * time.Minute), hour(4).Add(time.Minute), "1:2 2:null 3:null 4:8"},
		{InterpNull, hour(2), hour(2), "1:2 4:8"}, // an empty range fills nothing
	}
	for _, tt := range tests {
		got := cells(fillIntervals(pts, tt.start, tt.end, time.Hour, store.SampleOrigin, tt.how))
		if got != tt.want {
			t.Errorf("%s [%s, %s): %s, want %s", tt.how, tt.start.Format(time.Kitchen), tt.end.Format(time.Kitchen), got, tt.want)
		}
	}
	// Linear between the extremes does not overflow.
	big := []store.Point{{Time: hour(0), Value: -math.MaxFloat64}, {Time: hour(2), Value: math.MaxFloat64}}
	if got := fillIntervals(big, hour(0), hour(3), time.Hour, store.SampleOrigin, InterpLinear); got[1].Value != 0 {
		t.Fatalf("between -max and max: %v", got[1].Value)
	}
}

func TestAutoInterval(t *testing.T) {
	tests := []struct {
		span time.Duration
		n    int64
		want time.Duration
	}{
		{24 * time.Hour, 200, 432 * time.Second},
		{24*time.Hour + time.Millisecond, 200, 433 * time.Second}, // rounded up: never more than n intervals
		{time.Minute, 200, time.Second},                           // at least a second
		{0, 200, time.Second},
	}
	for _, tt := range tests {
		if got := autoInterval(h0, h0.Add(tt.span), tt.n); got != tt.want {
			t.Errorf("%s / %d: %s, want %s", tt.span, tt.n, got, tt.want)
		}
	}
	if got := FormatEvery(time.Hour); got != "3600s" {
		t.Fatalf("FormatEvery: %s", got)
	}
}

func TestWithBounds(t *testing.T) {
	pts := []store.Point{{Time: hour(1), Value: 1}}
	head, tail := &store.Point{Time: hour(0), Value: 0}, &store.Point{Time: hour(2), Value: 2}
	tests := []struct {
		head, tail *store.Point
		want       string
	}{
		{nil, nil, "1:1"},
		{head, nil, "0:0 1:1"},
		{nil, tail, "1:1 2:2"},
		{head, tail, "0:0 1:1 2:2"},
	}
	for _, tt := range tests {
		if got := cells(withBounds(pts, tt.head, tt.tail)); got != tt.want {
			t.Errorf("%s, want %s", got, tt.want)
		}
	}
}
