package store

import (
	"context"
	"encoding/binary"
	"io"
	"math"

	"github.com/jackc/pgx/v5"
)

// copyRows streams rows into table (observations or its staging table)
// with COPY in PostgreSQL's binary format, encoded by hand. pgx's generic
// CopyFrom asks the server for the column types first (one more round trip
// per batch) and boxes every value into an interface and an encode plan:
// on the ingestion path that was a third of all the bytes allocated. The
// three columns' types are fixed here, so the encoding is a few stores per
// row into the connection's own buffer.
func copyRows(ctx context.Context, tx pgx.Tx, table string, rows []Row) error {
	// table is one of two constants of this package, never client input.
	_, err := tx.Conn().PgConn().CopyFrom(ctx, &binaryCopy{rows: rows},
		`COPY `+table+` (datapoint, "time", value) FROM STDIN (FORMAT binary)`)
	return err
}

// The binary COPY format: a signature, flags and header-extension length,
// then per row a field count and each field as length + big-endian value,
// then -1 as the trailer.
var copySignature = []byte("PGCOPY\n\xff\r\n\x00\x00\x00\x00\x00\x00\x00\x00\x00")

const (
	copyRowSize = 2 + 3*(4+8)
	// microsecondsToY2K is PostgreSQL's epoch (2000-01-01 UTC) in Unix
	// microseconds: timestamptz counts microseconds from there.
	microsecondsToY2K = 946_684_800 * 1_000_000
)

// binaryCopy is an io.Reader over rows in the binary COPY format. It
// writes whole rows into the caller's buffer, which PgConn.CopyFrom sizes
// far above one row.
type binaryCopy struct {
	rows    []Row
	header  bool // written
	trailer bool // written
}

func (c *binaryCopy) Read(p []byte) (int, error) {
	n := 0
	if !c.header {
		if len(p) < len(copySignature) {
			return 0, io.ErrShortBuffer
		}
		n = copy(p, copySignature)
		c.header = true
	}
	for len(c.rows) > 0 && len(p)-n >= copyRowSize {
		putRow(p[n:n+copyRowSize], c.rows[0])
		c.rows = c.rows[1:]
		n += copyRowSize
	}
	if len(c.rows) == 0 && !c.trailer && len(p)-n >= 2 {
		binary.BigEndian.PutUint16(p[n:], 0xffff) // -1
		c.trailer = true
		n += 2
	}
	if n == 0 && c.trailer {
		return 0, io.EOF
	}
	if n == 0 {
		return 0, io.ErrShortBuffer
	}
	return n, nil
}

func putRow(b []byte, r Row) {
	be := binary.BigEndian
	be.PutUint16(b[0:], 3)
	be.PutUint32(b[2:], 8)
	be.PutUint64(b[6:], uint64(r.Datapoint))
	be.PutUint32(b[14:], 8)
	// As pgx encodes a time.Time: truncated to the microsecond.
	us := r.Time.Unix()*1_000_000 + int64(r.Time.Nanosecond())/1000 - microsecondsToY2K
	be.PutUint64(b[18:], uint64(us))
	be.PutUint32(b[26:], 8)
	be.PutUint64(b[30:], math.Float64bits(r.Value))
}
