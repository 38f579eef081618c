package http

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/openbdp/bdp/pipeline"
)

// The two ends of a CSV import (csvimport.go): chunkWriter stores chunks
// through the pipeline while the next one is parsed; spool holds an
// abort-mode import aside until its last line is checked.

// errWriteFailed tells the parser that an earlier chunk failed to store;
// chunkWriter.close has the cause.
var errWriteFailed = errors.New("an import chunk failed to store")

// chunkWriter writes chunks in order, one Sink.Write each, in a goroutine
// of its own, so parsing goes on during a write. One write at a time
// keeps file order: a later line at the same time as an earlier one must
// replace it, not the other way round.
type chunkWriter struct {
	ctx    context.Context
	sink   pipeline.Sink
	jobs   chan []pipeline.Observation
	done   chan struct{}
	once   sync.Once
	failed atomic.Bool
	err    error // written by run before done closes
	stored atomic.Int64
}

func newChunkWriter(ctx context.Context, sink pipeline.Sink) *chunkWriter {
	w := &chunkWriter{ctx: ctx, sink: sink, jobs: make(chan []pipeline.Observation, 1), done: make(chan struct{})}
	go w.run()
	return w
}

func (w *chunkWriter) run() {
	defer close(w.done)
	for chunk := range w.jobs {
		if w.err != nil {
			continue // after a failure nothing more is written
		}
		if err := w.sink.Write(w.ctx, pipeline.SourceCSV, chunk); err != nil {
			w.err = err
			w.failed.Store(true)
			continue
		}
		w.stored.Add(int64(len(chunk)))
	}
}

// put queues a chunk; it blocks while one is written and one waits.
func (w *chunkWriter) put(chunk []pipeline.Observation) error {
	if w.failed.Load() {
		return errWriteFailed
	}
	w.jobs <- chunk
	return nil
}

// close waits for the queued chunks and returns the first failure.
func (w *chunkWriter) close() error {
	w.once.Do(func() { close(w.jobs) })
	<-w.done
	return w.err
}

// spoolMaxIDs bounds the spool's table of dataPointIDs; beyond it each
// record carries its identifier.
const spoolMaxIDs = 1 << 20

// spool keeps the chunks of an abort-mode import: the first
// importMemChunks in memory, the rest in a temporary file, one record per
// observation:
//
//	uvarint tag: 0 = new identifier follows (and joins the table),
//	             1 = identifier follows (not in the table),
//	             n ≥ 2 = identifier n-2 of the table
//	[uvarint length, bytes of the identifier]  for tags 0 and 1
//	int64 Unix seconds, uint32 nanoseconds, float64 bits (little endian)
type spool struct {
	projectID int64
	mem       [][]pipeline.Observation
	f         *os.File
	w         *bufio.Writer
	ids       map[string]uint64
	onDisk    int
	rec       []byte
}

func (sp *spool) put(chunk []pipeline.Observation) error {
	if len(sp.mem) < importMemChunks {
		sp.mem = append(sp.mem, chunk)
		return nil
	}
	if sp.f == nil {
		f, err := os.CreateTemp("", "bdp-import-*.spool")
		if err != nil {
			return fmt.Errorf("create the import spool: %w", err)
		}
		sp.f, sp.w, sp.ids = f, bufio.NewWriterSize(f, 1<<20), map[string]uint64{}
	}
	le := binary.LittleEndian
	for _, o := range chunk {
		r := sp.rec[:0]
		if i, ok := sp.ids[o.DataPointID]; ok {
			r = binary.AppendUvarint(r, i+2)
		} else {
			tag := uint64(1)
			if len(sp.ids) < spoolMaxIDs {
				sp.ids[o.DataPointID], tag = uint64(len(sp.ids)), 0
			}
			r = binary.AppendUvarint(r, tag)
			r = binary.AppendUvarint(r, uint64(len(o.DataPointID)))
			r = append(r, o.DataPointID...)
		}
		r = le.AppendUint64(r, uint64(o.Time.Unix()))
		r = le.AppendUint32(r, uint32(o.Time.Nanosecond()))
		r = le.AppendUint64(r, math.Float64bits(o.Value))
		if _, err := sp.w.Write(r); err != nil {
			return fmt.Errorf("write the import spool: %w", err)
		}
		sp.rec = r
	}
	sp.onDisk += len(chunk)
	return nil
}

// replay hands every chunk to put, in file order.
func (sp *spool) replay(put func([]pipeline.Observation) error, progress func()) error {
	for len(sp.mem) > 0 {
		if err := put(sp.mem[0]); err != nil {
			return err
		}
		sp.mem = sp.mem[1:]
		progress()
	}
	if sp.f == nil {
		return nil
	}
	if err := sp.w.Flush(); err != nil {
		return fmt.Errorf("write the import spool: %w", err)
	}
	if _, err := sp.f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("rewind the import spool: %w", err)
	}
	r := bufio.NewReaderSize(sp.f, 1<<20)
	names := make([]string, 0, len(sp.ids))
	chunk := make([]pipeline.Observation, 0, importChunk)
	var fixed [20]byte
	le := binary.LittleEndian
	for i := 0; i < sp.onDisk; i++ {
		tag, err := binary.ReadUvarint(r)
		if err != nil {
			return fmt.Errorf("read the import spool: %w", err)
		}
		var id string
		if tag >= 2 {
			if tag-2 >= uint64(len(names)) {
				return fmt.Errorf("read the import spool: identifier %d of %d", tag-2, len(names))
			}
			id = names[tag-2]
		} else {
			if id, err = readSpoolID(r); err != nil {
				return err
			}
			if tag == 0 {
				names = append(names, id)
			}
		}
		if _, err := io.ReadFull(r, fixed[:]); err != nil {
			return fmt.Errorf("read the import spool: %w", err)
		}
		chunk = append(chunk, pipeline.Observation{ProjectID: sp.projectID, DataPointID: id,
			Time:  time.Unix(int64(le.Uint64(fixed[0:8])), int64(le.Uint32(fixed[8:12]))).UTC(),
			Value: math.Float64frombits(le.Uint64(fixed[12:20]))})
		if len(chunk) == importChunk {
			if err := put(chunk); err != nil {
				return err
			}
			chunk = make([]pipeline.Observation, 0, importChunk) // put owns the old one
			progress()
		}
	}
	if len(chunk) > 0 {
		return put(chunk)
	}
	return nil
}

func readSpoolID(r *bufio.Reader) (string, error) {
	n, err := binary.ReadUvarint(r)
	if err != nil || n > 1<<16 {
		return "", fmt.Errorf("read the import spool: identifier length %d: %w", n, err)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return "", fmt.Errorf("read the import spool: %w", err)
	}
	return string(b), nil
}

// close deletes the spool file.
func (sp *spool) close() {
	sp.mem = nil
	if sp.f != nil {
		sp.f.Close()
		os.Remove(sp.f.Name())
		sp.f = nil
	}
}
