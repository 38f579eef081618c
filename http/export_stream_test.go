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
}
