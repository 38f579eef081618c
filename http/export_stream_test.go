package http

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/openbdp/bdp/store"
)

// A read of more observations than one answer holds in memory is
// streamed: max=0, and start with end, return all (api.md 4.7 and 8), and
// any max is honoured, in ascending order, with the same fields as any
// answer.
func TestExportStreamsPastTheReadLimit(t *testing.T) {
	e := newTestEnv(t)
	c := e.newCompany()
	pid, _ := e.newProject(c.Admin)
	ctx := context.Background()
	ids, err := e.store.EnsureDatapoints(ctx, pid, []string{"dense"})
	if err != nil {
		t.Fatal(err)
	}
	const n = store.MaxReadPoints + 5
	t0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(i int) time.Time { return t0.Add(time.Duration(i) * time.Second) }
	rows := make([]store.Row, 0, 200_000)
	for i := 0; i < n; i++ {
		rows = append(rows, store.Row{Datapoint: ids["dense"], Time: at(i), Value: float64(i)})
		if len(rows) == cap(rows) || i == n-1 {
			if err := e.store.WriteObservations(ctx, rows); err != nil {
				t.Fatal(err)
			}
			rows = rows[:0]
		}
	}
	type answer struct {
		Data []struct {
			Time  time.Time `json:"time"`
			Value float64   `json:"value"`
		} `json:"data"`
		DataPointID string `json:"dataPointID"`
		Tags        []any  `json:"tags"`
	}
	for _, tc := range []struct {
		name        string
		query       string
		first, last int
	}{
		{"max=0", "max=0", 0, n - 1},
		{"start and end", "start=" + at(3).Format(time.RFC3339) + "&end=" + at(n).Format(time.RFC3339), 3, n - 1},
		{"start and a large max", "start=" + at(2).Format(time.RFC3339) + fmt.Sprintf("&max=%d", store.MaxReadPoints+1), 2, store.MaxReadPoints + 2},
		{"end and max=0", "end=" + at(n-2).Format(time.RFC3339) + "&max=0", 0, n - 3},
		{"the newest large max", fmt.Sprintf("max=%d", store.MaxReadPoints+1), n - store.MaxReadPoints - 1, n - 1},
		{"the last large max before end", "end=" + at(n-1).Format(time.RFC3339) + fmt.Sprintf("&max=%d", store.MaxReadPoints+1), n - store.MaxReadPoints - 2, n - 2},
		{"a max beyond what is stored", fmt.Sprintf("max=%d", 2*store.MaxReadPoints), 0, n - 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do("GET", "/v2/datapoint/timeseries?project_id="+itoa(pid)+"&dataPointID=dense&"+url.PathEscape(tc.query), c.Admin, nil).want(t, 200)
			var a answer
			if err := json.Unmarshal(r.Body, &a); err != nil {
				t.Fatalf("the answer does not parse: %v", err)
			}
			if want := tc.last - tc.first + 1; len(a.Data) != want || a.DataPointID != "dense" || a.Tags == nil {
				t.Fatalf("%d observations of %q (tags %v), want %d", len(a.Data), a.DataPointID, a.Tags, want)
			}
			for i, p := range a.Data {
				if k := tc.first + i; !p.Time.Equal(at(k)) || p.Value != float64(k) {
					t.Fatalf("observation %d is %s %v, want %s %d", i, p.Time, p.Value, at(k), k)
				}
			}
		})
	}
	// The short form and closed_interval's points stream as well: a point
	// at start carrying observation 2, observations 3 to n-1, a point at
	// end carrying n-1.
	t.Run("short and closed_interval", func(t *testing.T) {
		start, end := at(2).Add(time.Second/2), at(n-1).Add(time.Second/2)
		q := url.Values{"project_id": {itoa(pid)}, "dataPointID": {"dense"}, "short": {"true"}, "closed_interval": {"true"},
			"start": {start.Format(time.RFC3339Nano)}, "end": {end.Format(time.RFC3339Nano)}}
		r := e.do("GET", "/v2/datapoint/timeseries?"+q.Encode(), c.Admin, nil).want(t, 200)
		var pairs []struct {
			Time  time.Time
			Value float64
		}
		var raw [][2]json.RawMessage
		if err := json.Unmarshal(r.Body, &raw); err != nil {
			t.Fatalf("the answer does not parse: %v", err)
		}
		for _, p := range raw {
			var x struct {
				Time  time.Time
				Value float64
			}
			if json.Unmarshal(p[0], &x.Time) != nil || json.Unmarshal(p[1], &x.Value) != nil {
				t.Fatalf("not a [time, value] pair: %s %s", p[0], p[1])
			}
			pairs = append(pairs, x)
		}
		if len(pairs) != n-1 || pairs[0].Value != 2 || !pairs[0].Time.Equal(start) ||
			pairs[len(pairs)-1].Value != n-1 || !pairs[len(pairs)-1].Time.Equal(end) {
			t.Fatalf("%d pairs, first %v, last %v", len(pairs), pairs[0], pairs[len(pairs)-1])
		}
		for i, p := range pairs[1 : len(pairs)-1] {
			if k := 3 + i; !p.Time.Equal(at(k)) || p.Value != float64(k) {
				t.Fatalf("pair %d is %v, want %s %d", i+1, p, at(k), k)
			}
		}
	})
}
