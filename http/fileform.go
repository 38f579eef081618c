package http

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"mime"
	"net/textproto"
	"strings"

	"github.com/openbdp/bdp/fault"
)

// The one-pass upload. Every common client (curl -F, Go's
// multipart.Writer, Python requests, a browser's FormData with one file)
// sends the file as the form's only part, with a Content-Length, and ends
// the body right after it with "\r\n--" + boundary + "--\r\n". Then the
// file's exact size is known before its first byte: the Content-Length
// less the bytes up to the end of the part's headers and less that
// closing. Such an upload is reserved at that size and stored with one
// PUT, where a file of unknown size becomes an S3 multipart upload whose
// completion copies the whole object once more. Any other form takes
// multipart.Reader's way (uploadPart).

const (
	// maxFormHead bounds what is read ahead for the preamble, the first
	// boundary line and the first part's headers; a longer head takes
	// multipart.Reader's way.
	maxFormHead = 16 << 10
	// maxFormLine is the longest line multipart.Reader reads before the
	// first part's headers (its bufio buffer); a longer one is its error,
	// so it takes multipart.Reader's way too.
	maxFormLine = 4096
)

// formHead is the start of a multipart body as read ahead: buf is every
// byte read so far, whatever the outcome.
type formHead struct {
	buf []byte
	// file says the first part is the form field file, with fileAt the
	// offset in buf of its first byte and filename its filename as sent.
	file     bool
	fileAt   int
	filename string
}

// readFormHead reads the start of body until the first part's headers
// have ended, at most maxFormHead bytes. A head it does not take (another
// first part, an odd form, too long, the body's end) comes back with file
// false; only a failing body is an error.
func readFormHead(body io.Reader, boundary string) (formHead, error) {
	buf := make([]byte, 0, maxFormHead)
	for {
		n, err := body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		h, complete := parseFormHead(buf, boundary)
		switch {
		case complete || len(buf) == cap(buf) || errors.Is(err, io.EOF):
			return h, nil
		case err != nil:
			return formHead{}, uploadError(err)
		}
	}
}

// parseFormHead parses the start of a multipart body as multipart.Reader
// would: preamble lines, the first boundary line, the first part's
// headers. complete is false while more bytes could change the outcome.
// Whatever multipart.Reader takes in ways of its own (lines ending in LF
// alone, a preamble line that starts like the boundary, a quoted-printable
// part, over-long lines) gives file false, to go its way.
func parseFormHead(buf []byte, boundary string) (h formHead, complete bool) {
	h.buf = buf
	dashBoundary := []byte("--" + boundary)
	off := 0
	for { // the preamble up to the first boundary line
		line, ok := nextLine(buf, off)
		if !ok {
			return h, len(buf)-off > maxFormLine
		}
		off += len(line)
		if len(line) > maxFormLine {
			return h, true
		}
		if rest, found := bytes.CutPrefix(line, dashBoundary); found {
			if string(bytes.TrimLeft(rest, " \t")) != "\r\n" {
				return h, true
			}
			break
		}
	}
	headers := off
	for { // the part's headers, up to the blank line
		line, ok := nextLine(buf, off)
		if !ok {
			return h, false
		}
		off += len(line)
		if string(line) == "\r\n" || string(line) == "\n" {
			break
		}
	}
	br := bufio.NewReader(bytes.NewReader(buf[headers:off]))
	header, err := textproto.NewReader(br).ReadMIMEHeader()
	if err != nil || br.Buffered() > 0 || strings.EqualFold(header.Get("Content-Transfer-Encoding"), "quoted-printable") {
		return h, true
	}
	disposition, params, err := mime.ParseMediaType(header.Get("Content-Disposition"))
	if err != nil || disposition != "form-data" || params["name"] != "file" {
		return h, true
	}
	h.file, h.fileAt, h.filename = true, off, params["filename"]
	return h, true
}

// nextLine is the line of buf at off with its LF, if it has one.
func nextLine(buf []byte, off int) ([]byte, bool) {
	i := bytes.IndexByte(buf[off:], '\n')
	if i < 0 {
		return nil, false
	}
	return buf[off : off+i+1], true
}

// formFile is the file of a one-pass upload: exactly left bytes of the
// body, in which the delimiter "\r\n--" + boundary must not occur, then
// the closing delimiter and the body's end. It fails before giving out
// the file's last byte when that is not so, so the object store, which
// stores a PUT once all its bytes have arrived, never stores a wrong file.
type formFile struct {
	r         io.Reader
	left      int64  // of the file's bytes, not read from r yet
	delimiter []byte // "\r\n--" + boundary
	closing   []byte // the delimiter and "--\r\n"
	// edge is the file's last len(delimiter)-1 bytes read so far: a
	// delimiter split between two reads is found in it.
	edge []byte
	err  error
}

func newFormFile(r io.Reader, size int64, boundary string) *formFile {
	delimiter := []byte("\r\n--" + boundary)
	return &formFile{r: r, left: size, delimiter: delimiter, closing: append(delimiter, "--\r\n"...),
		edge: make([]byte, 0, 2*len(delimiter))}
}

func (f *formFile) Read(p []byte) (int, error) {
	switch {
	case f.err != nil:
		return 0, f.err
	case f.left == 0:
		return 0, io.EOF
	case len(p) == 0:
		return 0, nil
	case f.left == 1:
		return f.readLast(p)
	}
	n, err := f.r.Read(p[:min(int64(len(p)), f.left-1)])
	f.left -= int64(n)
	switch {
	case f.holdsDelimiter(p[:n]):
		return 0, f.fail(f.boundaryInside())
	case errors.Is(err, io.EOF):
		return 0, f.fail(uploadError(io.ErrUnexpectedEOF))
	case err != nil:
		return 0, f.fail(uploadError(err))
	}
	return n, nil
}

// readLast reads the file's last byte and what follows, and gives the
// byte out only if the closing delimiter follows and ends the body.
func (f *formFile) readLast(p []byte) (int, error) {
	last := make([]byte, 1+len(f.closing))
	if _, err := io.ReadFull(f.r, last); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return 0, f.fail(uploadError(err))
	}
	file, tail := last[:1], last[1:]
	if f.holdsDelimiter(file) {
		return 0, f.fail(f.boundaryInside())
	}
	if at := bytes.Index(append(f.edge, tail...), f.delimiter); at >= 0 && at < len(f.edge) {
		return 0, f.fail(f.boundaryInside()) // one that starts in the file and ends after it
	}
	ends := bytes.Equal(tail, f.closing)
	if ends {
		var more [1]byte
		switch n, err := io.ReadFull(f.r, more[:]); {
		case n == 0 && errors.Is(err, io.EOF):
		case n == 0:
			return 0, f.fail(uploadError(err))
		default:
			ends = false
		}
	}
	if !ends {
		return 0, f.fail(fault.Invalidf("the form must end right after the file, with \"\\r\\n--\" + boundary + \"--\\r\\n\" " +
			"and nothing more (a file sent first with a Content-Length is stored in one pass); nothing was stored"))
	}
	f.left = 0
	p[0] = file[0] // Read does not call readLast with an empty p
	return 1, nil
}

// boundaryInside is the error of a delimiter within the file's bytes.
func (f *formFile) boundaryInside() error {
	return fault.Invalidf("the form must end right after the file: with a Content-Length and the file as the form's first "+
		"part, the file is taken to end %d bytes before the body's end, but the form's boundary comes earlier "+
		"(another field after the file?); nothing was stored", len(f.closing))
}

// holdsDelimiter reports whether b, read after the file's bytes before it,
// completes a delimiter, and keeps b's end in edge for the next read.
func (f *formFile) holdsDelimiter(b []byte) bool {
	k := len(f.delimiter) - 1
	f.edge = append(f.edge, b[:min(len(b), k)]...)
	if bytes.Contains(f.edge, f.delimiter) || bytes.Contains(b, f.delimiter) {
		return true
	}
	if len(b) >= k {
		f.edge = append(f.edge[:0], b[len(b)-k:]...)
	} else {
		keep := min(len(f.edge), k)
		copy(f.edge, f.edge[len(f.edge)-keep:])
		f.edge = f.edge[:keep]
	}
	return false
}

func (f *formFile) fail(err error) error {
	f.err = err
	return err
}
