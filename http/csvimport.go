package http

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"mime/multipart"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/openbdp/bdp/codec"
	"github.com/openbdp/bdp/fault"
	"github.com/openbdp/bdp/pipeline"
)

// POST /v2/project/{project_id}/importTimeseries (api.md 4.7, CSV rules).
//
// The upload streams: fiber hands the body over unread (StreamRequestBody),
// the multipart form and the CSV are read as they arrive, and no more than
// a few chunks of observations are held at a time, whatever the size of
// the file (up to Config.ImportLimit).
//
// on_error=continue stores good lines in chunks as they come and lists the
// failing ones (a datapoint without write access fails its lines). Should
// the upload itself fail midway (too large, cut short), the chunks stored
// before stay, and the error says how many lines they held.
//
// on_error=abort must store nothing when any line fails, yet a Sink.Write
// commits per call and a file can be far bigger than memory. So the file
// is parsed and checked to its end first (every line, every datapoint's
// write access), the observations held aside meanwhile: the first
// importMemChunks chunks in memory, the rest in a temporary file under
// os.TempDir in a compact binary form (spool, about 25 bytes a line;
// csvspool.go). Only when the last line is good are they
// replayed into the pipeline, in file order, chunk by chunk. A failing
// line deletes the spool and answers 400 with nothing stored. One case
// remains: the database failing during the replay leaves the chunks
// written before it stored; the answer is then 503 and says how many lines
// were stored. Importing the same file again is safe, since a value at the
// time of a stored one replaces it (decisions.md 4). Parsing is quick next
// to storing, so waiting for the last line costs little: the answer comes
// after the last commit in either mode.
//
// The rest of an upload is read (and dropped) after a failing line, so
// that every client, also one that sends the whole file before it reads,
// gets the answer and the connection stays usable.

const (
	importChunk     = 50_000           // observations per Sink.Write
	importMemChunks = 4                // abort mode: chunks held in memory before the spool file
	importMaxErrors = 1000             // failing lines listed; the rest are counted
	importIdle      = 60 * time.Second // longest pause in an upload
	importLogEvery  = 5 * time.Second  // progress log of long imports
)

// importParams are the query parameters of the import.
var importParams = []param{
	{Name: "format", Type: "string", Doc: "csv, the only format (optional)"},
	{Name: "on_error", Type: "string", Required: true, Doc: "abort: the first failing line stores nothing and answers 400 " +
		"(403 for a datapoint without write access); continue: good lines are stored, failing ones listed in errors"},
}

// multipartBody is a route's Body sent as multipart/form-data; it gives
// its own schema to the OpenAPI document.
type multipartBody interface{ multipartSchema() map[string]any }

// importForm documents the multipart body for the OpenAPI document.
type importForm struct{}

func (importForm) multipartSchema() map[string]any {
	return map[string]any{"type": "object", "required": []string{"import_file"}, "properties": map[string]any{
		"import_file": map[string]any{"type": "string", "contentMediaType": "text/csv", "description": "CSV: dataPointID, value, " +
			"timestamp per line; delimiter , ; tab or |, quote \" or ', an optional header line, all detected. " +
			"A timestamp without an offset is UTC; a date alone is midnight UTC."},
	}}
}

// importResult is the resource of the answer (api.md 4.7 rules 4 and 5).
type importResult struct {
	TotalLinesSuccess int64             `json:"total_lines_success"`
	TotalLinesError   int64             `json:"total_lines_error"`
	Errors            []importLineError `json:"errors" doc:"failing lines in file order, at most 1000"`
	ErrorsOmitted     int64             `json:"errors_omitted" doc:"failing lines beyond those listed"`
	ProjectID         int64             `json:"project_id"`
}

type importLineError struct {
	LineNo int    `json:"line_no" doc:"1-based line of the file, header included"`
	Error  string `json:"error"`
}

func (s *Server) importTimeseries(c *fiber.Ctx, cl *call) (any, error) {
	body := s.importBody(c)
	drain := int64(refusedBodyDrain)
	defer func() { body.settle(c, drain) }()
	abort, err := importMode(c)
	if err != nil {
		return nil, err
	}
	if err := body.checkHeaders(c, s.cfg.ImportLimit, "imports"); err != nil {
		return nil, err
	}
	file, err := importFile(c, body)
	if err != nil {
		return nil, err
	}
	drain = int64(s.cfg.ImportLimit) // a started upload is read to its end, so that every client sees the answer
	imp := &csvImport{s: s, ctx: c.UserContext(), cl: cl, abort: abort, start: time.Now()}
	imp.lastLog = imp.start
	if !cl.Perms.HasCompanyRole() {
		imp.access = &writeAccess{s: s, cl: cl, allowed: map[string]bool{}}
		imp.seen = map[string]bool{}
	}
	res, err := imp.run(file)
	if err != nil {
		return nil, err
	}
	return ok("create", res), nil
}

// importMode reads on_error (required) and format (csv when given).
func importMode(c *fiber.Ctx) (abort bool, err error) {
	if f := c.Query("format"); f != "" && !strings.EqualFold(f, "csv") {
		return false, fault.Invalidf("format must be csv, got %q", f)
	}
	switch c.Query("on_error") {
	case "abort":
		return true, nil
	case "continue":
		return false, nil
	case "":
		return false, fault.Invalidf("on_error is required: abort or continue")
	}
	return false, fault.Invalidf("on_error must be abort or continue, got %q", c.Query("on_error"))
}

// importFile finds the form field import_file in the multipart body.
func importFile(c *fiber.Ctx, body *importBody) (io.Reader, error) {
	mt, params, err := mime.ParseMediaType(c.Get(fiber.HeaderContentType))
	if err != nil || mt != fiber.MIMEMultipartForm || params["boundary"] == "" {
		return nil, fault.Invalidf("the body must be multipart/form-data with the file in the form field import_file")
	}
	mr := multipart.NewReader(body, params["boundary"])
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return nil, fault.Invalidf("the form field import_file is required")
		}
		if err != nil {
			return nil, uploadError(err)
		}
		if part.FormName() == "import_file" {
			return part, nil
		}
	}
}

// uploadError turns a failure to read the upload into the client's fault:
// too large, stalled, cut short or not a multipart form.
func uploadError(err error) error {
	var ne net.Error
	switch {
	case fault.Is(err, fault.TooLarge):
		return err
	case errors.As(err, &ne) && ne.Timeout():
		return fault.Wrap(fault.Invalid, err, fmt.Sprintf("the upload stalled: no data for %s", importIdle))
	}
	return fault.Wrap(fault.Invalid, err, "the upload ended early or is not a valid multipart form")
}

// importBody is the request body as the import reads it: the stream fiber
// left unread, cut at Config.ImportLimit, with the connection's read
// deadline pushed on while data arrives (fiber's ReadTimeout counts from
// the request's start, and a big upload takes longer).
type importBody struct {
	r         io.Reader
	conn      net.Conn
	remaining int64
	tooLarge  error
	draining  bool
	eof       bool
	extended  time.Time
}

func (s *Server) importBody(c *fiber.Ctx) *importBody {
	b := &importBody{r: c.Context().RequestBodyStream(), conn: c.Context().Conn(), remaining: int64(s.cfg.ImportLimit),
		tooLarge: fault.TooLargef("the file is larger than the import limit of %d bytes", s.cfg.ImportLimit)}
	if b.r == nil { // not streamed (fiber read it already): nothing left on the connection
		b.r = strings.NewReader(string(c.Body()))
	}
	return b
}

func (b *importBody) Read(p []byte) (int, error) {
	if b.eof {
		return 0, io.EOF
	}
	if now := time.Now(); b.conn != nil && now.Sub(b.extended) > time.Second {
		b.extended = now
		_ = b.conn.SetReadDeadline(now.Add(importIdle))
	}
	if !b.draining && int64(len(p)) > b.remaining+1 {
		p = p[:b.remaining+1]
	}
	n, err := b.r.Read(p)
	if errors.Is(err, io.EOF) {
		b.eof = true
	}
	if !b.draining {
		if int64(n) > b.remaining {
			n, b.remaining = int(b.remaining), 0
			return n, b.tooLarge
		}
		b.remaining -= int64(n)
	}
	return n, err
}

// checkHeaders refuses, before a byte is read, a body whose Content-Length
// is over limit (tooLarge) or that comes encoded (what names the route's
// uploads in the message).
func (b *importBody) checkHeaders(c *fiber.Ctx, limit int, what string) error {
	if c.Request().Header.ContentLength() > limit {
		return b.tooLarge
	}
	if ce := c.Get(fiber.HeaderContentEncoding); ce != "" && !strings.EqualFold(ce, "identity") {
		return fault.Invalidf("Content-Encoding %s is not supported for %s", fault.Clip(ce), what)
	}
	return nil
}

// settle reads what is left of the body, at most max bytes: a client that
// is still sending reads an answer only once its upload is taken. A body
// left unread closes the connection, which could not carry another
// request after it.
func (b *importBody) settle(c *fiber.Ctx, max int64) {
	b.draining = true
	if !b.eof {
		_, _ = io.CopyN(io.Discard, b, max)
	}
	if b.eof {
		c.Locals(localBodyRead, true)
	} else {
		c.Context().SetConnectionClose()
	}
}

// csvImport is one import in progress.
type csvImport struct {
	s       *Server
	ctx     context.Context
	cl      *call
	abort   bool
	access  *writeAccess // nil when the caller may write every datapoint
	res     importResult
	chunk   []pipeline.Observation
	lines   []int           // file line of each chunk entry, when access is checked
	pending []pendingID     // datapoints of this chunk seen for the first time, in order
	seen    map[string]bool // the ids in pending
	writer  *chunkWriter    // nil while abort mode parses
	errs    []importLineError
	out     chunkSink
	start   time.Time
	lastLog time.Time
	parsed  int
}

type pendingID struct {
	id   string
	line int
}

// chunkSink takes chunks of observations (and owns them from then on).
type chunkSink interface {
	put(chunk []pipeline.Observation) error
}

func (imp *csvImport) run(file io.Reader) (importResult, error) {
	imp.res = importResult{ProjectID: imp.cl.ProjectID, Errors: []importLineError{}}
	var sp *spool
	if imp.abort {
		sp = &spool{projectID: imp.cl.ProjectID}
		defer sp.close()
		imp.out = sp
	} else {
		imp.writer = newChunkWriter(imp.ctx, imp.s.ingest)
		defer imp.writer.close()
		imp.out = imp.writer
	}
	if err := imp.parse(file); err != nil {
		if errors.Is(err, errWriteFailed) {
			return importResult{}, imp.storeError()
		}
		if imp.writer != nil && imp.writer.close() == nil && imp.writer.stored.Load() > 0 {
			// Continue mode stores as it reads: say what stays.
			return importResult{}, fault.Wrap(fault.KindOf(err), err, fmt.Sprintf("%s (%d lines were stored before; "+
				"on_error=continue stores lines as they are read)", fault.Message(err), imp.writer.stored.Load()))
		}
		return importResult{}, err
	}
	if imp.abort {
		imp.writer = newChunkWriter(imp.ctx, imp.s.ingest)
		defer imp.writer.close()
		if err := sp.replay(imp.writer.put, imp.progress); err != nil {
			if errors.Is(err, errWriteFailed) {
				return importResult{}, imp.storeError()
			}
			return importResult{}, err
		}
	}
	if err := imp.writer.close(); err != nil {
		return importResult{}, imp.storeError()
	}
	imp.log("csv import done")
	return imp.res, nil
}

// parse reads the file to its end (or the first failing line, in abort
// mode), handing full chunks to imp.out.
func (imp *csvImport) parse(file io.Reader) error {
	cr, err := codec.NewCSVReader(file)
	if err != nil {
		return uploadError(err)
	}
	imp.chunk = make([]pipeline.Observation, 0, importChunk)
	for {
		o, line, err := cr.Next()
		var le *codec.LineError
		switch {
		case errors.Is(err, io.EOF):
			return imp.flush()
		case errors.As(err, &le):
			err = imp.lineFailed(le.Line, le.Reason)
		case err != nil:
			return uploadError(err)
		default:
			err = imp.add(pipeline.Observation{ProjectID: imp.cl.ProjectID, DataPointID: o.DataPointID, Time: o.Time, Value: o.Value}, line)
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
	if imp.abort {
		// A datapoint without access on an earlier line fails first.
		if err := imp.checkPending(); err != nil {
			return err
		}
		return fault.Invalidf("%d: %s", line, reason)
	}
	imp.errs = append(imp.errs, importLineError{line, reason})
	return nil
}

func (imp *csvImport) add(o pipeline.Observation, line int) error {
	if imp.access != nil {
		allowed, known := imp.access.allowed[o.DataPointID]
		switch {
		case known && !allowed: // continue mode only: abort has stopped at its first line
			imp.errs = append(imp.errs, importLineError{line, noWriteAccess(o.DataPointID)})
			return nil
		case !known && !imp.seen[o.DataPointID]:
			imp.pending = append(imp.pending, pendingID{o.DataPointID, line})
			imp.seen[o.DataPointID] = true
		}
		imp.lines = append(imp.lines, line)
	}
	if imp.chunk = append(imp.chunk, o); len(imp.chunk) == importChunk {
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
				imp.errs = append(imp.errs, importLineError{imp.lines[i], noWriteAccess(o.DataPointID)})
			}
		}
		imp.chunk, imp.lines = kept, imp.lines[:0]
		imp.access.trim()
	}
	slices.SortFunc(imp.errs, func(a, b importLineError) int { return a.LineNo - b.LineNo })
	for _, e := range imp.errs {
		if len(imp.res.Errors) < importMaxErrors {
			imp.res.Errors = append(imp.res.Errors, e)
		} else {
			imp.res.ErrorsOmitted++
		}
	}
	imp.res.TotalLinesError += int64(len(imp.errs))
	imp.errs = imp.errs[:0]
	imp.res.TotalLinesSuccess += int64(len(imp.chunk))
	if len(imp.chunk) > 0 {
		if err := imp.out.put(imp.chunk); err != nil {
			return err
		}
	}
	imp.chunk = make([]pipeline.Observation, 0, importChunk) // the sink owns the old one
	return nil
}

// checkPending learns the write access of the datapoints seen first in
// this chunk, with one query; in abort mode the first one without access
// (in file order) ends the import.
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
		if imp.abort && !imp.access.allowed[p.id] {
			return fault.Forbiddenf("%d: %s", p.line, noWriteAccess(p.id))
		}
	}
	imp.pending = imp.pending[:0]
	clear(imp.seen)
	return nil
}

// storeError is the answer when the pipeline failed a chunk.
func (imp *csvImport) storeError() error {
	err := imp.writer.close()
	stored := imp.writer.stored.Load()
	imp.s.log.Warn("csv import failed while storing", slog.Int64("project_id", imp.cl.ProjectID),
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
	attrs := []any{slog.Int64("project_id", imp.cl.ProjectID), slog.Bool("abort", imp.abort),
		slog.Int("lines_read", imp.parsed), slog.Int64("lines_failed", imp.res.TotalLinesError),
		slog.Float64("lines_per_s", float64(imp.parsed)/elapsed.Seconds()), slog.Duration("elapsed", elapsed)}
	if imp.writer != nil {
		attrs = append(attrs, slog.Int64("lines_stored", imp.writer.stored.Load()))
	}
	imp.s.log.Info(msg, attrs...)
}

// writeAccess caches, per import, whether the caller may write each
// datapoint (TagAuths with write, api.md 5.5), judged by datapointAccess
// with one query per chunk of new names.
type writeAccess struct {
	s       *Server
	cl      *call
	allowed map[string]bool
}

func (a *writeAccess) check(ctx context.Context, names []string) error {
	access, err := a.s.datapointAccess(ctx, a.cl, names)
	if err != nil {
		return fmt.Errorf("datapoint tags for the import: %w", err)
	}
	for _, n := range names {
		a.allowed[n] = access[n].Write
	}
	return nil
}

// trim forgets everything once the cache is big (a file of millions of
// datapoints): they are asked again when they come again.
func (a *writeAccess) trim() {
	if len(a.allowed) > 1<<20 {
		clear(a.allowed)
	}
}
