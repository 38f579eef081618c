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
// newest or oldest first, as mergedSQL reads one: the sealed chunks that
// hold its first points (k), and the head through the primary key, one
// index range scan per request, bounded to where the chunks reach when
// they hold the page (so that PostgreSQL skips the other weeks'
// partitions). Rows: (i, time, value, NULL) of the head, (i, first_time,
// 0, data) of a chunk. Take it from pagesQuery.
const pagesSQL = `
WITH r AS MATERIALIZED (
  SELECT r.*, d.id AS dp
  FROM unnest($1::bigint[], $2::text[], $3::timestamptz[], $4::timestamptz[], $5::int[], $6::int[])
         AS r(project, name, since, before, lim, i)
  JOIN datapoints d ON d.project_id = r.project AND d.datapoint_id = r.name),
k AS MATERIALIZED (
  SELECT r.i, c.first_time, c.last_time, c.upto, c.data FROM r
  CROSS JOIN LATERAL (
    SELECT first_time, last_time, data, sum(inside) OVER w AS upto, sum(inside) OVER w - inside AS before FROM (
      SELECT first_time, last_time, data, CASE WHEN first_time >= r.since AND last_time < r.before THEN n ELSE 0 END AS inside
      FROM observation_chunks WHERE datapoint = r.dp AND first_time < r.before AND last_time >= r.since) x
    WINDOW w AS (ORDER BY first_time %[1]s ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)) c
  WHERE c.before < r.lim),
b AS (SELECT r.*, %[2]s AS bound FROM r LEFT JOIN k ON k.i = r.i GROUP BY r.project, r.name, r.since, r.before, r.lim, r.i, r.dp)
SELECT b.i, o.time, o.value, NULL::bytea FROM b
CROSS JOIN LATERAL (
  SELECT time, value FROM observations
  WHERE datapoint = b.dp AND time >= b.since AND time < b.before AND %[3]s
  ORDER BY time %[1]s LIMIT b.lim) o
UNION ALL
SELECT i, first_time, 0, data FROM k`

// pagesQuery is pagesSQL for the newest first (DESC) or the oldest first
// (ASC), with its bound on the head (headBound's).
func pagesQuery(order string) string {
	if order == "DESC" {
		return fmt.Sprintf(pagesSQL, order, `CASE WHEN max(k.upto) >= r.lim THEN min(k.first_time) END`, `time >= coalesce(b.bound, '-infinity')`)
	}
	return fmt.Sprintf(pagesSQL, order, `CASE WHEN max(k.upto) >= r.lim THEN max(k.last_time) END`, `time <= coalesce(b.bound, 'infinity')`)
}

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
	rows, err := s.pool.Query(ctx, pagesQuery(order), projects, names, since, before, limits, index)
	if err != nil {
		return fmt.Errorf("read observations: %w", err)
	}
	defer rows.Close()
	chunks := map[int32][][]byte{}
	var i int32
	var p Point
	var data []byte
	for rows.Next() {
		if err := rows.Scan(&i, &p.Time, &p.Value, &data); err != nil {
			return fmt.Errorf("read observations: %w", err)
		}
		if data != nil {
			chunks[i] = append(chunks[i], data)
			data = nil // Scan reuses a non-nil buffer
			continue
		}
		p.Time = p.Time.UTC() // as the single reads answer it
		pages[i] = append(pages[i], p)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read observations: %w", err)
	}
	// The rows of one lateral come in its order in practice, but SQL
	// promises no order without ORDER BY over the whole result.
	for _, j := range index {
		slices.SortFunc(pages[j], func(a, b Point) int { return a.Time.Compare(b.Time) })
		if len(chunks[j]) == 0 {
			if newest {
				slices.Reverse(pages[j])
			}
			continue
		}
		r := reqs[j]
		merged, err := s.finishMerged(pages[j], chunks[j], r.From, r.To, newest, r.Limit)
		if err != nil {
			return err
		}
		pages[j] = merged
	}
	return nil
}
