package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openbdp/bdp/fault"
)

// The CSV import's state machine without HTTP: a Sink that records its
// chunks (or fails), access given as a function.

// chunkSink records the chunks written; failAt > 0 fails that write (1:
// the first) with err.
type chunkSink struct {
	mu     sync.Mutex
	chunks [][]Observation
	failAt int
	err    error
}

func (s *chunkSink) Write(_ context.Context, src Source, obs []Observation) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if src != SourceCSV {
		return fmt.Errorf("source %s", src)
	}
	if s.failAt > 0 && len(s.chunks)+1 == s.failAt {
		s.failAt = 0
		return s.err
	}
	s.chunks = append(s.chunks, obs)
	return nil
}

// stored lists the observations written as "id=value".
func (s *chunkSink) stored() []string {
	out := []string{}
	for _, c := range s.chunks {
		for _, o := range c {
			out = append(out, fmt.Sprintf("%s=%g", o.DataPointID, o.Value))
		}
	}
	return out
}

// allowOnly is a WriteAccess granting the ids that begin with prefix.
func allowOnly(prefix string) WriteAccess {
	return func(_ context.Context, names []string) (map[string]bool, error) {
		out := map[string]bool{}
		for _, n := range names {
			out[n] = strings.HasPrefix(n, prefix)
		}
		return out, nil
	}
}

func failedLines(res ImportResult) string {
	parts := make([]string, len(res.Errors))
	for i, e := range res.Errors {
		parts[i] = fmt.Sprintf("%d: %s", e.Line, e.Reason)
	}
	return strings.Join(parts, "; ")
}

func TestImportCSVModes(t *testing.T) {
	const file = "ok-1,1,2024-01-31\nok-2,x,2024-01-31\nno-1,3,2024-01-31\nok-3,4,2024-01-31\n"
	tests := []struct {
		name    string
		abort   bool
		access  WriteAccess
		file    string
		kind    fault.Kind // of the error; 0: none
		message string     // the error's, or the failing lines
		stored  string
		success int64
	}{
		{name: "continue lists the failing line", file: file,
			message: `2: value "x" is not a number`, stored: "[ok-1=1 no-1=3 ok-3=4]", success: 3},
		{name: "continue lists lines without access among them", access: allowOnly("ok"), file: file,
			message: `2: value "x" is not a number; 3: no write access to datapoint "no-1"`, stored: "[ok-1=1 ok-3=4]", success: 2},
		{name: "abort stores nothing", abort: true, file: file,
			kind: fault.Invalid, message: `2: value "x" is not a number`, stored: "[]"},
		{name: "abort: a failing line before the forbidden datapoint comes first", abort: true, access: allowOnly("ok"), file: file,
			kind: fault.Invalid, message: `2: value "x" is not a number`, stored: "[]"},
		{name: "abort: the forbidden datapoint before a failing line", abort: true, access: allowOnly("ok"),
			file: "ok-1,1,2024-01-31\nno-1,3,2024-01-31\nok-2,x,2024-01-31\n",
			kind: fault.Forbidden, message: `2: no write access to datapoint "no-1"`, stored: "[]"},
		{name: "abort without failures stores all", abort: true, access: allowOnly("ok"),
			file: "ok-1,1,2024-01-31\nok-2,2,2024-01-31\n", stored: "[ok-1=1 ok-2=2]", success: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sink := &chunkSink{}
			res, err := ImportCSV(context.Background(), CSVImport{ProjectID: 7, Abort: tt.abort, Access: tt.access, Sink: sink},
				strings.NewReader(tt.file))
			got := fmt.Sprint(sink.stored())
			switch {
			case tt.kind != 0 && (fault.KindOf(err) != tt.kind || fault.Message(err) != tt.message):
				t.Fatalf("error %v (%s), want %s %q", err, fault.KindOf(err), tt.kind, tt.message)
			case tt.kind == 0 && err != nil:
				t.Fatal(err)
			case tt.kind == 0 && (failedLines(res) != tt.message || res.Success != tt.success ||
				res.Failed != int64(len(res.Errors))):
				t.Fatalf("result %+v", res)
			case got != tt.stored:
				t.Fatalf("stored %s, want %s", got, tt.stored)
			}
			for _, c := range sink.chunks {
				if c[0].ProjectID != 7 {
					t.Fatalf("project %d", c[0].ProjectID)
				}
			}
		})
	}
}

// The list stops at 1000 failing lines and counts the rest.
func TestImportCSVErrorsCapped(t *testing.T) {
	var file strings.Builder
	for i := 0; i < 1500; i++ {
		fmt.Fprintf(&file, "dp,%d,2024-01-31\nbad,x,2024-01-31\n", i)
	}
	res, err := ImportCSV(context.Background(), CSVImport{Sink: &chunkSink{}}, strings.NewReader(file.String()))
	if err != nil {
		t.Fatal(err)
	}
	if res.Success != 1500 || res.Failed != 1500 || len(res.Errors) != 1000 || res.ErrorsOmitted != 500 ||
		res.Errors[999].Line != 2000 {
		t.Fatalf("%d good, %d failing, %d listed, %d omitted", res.Success, res.Failed, len(res.Errors), res.ErrorsOmitted)
	}
}

// linesReader yields n lines of dp-i, value i, then fails with err (nil:
// ends).
type linesReader struct {
	n, i int
	err  error
	buf  []byte
}

func (r *linesReader) Read(p []byte) (int, error) {
	for len(r.buf) < len(p) && r.i < r.n {
		r.buf = fmt.Appendf(r.buf, "dp-%d,%d,2024-01-31T00:00:00Z\n", r.i%10, r.i)
		r.i++
	}
	if len(r.buf) == 0 {
		if r.err != nil {
			return 0, r.err
		}
		return 0, io.EOF
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	return n, nil
}

// A failing read keeps its kind; in continue mode the error says what
// was stored before it.
func TestImportCSVReadFails(t *testing.T) {
	tooLarge := fault.TooLargef("the file is larger than the import limit")
	tests := []struct {
		name  string
		abort bool
		lines int
		want  string
	}{
		{"continue, nothing stored yet", false, 10, "the file is larger than the import limit"},
		{"continue, a chunk stored", false, ImportChunk + 10, fmt.Sprintf("the file is larger than the import limit (%d lines "+
			"were stored before; on_error=continue stores lines as they are read)", ImportChunk)},
		{"abort", true, ImportChunk + 10, "the file is larger than the import limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sink := &chunkSink{}
			_, err := ImportCSV(context.Background(), CSVImport{Abort: tt.abort, Sink: sink}, &linesReader{n: tt.lines, err: tooLarge})
			if !fault.Is(err, fault.TooLarge) || fault.Message(err) != tt.want {
				t.Fatalf("error %v, want %q", err, tt.want)
			}
			if tt.abort && len(sink.chunks) > 0 {
				t.Fatalf("abort stored %d chunks", len(sink.chunks))
			}
		})
	}
}

// A Sink that fails: Unavailable, saying how many lines were stored.
func TestImportCSVStoreFails(t *testing.T) {
	down := fault.Wrap(fault.Unavailable, errors.New("database gone"), "the database is unavailable")
	tests := []struct {
		name   string
		abort  bool
		failAt int
		err    error
		want   string
	}{
		{"unavailable at once", false, 1, down, "the database is unavailable"},
		{"an internal failure at once", false, 1, errors.New("disk full"), "storing the import failed after 0 of its lines were stored; " +
			"those stay stored, and importing the file again is safe (a value at the time of a stored one replaces it)"},
		{"after a chunk", false, 2, down, fmt.Sprintf("storing the import failed after %d of its lines", ImportChunk)},
		{"abort, during the replay", true, 2, down, fmt.Sprintf("storing the import failed after %d of its lines", ImportChunk)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sink := &chunkSink{failAt: tt.failAt, err: tt.err}
			_, err := ImportCSV(context.Background(), CSVImport{Abort: tt.abort, Sink: sink}, &linesReader{n: 3 * ImportChunk})
			if !fault.Is(err, fault.Unavailable) || !strings.HasPrefix(fault.Message(err), tt.want) {
				t.Fatalf("error %v (%s), want %q", err, fault.KindOf(err), tt.want)
			}
		})
	}
}

// Abort mode beyond its memory chunks: everything, in file order.
func TestImportCSVAbortPastMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("a quarter of a million lines")
	}
	const n = ImportMemChunks*ImportChunk + ImportChunk/2
	sink := &chunkSink{}
	res, err := ImportCSV(context.Background(), CSVImport{ProjectID: 3, Abort: true, Sink: sink}, &linesReader{n: n})
	if err != nil || res.Success != n {
		t.Fatalf("%+v %v", res, err)
	}
	i := 0
	for _, c := range sink.chunks {
		for _, o := range c {
			if o.Value != float64(i) || o.DataPointID != fmt.Sprintf("dp-%d", i%10) || o.ProjectID != 3 ||
				!o.Time.Equal(time.Date(2024, 1, 31, 0, 0, 0, 0, time.UTC)) {
				t.Fatalf("observation %d: %+v", i, o)
			}
			i++
		}
	}
	if i != n || len(sink.chunks) != ImportMemChunks+1 {
		t.Fatalf("%d observations in %d chunks", i, len(sink.chunks))
	}
}

// The spool: memory first, then the file, read back in order in chunks
// of its size; close deletes the file.
func TestSpoolReplaysInOrder(t *testing.T) {
	sp := &spool{projectID: 9, memChunks: 2, chunk: 3}
	defer sp.close()
	at := time.Date(2024, 3, 1, 12, 0, 0, 500, time.UTC)
	var want []string
	for c := 0; c < 5; c++ {
		chunk := make([]Observation, 0, 2)
		for j := 0; j < 2; j++ {
			id := fmt.Sprintf("dp-%d", (c*2+j)%3)
			chunk = append(chunk, Observation{ProjectID: 9, DataPointID: id, Time: at.Add(time.Duration(c*2+j) * time.Second), Value: float64(c*2 + j)})
			want = append(want, fmt.Sprintf("%s=%d@%d", id, c*2+j, c*2+j))
		}
		if err := sp.put(chunk); err != nil {
			t.Fatal(err)
		}
	}
	if sp.f == nil {
		t.Fatal("no spool file past two chunks in memory")
	}
	name := sp.f.Name()
	var got, sizes []string
	progress := 0
	err := sp.replay(func(c []Observation) error {
		sizes = append(sizes, fmt.Sprint(len(c)))
		for _, o := range c {
			if o.ProjectID != 9 {
				t.Fatalf("project %d", o.ProjectID)
			}
			got = append(got, fmt.Sprintf("%s=%g@%d", o.DataPointID, o.Value, int(o.Time.Sub(at)/time.Second)))
		}
		return nil
	}, func() { progress++ })
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) || fmt.Sprint(sizes) != "[2 2 3 3]" || progress != 4 {
		t.Fatalf("replayed %v in chunks %v, %d progress calls; want %v", got, sizes, progress, want)
	}
	sp.close()
	if _, err := os.Stat(name); !errors.Is(err, os.ErrNotExist) || filepath.Dir(name) != filepath.Clean(os.TempDir()) {
		t.Fatalf("spool file %s after close: %v", name, err)
	}
}
