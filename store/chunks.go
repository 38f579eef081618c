package store

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/openbdp/bdp/store/chunkenc"
)

// Compact storage (issue 21). A datapoint's observations live in two
// places: the head, the partitioned row table observations, where every
// write lands; and sealed chunks, observation_chunks, one row per run of
// up to ChunkPoints points of one datapoint within one week, compressed by
// chunkenc. The sealer (sealer.go) moves closed weeks from the head into
// chunks, in transactions that delete the rows they put into a chunk.
//
// Every read is one statement over both, so it sees one snapshot: a seal
// committing meanwhile is either wholly in it or not at all, and no point
// is seen twice or missed. A late write into a sealed week lands in the
// head; where the head and a chunk hold the same time, the head wins (it
// is the newer write), until the sealer merges them.

// ChunkPoints bounds the points of one chunk: a week of one-minute data
// (10,080) fits in one; denser data takes several.
const ChunkPoints = 16384

// codecPool lends chunk codecs: each holds a zstd encoder and decoder,
// costly to make, and a buffer of decoded points that its reads reuse
// (a week of minute data is 160 KiB of them), and serves one caller at a
// time.
type codecPool struct{ idle chan *pooledCodec }

type pooledCodec struct {
	*chunkenc.Codec
	points []chunkenc.Point // scratch for Decode; kept up to keptPoints
}

// keptPoints bounds the scratch a pooled codec keeps between reads.
const keptPoints = 4 * ChunkPoints

func newCodecPool(size int) codecPool { return codecPool{idle: make(chan *pooledCodec, size)} }

func (p codecPool) get() (*pooledCodec, error) {
	select {
	case c := <-p.idle:
		return c, nil
	default:
		c, err := chunkenc.NewCodec()
		if err != nil {
			return nil, err
		}
		return &pooledCodec{Codec: c}, nil
	}
}

func (p codecPool) put(c *pooledCodec) {
	if cap(c.points) > keptPoints {
		c.points = nil
	}
	select {
	case p.idle <- c:
	default:
		c.Close()
	}
}

// mergedSQL reads one datapoint's observations in [$2, $3): the chunks
// that overlap the range, as many as hold $4 points from the end the order
// starts at ($4 NULL: all), and the head's rows, at most $4 of them from
// that end. A chunk counts its n towards $4 only when it lies wholly
// inside the range: one that reaches outside holds fewer points of it, so
// the next chunk is read too. When the chunks read hold $4 points, no head
// row beyond them can be among the answer: the head is read only up to
// where they reach (headBound), so that PostgreSQL skips the partitions
// of every other week (a datapoint whose weeks are all sealed made a
// newest-1000 read probe an empty index in each). Rows: (time, value,
// NULL) of the head, (first_time, 0, data) of a chunk. Take it from
// mergedQuery.
const mergedSQL = `
WITH c AS MATERIALIZED (
  SELECT first_time, last_time, data, sum(inside) OVER w AS upto, sum(inside) OVER w - inside AS before FROM (
    SELECT first_time, last_time, data, CASE WHEN first_time >= $2 AND last_time < $3 THEN n ELSE 0 END AS inside
    FROM observation_chunks WHERE datapoint = $1 AND first_time < $3 AND last_time >= $2) r
  WINDOW w AS (ORDER BY first_time %[1]s ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)),
k AS MATERIALIZED (SELECT first_time, last_time, upto, data FROM c WHERE $4::bigint IS NULL OR before < $4)
SELECT time, value, NULL::bytea FROM (
  SELECT time, value FROM observations WHERE datapoint = $1 AND time >= $2 AND time < $3 AND %[2]s
  ORDER BY time %[1]s LIMIT $4) h
UNION ALL
SELECT first_time, 0, data FROM k`

// headBound is mergedSQL's bound on the head, by order: the oldest time
// of the chunks read (newest first) or their newest (oldest first), when
// they hold $4 points.
var headBound = map[string]string{
	"DESC": `time >= coalesce((SELECT CASE WHEN max(upto) >= $4 THEN min(first_time) END FROM k), '-infinity')`,
	"ASC":  `time <= coalesce((SELECT CASE WHEN max(upto) >= $4 THEN max(last_time) END FROM k), 'infinity')`,
}

// mergedQuery is mergedSQL for the newest first (DESC) or the oldest
// first (ASC).
func mergedQuery(order string) string { return fmt.Sprintf(mergedSQL, order, headBound[order]) }

// readMerged answers up to limit observations (limit ≤ 0: all) of a
// datapoint in [from, to), from the oldest (ascending) or, with newest,
// from the newest (descending); a zero from or to leaves that side open.
func (s *Store) readMerged(ctx context.Context, datapoint int64, from, to time.Time, newest bool, limit int) ([]Point, error) {
	var lo, hi any = "-infinity", "infinity"
	if !from.IsZero() {
		lo = from
	}
	if !to.IsZero() {
		hi = to
	}
	var lim *int64
	if limit > 0 {
		l := int64(limit)
		lim = &l
	}
	order := "ASC"
	if newest {
		order = "DESC"
	}
	rows, err := s.pool.Query(ctx, mergedQuery(order), datapoint, lo, hi, lim)
	if err != nil {
		return nil, err
	}
	head, chunks, err := collectMerged(rows, min(max(limit, 0), 4096))
	if err != nil {
		return nil, err
	}
	if newest {
		slices.Reverse(head)
	}
	return s.finishMerged(head, chunks, from, to, newest, limit)
}

// collectMerged splits mergedSQL's rows into head points (in the query's
// order) and chunks. Binary rows are decoded by hand, as appendPoints
// does, for speed.
func collectMerged(rows pgx.Rows, capHint int) (head []Point, chunks [][]byte, err error) {
	defer rows.Close()
	head = make([]Point, 0, capHint)
	fds := rows.FieldDescriptions()
	binaryRows := len(fds) == 3 && fds[0].Format == pgx.BinaryFormatCode && fds[1].Format == pgx.BinaryFormatCode
	for rows.Next() {
		if !binaryRows {
			var p Point
			var data []byte
			if err := rows.Scan(&p.Time, &p.Value, &data); err != nil {
				return nil, nil, err
			}
			if data != nil {
				chunks = append(chunks, data)
			} else {
				head = append(head, p)
			}
			continue
		}
		raw := rows.RawValues()
		if len(raw) == 3 && raw[2] != nil {
			chunks = append(chunks, slices.Clone(raw[2])) // raw is reused by the next row
			continue
		}
		p, err := decodePoint(raw[:2])
		if err != nil {
			return nil, nil, err
		}
		head = append(head, p)
	}
	return head, chunks, rows.Err()
}

// finishMerged merges ascending head rows with the chunks' points in
// [from, to) and keeps limit of them (≤ 0: all) from the oldest, or from
// the newest (then in descending order).
func (s *Store) finishMerged(head []Point, chunks [][]byte, from, to time.Time, newest bool, limit int) ([]Point, error) {
	if newest && limit > 0 && len(chunks) > 0 {
		return s.newestMerged(head, chunks, from, to, limit)
	}
	pts := head
	if len(chunks) > 0 {
		next, release, err := s.mergedSource(head, chunks, from, to)
		if err != nil {
			return nil, err
		}
		defer release()
		n := len(head)
		for _, c := range chunks {
			if h, _, err := chunkenc.ParseHeader(c); err == nil {
				n += h.N
			}
		}
		if limit > 0 && !newest {
			n = min(n, limit) // the oldest limit: the merge stops there
		}
		pts = make([]Point, 0, n)
		for limit <= 0 || newest || len(pts) < limit {
			p, ok, err := next()
			if err != nil {
				return nil, err
			}
			if !ok {
				break
			}
			pts = append(pts, p)
		}
	}
	if newest {
		if limit > 0 && len(pts) > limit {
			pts = pts[len(pts)-limit:] // the newest limit, before reversing them alone
		}
		slices.Reverse(pts)
	} else if limit > 0 && len(pts) > limit {
		pts = pts[:limit]
	}
	return pts, nil
}

// newestMerged is finishMerged's newest limit points, newest first: the
// chunks decoded whole (they are the fewest that hold limit points), then
// merged backwards in microseconds with the head, so that only the points
// kept become Points (a newest-1000 read over a week's chunk spent its
// time making 10,080).
func (s *Store) newestMerged(head []Point, chunks [][]byte, from, to time.Time, limit int) ([]Point, error) {
	if err := sortChunks(chunks); err != nil {
		return nil, err
	}
	codec, err := s.codecs.get()
	if err != nil {
		return nil, err
	}
	defer s.codecs.put(codec)
	raw := codec.points[:0]
	for _, c := range chunks {
		if raw, err = codec.Decode(raw, c); err != nil {
			return nil, fmt.Errorf("read a sealed chunk: %w", err)
		}
	}
	codec.points = raw
	// The chunks' points in [from, to): raw[lo:hi].
	lo, hi := 0, len(raw)
	if !from.IsZero() {
		at := from.UnixMicro()
		lo, _ = slices.BinarySearchFunc(raw, at, func(p chunkenc.Point, t int64) int { return cmp.Compare(p.UnixMicro, t) })
	}
	if !to.IsZero() {
		at := to.UnixMicro()
		hi, _ = slices.BinarySearchFunc(raw, at, func(p chunkenc.Point, t int64) int { return cmp.Compare(p.UnixMicro, t) })
	}
	out := make([]Point, 0, min(limit, len(head)+max(hi-lo, 0)))
	i, j := len(head)-1, hi-1
	for len(out) < limit && (i >= 0 || j >= lo) {
		switch {
		case j < lo || (i >= 0 && head[i].Time.UnixMicro() > raw[j].UnixMicro):
			out = append(out, head[i])
			i--
		case i >= 0 && head[i].Time.UnixMicro() == raw[j].UnixMicro: // the head wins
			out = append(out, head[i])
			i, j = i-1, j-1
		default:
			out = append(out, Point{Time: time.UnixMicro(raw[j].UnixMicro).UTC(), Value: raw[j].Value})
			j--
		}
	}
	return out, nil
}

// sortChunks orders chunks by their first time.
func sortChunks(chunks [][]byte) error {
	firsts := make(map[*byte]int64, len(chunks))
	for _, c := range chunks {
		h, _, err := chunkenc.ParseHeader(c)
		if err != nil {
			return fmt.Errorf("read a sealed chunk: %w", err)
		}
		firsts[&c[0]] = h.First
	}
	slices.SortFunc(chunks, func(a, b []byte) int { return cmp.Compare(firsts[&a[0]], firsts[&b[0]]) })
	return nil
}

// mergedSource streams the head rows (ascending) and the chunks' points
// in [from, to) in ascending order, the head's where both hold a time,
// decoding one chunk at a time; release returns its codec.
func (s *Store) mergedSource(head []Point, chunks [][]byte, from, to time.Time) (next pointSource, release func(), err error) {
	if err := sortChunks(chunks); err != nil {
		return nil, nil, err
	}
	codec, err := s.codecs.get()
	if err != nil {
		return nil, nil, err
	}
	lo, hi := int64(-1<<63), int64(1<<63-1)
	if !from.IsZero() {
		lo = from.UnixMicro()
	}
	if !to.IsZero() {
		hi = to.UnixMicro()
	}
	var (
		buf    = codec.points[:0]
		bi, ci int
		sealed *chunkenc.Point // the next chunk point, nil when none is left
		hi2    int             // next head row
	)
	advance := func() error { // the next chunk point in range into sealed
		sealed = nil
		for {
			for bi < len(buf) {
				p := &buf[bi]
				bi++
				if p.UnixMicro >= lo && p.UnixMicro < hi {
					sealed = p
					return nil
				}
			}
			if ci == len(chunks) {
				return nil
			}
			if buf, err = codec.Decode(buf[:0], chunks[ci]); err != nil {
				return fmt.Errorf("read a sealed chunk: %w", err)
			}
			bi, ci = 0, ci+1
		}
	}
	if err := advance(); err != nil {
		s.codecs.put(codec)
		return nil, nil, err
	}
	next = func() (Point, bool, error) {
		if hi2 < len(head) {
			h := head[hi2]
			at := h.Time.UnixMicro()
			if sealed == nil || at < sealed.UnixMicro {
				hi2++
				return h, true, nil
			}
			if at == sealed.UnixMicro { // the head wins
				hi2++
				return h, true, advance()
			}
		}
		if sealed == nil {
			return Point{}, false, nil
		}
		p := Point{Time: time.UnixMicro(sealed.UnixMicro).UTC(), Value: sealed.Value}
		return p, true, advance()
	}
	return next, func() { codec.points = buf; s.codecs.put(codec) }, nil
}
