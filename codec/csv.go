package codec

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"time"
)

// The CSV import (api.md 4.7, CSV rules 1 and 2): one observation per
// line, three columns: dataPointID, value, timestamp.
//
// The reader streams: it holds one buffer (a few hundred KiB) whatever the
// size of the file. It is built for speed: lines without quote characters
// (nearly all) are cut with bytes.IndexByte, dataPointIDs are interned so
// a repeated one costs a map lookup and no allocation, and the RFC 3339
// shapes of timestamps are parsed by hand; the rest falls back to a
// quote-aware splitter and to time.Parse.
//
// What it accepts, beyond the spec's words:
//   - dialect: delimiter , ; tab or |, quote character " or ', detected from
//     the first 64 KiB (the dialect under which most sample lines are
//     valid; ties go to comma and double quote); a doubled quote inside a
//     quoted field is one quote; a quoted field cannot span lines.
//   - header: line 1 is a header, and is skipped, when neither its value
//     nor its timestamp parses but those of the next line do (or the file
//     has no other line).
//   - blank lines are skipped; they still count in line numbers, which
//     are the file's physical lines, 1-based, header included. A UTF-8
//     byte order mark is ignored. Spaces around unquoted fields are
//     ignored.
//   - value: a Go/JSON float (1, -2.5, 1e3); NaN and infinities fail.
//     A decimal comma (1,5) is not a float and fails.
//   - timestamp: 2024-01-31 (midnight UTC), a space or T between date and
//     time, minutes with or without seconds, hours, minutes and seconds of
//     one digit or two (2018-12-18 8:00:00), fractional seconds (. or ,),
//     offsets Z, +01, +01:00, +0100 (optionally after one space), UTC;
//     WITHOUT an offset the time is UTC. Also accepted: 2024/01/31 and
//     31.01.2024 with optional time, RFC 1123 with a numeric offset, ISO
//     8601 basic form (20240131T100000Z), Unix seconds (ten digits, with
//     an optional fraction) and milliseconds (thirteen digits). Years
//     must lie in 1900..9999.

// CSVObservation is the observation of one line. The file names no
// project: the importer knows which project it imports into.
type CSVObservation struct {
	DataPointID string
	Time        time.Time
	Value       float64
}

// LineError is a line that fails (api.md 4.7 CSV rule 2). The reader goes
// on with the next line after one.
type LineError struct {
	Line   int    // 1-based physical line of the file
	Reason string // for example: value "abc" is not a number
}

// Error begins with the line number, as api.md 4.7 and 7 ask of the
// answer to an aborted import.
func (e *LineError) Error() string { return fmt.Sprintf("%d: %s", e.Line, e.Reason) }

// Dialect is how a CSV file is written.
type Dialect struct {
	Delimiter byte // , ; \t or |
	Quote     byte // " or '
	Header    bool // line 1 is a header
}

const (
	csvSniffSize   = 64 << 10  // bytes looked at to detect the dialect
	csvSniffLines  = 200       // lines of those used
	csvBufSize     = 256 << 10 // read buffer
	csvMaxLine     = 64 << 10  // longer lines fail (a valid one has < 600 bytes)
	csvMaxInterned = 1 << 20   // dataPointIDs remembered; beyond, each line allocates its own
)

var (
	csvDelimiters = []byte{',', ';', '\t', '|'}
	csvQuotes     = []byte{'"', '\''}
)

// CSVReader reads observations from a CSV file. It is not safe for
// concurrent use.
type CSVReader struct {
	r        io.Reader
	dialect  Dialect
	buf      []byte
	pos, end int
	eof      bool
	line     int
	ids      map[string]string
	record   []byte // a record of several lines (a quoted line break)
	mark     int    // where continueQuoted may go back to; -1 for none
	markLine int    // the line number there
}

// NewCSVReader detects the dialect from the beginning of r (reading up to
// 64 KiB) and returns a reader of its observations. Only a read error
// fails it; a file of garbage still gets a dialect and fails line by line.
func NewCSVReader(r io.Reader) (*CSVReader, error) {
	cr := &CSVReader{r: r, buf: make([]byte, csvBufSize), ids: map[string]string{}, mark: -1}
	for cr.end < csvSniffSize && !cr.eof {
		if err := cr.fill(); err != nil {
			return nil, err
		}
	}
	if bytes.HasPrefix(cr.buf[:cr.end], []byte("\xef\xbb\xbf")) {
		cr.pos = 3
	}
	cr.dialect = sniff(cr.buf[cr.pos:cr.end], cr.eof)
	return cr, nil
}

// Dialect returns the detected dialect.
func (r *CSVReader) Dialect() Dialect { return r.dialect }

// fill reads once more into the free end of the buffer.
func (r *CSVReader) fill() error {
	if r.eof {
		return nil
	}
	n, err := r.r.Read(r.buf[r.end:])
	r.end += n
	if errors.Is(err, io.EOF) {
		r.eof = true
	} else if err != nil {
		return fmt.Errorf("read the CSV file: %w", err)
	}
	return nil
}

// readLine returns the next physical line without its line ending; long
// reports a line over csvMaxLine (consumed, not returned).
func (r *CSVReader) readLine() (line []byte, long bool, err error) {
	scan := r.pos
	for {
		if i := bytes.IndexByte(r.buf[scan:r.end], '\n'); i >= 0 {
			line = r.buf[r.pos : scan+i]
			r.pos = scan + i + 1
			if long || len(line) > csvMaxLine {
				return nil, true, nil
			}
			return trimCR(line), false, nil
		}
		if r.eof {
			if r.pos == r.end {
				if long {
					return nil, true, nil
				}
				return nil, false, io.EOF
			}
			line, r.pos = r.buf[r.pos:r.end], r.end
			if long || len(line) > csvMaxLine {
				return nil, true, nil
			}
			return trimCR(line), false, nil
		}
		if r.end-r.pos >= csvMaxLine {
			long = true // drop what we have, keep looking for the end
			r.pos, r.end, r.mark = 0, 0, -1
		} else if from := r.keepFrom(); from > 0 {
			r.end = copy(r.buf, r.buf[from:r.end])
			r.pos -= from
			if r.mark >= 0 {
				r.mark -= from
			}
		}
		scan = r.end
		if err := r.fill(); err != nil {
			return nil, false, err
		}
	}
}

// keepFrom is where the buffer's live data begins: the current line, or
// the mark that continueQuoted may go back to.
func (r *CSVReader) keepFrom() int {
	if r.mark >= 0 && r.mark < r.pos {
		return r.mark
	}
	return r.pos
}

func trimCR(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\r' {
		return b[:n-1]
	}
	return b
}

// Next returns the next observation and its line number. A failing line
// answers a *LineError (call Next again for the following lines); the end
// of the file answers io.EOF; any other error is the reader's and final.
func (r *CSVReader) Next() (CSVObservation, int, error) {
	for {
		raw, long, err := r.readLine()
		if err != nil {
			return CSVObservation{}, r.line, err
		}
		r.line++
		if long {
			return CSVObservation{}, r.line, &LineError{r.line, fmt.Sprintf("line is longer than %d bytes", csvMaxLine)}
		}
		if (r.line == 1 && r.dialect.Header) || isBlank(raw) {
			continue
		}
		start := r.line
		o, reason := r.parse(raw)
		if reason == reasonUnterminated {
			if o, reason, err = r.continueQuoted(raw); err != nil {
				return CSVObservation{}, r.line, err
			}
		}
		if reason != "" {
			return CSVObservation{}, start, &LineError{start, reason}
		}
		return o, start, nil
	}
}

const reasonUnterminated = "unterminated quoted field"

// continueQuoted reads on when a quoted field spans lines, as standard CSV
// allows: the following lines join the record until the quote closes.
// The record is then one observation or one failing line, numbered by its
// first line, instead of its tail being read as a line of its own (which
// made datapoints of fragments). A quote that does not close within
// csvMaxLine bytes is a typo, not a line break: the reader goes back to
// the line after it, so one stray quote costs one line.
func (r *CSVReader) continueQuoted(first []byte) (CSVObservation, string, error) {
	r.record = append(r.record[:0], first...)
	r.mark, r.markLine = r.pos, r.line
	defer func() { r.mark = -1 }()
	for {
		next, long, err := r.readLine()
		if err != nil && !errors.Is(err, io.EOF) {
			return CSVObservation{}, "", err
		}
		if err != nil || long || len(r.record)+1+len(next) > csvMaxLine {
			if r.mark >= 0 { // still buffered: read those lines as lines
				r.pos, r.line = r.mark, r.markLine
			}
			return CSVObservation{}, reasonUnterminated, nil
		}
		r.line++
		r.record = append(append(r.record, '\n'), next...)
		var f [3][]byte
		n, reason := split(r.record, r.dialect, &f)
		switch {
		case reason == reasonUnterminated:
			continue
		case reason != "" || fieldCount(n) != "":
			// The quote closed, but not as the end of a field of a
			// three-field record: it was the opening quote of a later
			// line, and the first quote a typo. The lines between are
			// lines of their own.
			if r.mark >= 0 {
				r.pos, r.line = r.mark, r.markLine
			}
			return CSVObservation{}, reasonUnterminated, nil
		}
		o, reason := r.parse(r.record)
		return o, reason, nil
	}
}

// parse turns one line into an observation, or says why it fails. The
// order of the checks decides which reason a line with several faults
// gets: fields, identifier, value, timestamp.
func (r *CSVReader) parse(line []byte) (CSVObservation, string) {
	var f [3][]byte
	n, reason := split(line, r.dialect, &f)
	if reason != "" {
		return CSVObservation{}, reason
	}
	if reason = fieldCount(n); reason != "" {
		return CSVObservation{}, reason
	}
	id, ok := r.ids[string(f[0])] // no allocation for the lookup
	if !ok {
		if reason = checkID(f[0]); reason != "" {
			return CSVObservation{}, reason
		}
		id = string(f[0])
		if len(r.ids) < csvMaxInterned {
			r.ids[id] = id
		}
	}
	v, reason := parseValue(f[1])
	if reason != "" {
		return CSVObservation{}, reason
	}
	t, ok := parseTimestamp(f[2])
	if !ok {
		return CSVObservation{}, fmt.Sprintf("timestamp %s cannot be parsed", quote(f[2]))
	}
	if s := t.Unix(); s < minUnix || s >= maxUnix { // Validate's years, cheaply
		return CSVObservation{}, fmt.Sprintf("timestamp %s is outside the years 1900 to 9999", quote(f[2]))
	}
	return CSVObservation{DataPointID: id, Time: t, Value: v}, ""
}
