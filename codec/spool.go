package codec

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"time"
)

// The import spool's format: the observations of one CSV import held
// aside in a temporary file until its last line is checked (pipeline.ImportCSV's abort
// mode). One record per observation:
//
//	uvarint tag: 0 = new identifier follows (and joins the table),
//	             1 = identifier follows (not in the table),
//	             n ≥ 2 = identifier n-2 of the table
//	[uvarint length, bytes of the identifier]  for tags 0 and 1
//	int64 Unix seconds, uint32 nanoseconds, float64 bits (little endian)
//
// The table makes a repeated dataPointID a byte or two; it holds at most
// SpoolMaxIDs identifiers, beyond which each record carries its own.

// SpoolMaxIDs bounds the table of dataPointIDs of one spool.
const SpoolMaxIDs = 1 << 20

// spoolMaxIDLength bounds an identifier read back: none written is longer.
const spoolMaxIDLength = 1 << 16

// SpoolEncoder writes records; the zero value is ready.
type SpoolEncoder struct {
	ids map[string]uint64
	rec []byte
}

// Write writes one record to w.
func (e *SpoolEncoder) Write(w io.Writer, dataPointID string, t time.Time, v float64) error {
	if e.ids == nil {
		e.ids = map[string]uint64{}
	}
	r := e.rec[:0]
	if i, ok := e.ids[dataPointID]; ok {
		r = binary.AppendUvarint(r, i+2)
	} else {
		tag := uint64(1)
		if len(e.ids) < SpoolMaxIDs {
			e.ids[dataPointID], tag = uint64(len(e.ids)), 0
		}
		r = binary.AppendUvarint(r, tag)
		r = binary.AppendUvarint(r, uint64(len(dataPointID)))
		r = append(r, dataPointID...)
	}
	le := binary.LittleEndian
	r = le.AppendUint64(r, uint64(t.Unix()))
	r = le.AppendUint32(r, uint32(t.Nanosecond()))
	r = le.AppendUint64(r, math.Float64bits(v))
	e.rec = r
	_, err := w.Write(r)
	return err
}

// SpoolDecoder reads the records a SpoolEncoder wrote, in order.
type SpoolDecoder struct {
	r     *bufio.Reader
	names []string
	fixed [20]byte
}

func NewSpoolDecoder(r *bufio.Reader) *SpoolDecoder { return &SpoolDecoder{r: r} }

// Next reads one record; times come back in UTC.
func (d *SpoolDecoder) Next() (dataPointID string, t time.Time, v float64, err error) {
	tag, err := binary.ReadUvarint(d.r)
	if err != nil {
		return "", time.Time{}, 0, fmt.Errorf("read the import spool: %w", err)
	}
	if tag >= 2 {
		if tag-2 >= uint64(len(d.names)) {
			return "", time.Time{}, 0, fmt.Errorf("read the import spool: identifier %d of %d", tag-2, len(d.names))
		}
		dataPointID = d.names[tag-2]
	} else {
		if dataPointID, err = d.readID(); err != nil {
			return "", time.Time{}, 0, err
		}
		if tag == 0 {
			d.names = append(d.names, dataPointID)
		}
	}
	if _, err := io.ReadFull(d.r, d.fixed[:]); err != nil {
		return "", time.Time{}, 0, fmt.Errorf("read the import spool: %w", err)
	}
	le := binary.LittleEndian
	t = time.Unix(int64(le.Uint64(d.fixed[0:8])), int64(le.Uint32(d.fixed[8:12]))).UTC()
	return dataPointID, t, math.Float64frombits(le.Uint64(d.fixed[12:20])), nil
}

func (d *SpoolDecoder) readID() (string, error) {
	n, err := binary.ReadUvarint(d.r)
	if err != nil || n > spoolMaxIDLength {
		return "", fmt.Errorf("read the import spool: identifier length %d: %w", n, err)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(d.r, b); err != nil {
		return "", fmt.Errorf("read the import spool: %w", err)
	}
	return string(b), nil
}
