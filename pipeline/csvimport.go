package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"time"

	"github.com/openbdp/bdp/codec"
	"github.com/openbdp/bdp/fault"
)

// CSV imports (api.md 4.7, CSV rules): a file of observations, parsed and
// checked line by line, stored through a Sink in chunks. No more than a
// few chunks are held at a time, whatever the size of the file.
//
// Continue mode stores good lines in chunks as they come and lists the
// failing ones (a datapoint without write access fails its lines). Should
// the file's reading fail midway (too large, cut short), the chunks stored
// before stay, and the error says how many lines they held.
//
// Abort mode must store nothing when any line fails, yet a Sink.Write
// commits per call and a file can be far bigger than memory. So the file
// is parsed and checked to its end first (every line, every datapoint's
// write access), the observations held aside meanwhile: the first
// ImportMemChunks chunks in memory, the rest in a temporary file under
// os.TempDir in codec's spool format (about 25 bytes a line;
// csvspool.go). Only when the last line is good are they replayed into
// the Sink, in file order, chunk by chunk. A failing line deletes the
// spool and fails the import with nothing stored. One case remains: the
// database failing during the replay leaves the chunks written before it
// stored; the error is then Unavailable and says how many lines were
// stored. Importing the same file again is safe, since a value at the time
// of a stored one replaces it (decisions.md 4). Parsing is quick next to
// storing, so waiting for the last line costs little: ImportCSV returns
// after the last commit in either mode.

const (
	ImportChunk     = 50_000          // observations per Sink.Write
	ImportMemChunks = 4               // abort mode: chunks held in memory before the spool file
	importMaxErrors = 1000            // failing lines listed; the rest are counted
	importLogEvery  = 5 * time.Second // progress log of long imports
)

// WriteAccess tells, for each of names, whether the importing caller may
// write that datapoint. It is asked once per chunk for the names the
// chunk sees first.
type WriteAccess func(ctx context.Context, names []string) (map[string]bool, error)

// CSVImport is what one import needs besides its file.
type CSVImport struct {
	ProjectID int64
	Abort     bool        // on_error=abort: the first failing line stores nothing; else continue
	Access    WriteAccess // nil: the caller may write every datapoint
	Sink      Sink
	Log       *slog.Logger // progress and storage failures; nil: none
}

// ImportResult sums up an import (api.md 4.7 rules 4 and 5).
type ImportResult struct {
	Success       int64        // lines stored
	Failed        int64        // failing lines
	Errors        []FailedLine // in file order, at most 1000
	ErrorsOmitted int64        // failing lines beyond those listed
}

// FailedLine is a line that failed and why.
type FailedLine struct {
	Line   int // 1-based line of the file, header included
	Reason string
}

// ImportCSV parses file and stores its observations into imp.Sink. A
// failing line is an Invalid error in abort mode (Forbidden for a
// datapoint without write access), the line's number first; in continue
// mode it is listed in the result. An error reading file is returned as
// it is (wrapped), with the kind the reader gave it: the caller knows its
// transport (too large, stalled, cut short).
func ImportCSV(ctx context.Context, imp CSVImport, file io.Reader) (ImportResult, error) {
	if imp.Log == nil {
		imp.Log = slog.New(slog.DiscardHandler)
	}
	run := &csvImport{CSVImport: imp, ctx: ctx, start: time.Now()}
	run.lastLog = run.start
	if imp.Access != nil {
		run.access = &accessCache{ask: imp.Access, allowed: map[string]bool{}}
		run.seen = map[string]bool{}
	}
	return run.run(file)
}

// csvImport is one import in progress.
type csvImport struct {
	CSVImport
	ctx     context.Context
	access  *accessCache // nil when the caller may write every datapoint
	res     ImportResult
	chunk   []Observation
	lines   []int           // file line of each chunk entry, when access is checked
	pending []pendingID     // datapoints of this chunk seen for the first time, in order
	seen    map[string]bool // the ids in pending
	writer  *chunkWriter    // nil while abort mode parses
	errs    []FailedLine
	out     func(chunk []Observation) error // takes the chunk, and owns it from then on
	start   time.Time
	lastLog time.Time
	parsed  int
}

type pendingID struct {
	id   string
	line int
}

func (imp *csvImport) run(file io.Reader) (ImportResult, error) {
	var sp *spool
	if imp.Abort {
		sp = &spool{projectID: imp.ProjectID, memChunks: ImportMemChunks, chunk: ImportChunk}
		defer sp.close()
		imp.out = sp.put
	} else {
		imp.writer = newChunkWriter(imp.ctx, imp.Sink)
		defer imp.writer.close()
		imp.out = imp.writer.put
	}
	if err := imp.parse(file); err != nil {
		if errors.Is(err, errWriteFailed) {
			return ImportResult{}, imp.storeError()
		}
		if imp.writer != nil && imp.writer.close() == nil && imp.writer.stored.Load() > 0 {
			// Continue mode stores as it reads: say what stays.
			return ImportResult{}, fault.Wrap(fault.KindOf(err), err, fmt.Sprintf("%s (%d lines were stored before; "+
				"on_error=continue stores lines as they are read)", fault.Message(err), imp.writer.stored.Load()))
		}
		return ImportResult{}, err
	}
	if imp.Abort {
		imp.writer = newChunkWriter(imp.ctx, imp.Sink)
		defer imp.writer.close()
		if err := sp.replay(imp.writer.put, imp.progress); err != nil {
			if errors.Is(err, errWriteFailed) {
				return ImportResult{}, imp.storeError()
			}
			return ImportResult{}, err
		}
	}
	if err := imp.writer.close(); err != nil {
		return ImportResult{}, imp.storeError()
	}
	imp.log("csv import done")
	return imp.res, nil
}

// parse reads the file to its end (or the first failing line, in abort
// mode), handing full chunks to imp.out.
func (imp *csvImport) parse(file io.Reader) error {
	cr, err := codec.NewCSVReader(file)
	if err != nil {
		return err
	}
	imp.chunk = make([]Observation, 0, ImportChunk)
	for {
		o, line, err := cr.Next()
		var le *codec.LineError
		switch {
		case errors.Is(err, io.EOF):
			return imp.flush()
		case errors.As(err, &le):
			err = imp.lineFailed(le.Line, le.Reason)
		case err != nil:
			return err // the file's reader failed
		default:
			err = imp.add(Observation{ProjectID: imp.ProjectID, DataPointID: o.DataPointID, Time: o.Time, Value: o.Value}, line)
		}
		if err != nil {
			return err
		}
		if imp.parsed++; imp.parsed%16384 == 0 {
			imp.progress()
		}
	}
}

func (imp *csvImport) lineFailed(line int, reason string) error {
	if imp.Abort {
		// A datapoint without access on an earlier line fails first.
		if err := imp.checkPending(); err != nil {
			return err
		}
		return fault.Invalidf("%d: %s", line, reason)
	}
	imp.errs = append(imp.errs, FailedLine{line, reason})
	return nil
}

func (imp *csvImport) add(o Observation, line int) error {
	if imp.access != nil {
		allowed, known := imp.access.allowed[o.DataPointID]
		switch {
		case known && !allowed: // continue mode only: abort has stopped at its first line
			imp.errs = append(imp.errs, FailedLine{line, noWriteAccess(o.DataPointID)})
			return nil
		case !known && !imp.seen[o.DataPointID]:
			imp.pending = append(imp.pending, pendingID{o.DataPointID, line})
			imp.seen[o.DataPointID] = true
		}
		imp.lines = append(imp.lines, line)
	}
	if imp.chunk = append(imp.chunk, o); len(imp.chunk) == ImportChunk {
		return imp.flush()
	}
	return nil
}

func noWriteAccess(id string) string { return fmt.Sprintf("no write access to datapoint %q", id) }

// flush finishes a chunk: access checks, failing lines into the result in
// file order, the observations on to imp.out.
func (imp *csvImport) flush() error {
	if err := imp.checkPending(); err != nil {
		return err
	}
	if imp.access != nil {
		kept := imp.chunk[:0]
		for i, o := range imp.chunk {
			if imp.access.allowed[o.DataPointID] {
				kept = append(kept, o)
			} else {
				imp.errs = append(imp.errs, FailedLine{imp.lines[i], noWriteAccess(o.DataPointID)})
			}
		}
		imp.chunk, imp.lines = kept, imp.lines[:0]
		imp.access.trim()
	}
	slices.SortFunc(imp.errs, func(a, b FailedLine) int { return a.Line - b.Line })
	for _, e := range imp.errs {
		if len(imp.res.Errors) < importMaxErrors {
			imp.res.Errors = append(imp.res.Errors, e)
		} else {
			imp.res.ErrorsOmitted++
		}
	}
	imp.res.Failed += int64(len(imp.errs))
	imp.errs = imp.errs[:0]
	imp.res.Success += int64(len(imp.chunk))
	if len(imp.chunk) > 0 {
		if err := imp.out(imp.chunk); err != nil {
			return err
		}
	}
	imp.chunk = make([]Observation, 0, ImportChunk) // out owns the old one
	return nil
}

// checkPending learns the write access of the datapoints seen first in
// this chunk, with one question; in abort mode the first one without
// access (in file order) ends the import.
func (imp *csvImport) checkPending() error {
	if len(imp.pending) == 0 {
		return nil
	}
	names := make([]string, len(imp.pending))
	for i, p := range imp.pending {
		names[i] = p.id
	}
	if err := imp.access.check(imp.ctx, names); err != nil {
		return err
	}
	for _, p := range imp.pending {
		if imp.Abort && !imp.access.allowed[p.id] {
			return fault.Forbiddenf("%d: %s", p.line, noWriteAccess(p.id))
		}
	}
	imp.pending = imp.pending[:0]
	clear(imp.seen)
	return nil
}

// storeError is the error when the Sink failed a chunk.
func (imp *csvImport) storeError() error {
	err := imp.writer.close()
	stored := imp.writer.stored.Load()
	imp.Log.Warn("csv import failed while storing", slog.Int64("project_id", imp.ProjectID),
		slog.Int64("lines_stored", stored), slog.Any("error", err))
	if fault.Is(err, fault.Unavailable) && stored == 0 {
		return err
	}
	return fault.Wrap(fault.Unavailable, err, fmt.Sprintf("storing the import failed after %d of its lines were stored; "+
		"those stay stored, and importing the file again is safe (a value at the time of a stored one replaces it)", stored))
}

// progress logs a long import every importLogEvery.
func (imp *csvImport) progress() {
	if time.Since(imp.lastLog) >= importLogEvery {
		imp.lastLog = time.Now()
		imp.log("csv import progress")
	}
}

func (imp *csvImport) log(msg string) {
	elapsed := time.Since(imp.start)
	attrs := []any{slog.Int64("project_id", imp.ProjectID), slog.Bool("abort", imp.Abort),
		slog.Int("lines_read", imp.parsed), slog.Int64("lines_failed", imp.res.Failed),
		slog.Float64("lines_per_s", float64(imp.parsed)/elapsed.Seconds()), slog.Duration("elapsed", elapsed)}
	if imp.writer != nil {
		attrs = append(attrs, slog.Int64("lines_stored", imp.writer.stored.Load()))
	}
	imp.Log.Info(msg, attrs...)
}

// accessCache remembers, per import, whether the caller may write each
// datapoint, asking WriteAccess once per chunk of new names.
type accessCache struct {
	ask     WriteAccess
	allowed map[string]bool
}

func (a *accessCache) check(ctx context.Context, names []string) error {
	access, err := a.ask(ctx, names)
	if err != nil {
		return fmt.Errorf("datapoint tags for the import: %w", err)
	}
	for _, n := range names {
		a.allowed[n] = access[n]
	}
	return nil
}

// trim forgets everything once the cache is big (a file of millions of
// datapoints): they are asked again when they come again.
func (a *accessCache) trim() {
	if len(a.allowed) > 1<<20 {
		clear(a.allowed)
	}
}
