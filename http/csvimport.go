package http

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/openbdp/bdp/fault"
	"github.com/openbdp/bdp/pipeline"
)

// POST /v2/project/{project_id}/importTimeseries (api.md 4.7, CSV rules).
//
// The upload streams: fiber hands the body over unread (StreamRequestBody),
// the multipart form and the CSV are read as they arrive, and
// pipeline.ImportCSV holds no more than a few chunks of observations at a
// time, whatever the size of the file (up to Config.ImportLimit). The
// on_error modes, the spool of abort mode and what a failure midway
// leaves stored are its (pipeline/csvimport.go); the handler reads the
// upload, decides whose write access counts and answers.
//
// The rest of an upload is read (and dropped) after a failing line, so
// that every client, also one that sends the whole file before it reads,
// gets the answer and the connection stays usable.

// importIdle is the longest pause in an upload.
const importIdle = 60 * time.Second

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
	imp := pipeline.CSVImport{ProjectID: cl.ProjectID, Abort: abort, Sink: s.ingest, Log: s.log}
	if !cl.Perms.HasCompanyRole() {
		imp.Access = func(ctx context.Context, names []string) (map[string]bool, error) {
			access, err := s.datapointAccess(ctx, cl, names)
			if err != nil {
				return nil, err
			}
			out := make(map[string]bool, len(access))
			for n, a := range access {
				out[n] = a.Write
			}
			return out, nil
		}
	}
	res, err := pipeline.ImportCSV(c.UserContext(), imp, file)
	if err != nil {
		return nil, err
	}
	return ok("create", importAnswer(cl.ProjectID, res)), nil
}

// importAnswer is the answer's resource for an import's result.
func importAnswer(projectID int64, res pipeline.ImportResult) importResult {
	out := importResult{TotalLinesSuccess: res.Success, TotalLinesError: res.Failed, ErrorsOmitted: res.ErrorsOmitted,
		ProjectID: projectID, Errors: make([]importLineError, len(res.Errors))}
	for i, e := range res.Errors {
		out.Errors[i] = importLineError{LineNo: e.Line, Error: e.Reason}
	}
	return out
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

// importFile finds the form field import_file in the multipart body. Its
// read errors come as uploadError made them: the import passes them on.
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
			return uploadReader{part}, nil
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

// uploadReader reads an uploaded file, its failures turned into the
// client's fault by uploadError.
type uploadReader struct{ r io.Reader }

func (u uploadReader) Read(p []byte) (int, error) {
	n, err := u.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		err = uploadError(err)
	}
	return n, err
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
