package store

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// PageRequest is one read of ReadPages: up to Limit observations of the
// datapoint Name of Project in [From, To), the newest first when Newest,
// else the oldest first. A zero From leaves that side open.
type PageRequest struct {
	Project  int64
	Name     string
	From, To time.Time
	Limit    int
	Newest   bool
}

// ReadPages answers many page reads in one query per direction: pages[i]
// is what ReadPageBefore (Newest) or ReadPage would answer for reqs[i],
// and nothing for a datapoint that does not exist. It serves virtual
// datapoints starting by the thousand (after a restart of the platform),
// whose window refills are each a small page: one round trip per page
// made the database's per-query cost, not the data, what a restart waited
// for. The caller bounds the sum of the limits; the answer is held in
// memory.
func (s *Store) ReadPages(ctx context.Context, reqs []PageRequest) ([][]Point, error) {
	pages := make([][]Point, len(reqs))
	for _, newest := range []bool{true, false} {
		if err := s.readPages(ctx, reqs, newest, pages); err != nil {
			return nil, err
		}
	}
	return pages, nil
}

// pagesSQL reads, for each request (its index i), its datapoint's page
// through the primary key, newest or oldest first: one index range scan
// per request, as ReadPage and ReadPageBefore do each on their own.
const pagesSQL = `
SELECT r.i, o.time, o.value
FROM unnest($1::bigint[], $2::text[], $3::timestamptz[], $4::timestamptz[], $5::int[], $6::int[])
       AS r(project, name, since, before, lim, i)
JOIN datapoints d ON d.project_id = r.project AND d.datapoint_id = r.name
CROSS JOIN LATERAL (
  SELECT time, value FROM observations
  WHERE datapoint = d.id AND time >= r.since AND time < r.before
  ORDER BY time %s LIMIT r.lim) o`

func (s *Store) readPages(ctx context.Context, reqs []PageRequest, newest bool, pages [][]Point) error {
	var projects []int64
	var names []string
	var since, before []time.Time
	var limits, index []int32
	for i, r := range reqs {
		if r.Newest != newest || r.Limit <= 0 || (!r.From.IsZero() && !r.To.After(r.From)) {
			continue
		}
		projects, names = append(projects, r.Project), append(names, r.Name)
		// A zero From is year 1, before any observation PostgreSQL holds
		// for us: the open side needs no second form of the query.
		since, before = append(since, r.From), append(before, r.To)
		limits, index = append(limits, int32(r.Limit)), append(index, int32(i))
	}
	if len(index) == 0 {
		return nil
	}
	order := "ASC"
	if newest {
		order = "DESC"
	}
	rows, err := s.pool.Query(ctx, fmt.Sprintf(pagesSQL, order), projects, names, since, before, limits, index)
	if err != nil {
		return fmt.Errorf("read observations: %w", err)
	}
	defer rows.Close()
	var i int32
	var p Point
	for rows.Next() {
		if err := rows.Scan(&i, &p.Time, &p.Value); err != nil {
			return fmt.Errorf("read observations: %w", err)
		}
		pages[i] = append(pages[i], p)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read observations: %w", err)
	}
	// The rows of one lateral come in its order in practice, but SQL
	// promises no order without ORDER BY over the whole result.
	cmpTime := func(a, b Point) int { return a.Time.Compare(b.Time) }
	if newest {
		cmpTime = func(a, b Point) int { return b.Time.Compare(a.Time) }
	}
	for _, j := range index {
		if !slices.IsSortedFunc(pages[j], cmpTime) {
			slices.SortFunc(pages[j], cmpTime)
		}
	}
	return nil
}
