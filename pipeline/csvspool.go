package pipeline

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"

	"github.com/openbdp/bdp/codec"
)

// The two ends of a CSV import (csvimport.go): chunkWriter stores chunks
// through the Sink while the next one is parsed; spool holds an
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
	sink   Sink
	jobs   chan []Observation
	done   chan struct{}
	once   sync.Once
	failed atomic.Bool
	err    error // written by run before done closes
	stored atomic.Int64
}

func newChunkWriter(ctx context.Context, sink Sink) *chunkWriter {
	w := &chunkWriter{ctx: ctx, sink: sink, jobs: make(chan []Observation, 1), done: make(chan struct{})}
	go w.run()
	return w
}

func (w *chunkWriter) run() {
	defer close(w.done)
	for chunk := range w.jobs {
		if w.err != nil {
			continue // after a failure nothing more is written
		}
		if err := w.sink.Write(w.ctx, SourceCSV, chunk); err != nil {
			w.err = err
			w.failed.Store(true)
			continue
		}
		w.stored.Add(int64(len(chunk)))
	}
}

// put queues a chunk; it blocks while one is written and one waits.
func (w *chunkWriter) put(chunk []Observation) error {
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

// spool keeps the chunks of an abort-mode import: the first memChunks in
// memory, the rest in a temporary file in the format of codec's
// SpoolEncoder, read back in chunks of chunk observations.
type spool struct {
	projectID int64
	memChunks int
	chunk     int
	mem       [][]Observation
	f         *os.File
	w         *bufio.Writer
	enc       codec.SpoolEncoder
	onDisk    int
}

func (sp *spool) put(chunk []Observation) error {
	if len(sp.mem) < sp.memChunks {
		sp.mem = append(sp.mem, chunk)
		return nil
	}
	if sp.f == nil {
		f, err := os.CreateTemp("", "bdp-import-*.spool")
		if err != nil {
			return fmt.Errorf("create the import spool: %w", err)
		}
		sp.f, sp.w = f, bufio.NewWriterSize(f, 1<<20)
	}
	for _, o := range chunk {
		if err := sp.enc.Write(sp.w, o.DataPointID, o.Time, o.Value); err != nil {
			return fmt.Errorf("write the import spool: %w", err)
		}
	}
	sp.onDisk += len(chunk)
	return nil
}

// replay hands every chunk to put, in file order.
func (sp *spool) replay(put func([]Observation) error, progress func()) error {
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
	dec := codec.NewSpoolDecoder(bufio.NewReaderSize(sp.f, 1<<20))
	chunk := make([]Observation, 0, sp.chunk)
	for i := 0; i < sp.onDisk; i++ {
		id, t, v, err := dec.Next()
		if err != nil {
			return err
		}
		chunk = append(chunk, Observation{ProjectID: sp.projectID, DataPointID: id, Time: t, Value: v})
		if len(chunk) == sp.chunk {
			if err := put(chunk); err != nil {
				return err
			}
			chunk = make([]Observation, 0, sp.chunk) // put owns the old one
			progress()
		}
	}
	if len(chunk) > 0 {
		return put(chunk)
	}
	return nil
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
