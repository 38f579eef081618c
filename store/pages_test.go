package store

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"
)

// ReadPages answers each request exactly as the one-datapoint reads do
// (ReadPageBefore for the newest first, ReadPage for the oldest first),
// whatever else is in the batch: open and closed ranges, limits that cut
// and limits that do not, an empty range, a datapoint of another project
// and one that does not exist.
func TestReadPagesAnswersEachAsTheSingleReads(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	project, other := benchProject(t, s), companyProject(t, s, "other")
	ids, err := s.EnsureDatapoints(ctx, project, []string{"a", "b", "c"})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	var rows []Row
	for i := range 100 {
		// a: every minute; b: every other minute; c: nothing.
		rows = append(rows, Row{Datapoint: ids["a"], Time: t0.Add(time.Duration(i) * time.Minute), Value: float64(i)})
		if i%2 == 0 {
			rows = append(rows, Row{Datapoint: ids["b"], Time: t0.Add(time.Duration(i)*time.Minute + time.Microsecond), Value: -float64(i)})
		}
	}
	if err := s.WriteObservations(ctx, rows); err != nil {
		t.Fatal(err)
	}
	at := func(min int) time.Time { return t0.Add(time.Duration(min) * time.Minute) }
	reqs := []PageRequest{
		{Project: project, Name: "a", To: at(50), Limit: 10, Newest: true},               // open start
		{Project: project, Name: "a", From: at(45), To: at(50), Limit: 10, Newest: true}, // limit does not cut
		{Project: project, Name: "b", From: at(10), To: at(90), Limit: 7},                // oldest first
		{Project: project, Name: "b", To: at(200), Limit: 1000, Newest: true},            // all of it
		{Project: project, Name: "a", From: at(60), To: at(60), Limit: 5},                // empty range
		{Project: project, Name: "c", To: at(200), Limit: 5, Newest: true},               // no observation
		{Project: project, Name: "missing", To: at(200), Limit: 5},                       // no datapoint
		{Project: other, Name: "a", To: at(200), Limit: 5, Newest: true},                 // another project's name
		{Project: project, Name: "a", From: at(99), To: at(200), Limit: 0},               // no limit, nothing
	}
	got, err := s.ReadPages(ctx, reqs)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range reqs {
		t.Run(fmt.Sprintf("%d_%s", i, r.Name), func(t *testing.T) {
			var want []Point
			if id, ok := ids[r.Name]; ok && r.Project == project {
				read := s.ReadPage
				if r.Newest {
					read = s.ReadPageBefore
				}
				if want, err = read(ctx, id, r.From, r.To, r.Limit); err != nil {
					t.Fatal(err)
				}
			}
			if !slices.Equal(got[i], want) {
				t.Errorf("ReadPages answered %v, the single read %v", got[i], want)
			}
		})
	}
	if len(got[3]) != 50 || len(got[0]) != 10 || !got[0][0].Time.Equal(at(49)) {
		t.Errorf("the reads themselves are off: %d, %d, %v", len(got[3]), len(got[0]), got[0])
	}
}
