package http

import (
	"bytes"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/openbdp/bdp/fault"
)

// The one-pass upload's parts on their own: the head parser against
// multipart.Reader, and the file reader's checks. Through HTTP:
// files_onepass_test.go.

const testBoundary = "B0undary"

// checkHeadAgainstMultipart parses body's head and, when it says the first
// part is the file, checks that multipart.Reader agrees on the field, the
// filename and where the file's bytes start.
func checkHeadAgainstMultipart(t *testing.T, body []byte, boundary string) formHead {
	t.Helper()
	h, _ := parseFormHead(body, boundary)
	if !h.file {
		return h
	}
	if h.fileAt < 0 || h.fileAt > len(body) {
		t.Fatalf("file at %d of a %d-byte body", h.fileAt, len(body))
	}
	part, err := multipart.NewReader(bytes.NewReader(body), boundary).NextPart()
	if err != nil {
		t.Fatalf("parseFormHead takes the file, multipart.Reader fails: %v", err)
	}
	_, params, err := mime.ParseMediaType(part.Header.Get("Content-Disposition"))
	if part.FormName() != "file" || err != nil || params["filename"] != h.filename {
		t.Fatalf("multipart.Reader reads field %q, filename %q (%v); parseFormHead file %q", part.FormName(), params["filename"], err, h.filename)
	}
	content, err := io.ReadAll(part)
	if err != nil {
		content = nil // a part multipart.Reader cannot finish: where it starts is all that can be compared
	}
	rest := body[h.fileAt:]
	closing := "\r\n--" + boundary + "--\r\n"
	if !bytes.HasPrefix(rest, content) {
		t.Fatalf("multipart.Reader's file %q does not start at byte %d: %q", content, h.fileAt, rest)
	}
	if file, ok := bytes.CutSuffix(rest, []byte(closing)); ok && err == nil && !bytes.Contains(file, []byte("\r\n--"+boundary)) && !bytes.Equal(file, content) {
		t.Fatalf("multipart.Reader's file %q, the body after byte %d less the closing %q", content, h.fileAt, file)
	}
	return h
}

func TestParseFormHead(t *testing.T) {
	const cd = "Content-Disposition: form-data; name=\"file\"; filename=\"f.bin\"\r\n"
	const tail = "DATA\r\n--" + testBoundary + "--\r\n"
	for _, tc := range []struct {
		name     string
		body     string
		file     bool   // parseFormHead takes it as the file
		filename string // then its filename
	}{
		{"curl", "--" + testBoundary + "\r\n" + cd + "Content-Type: application/octet-stream\r\n\r\n" + tail, true, "f.bin"},
		{"preamble", "This is the preamble.\r\nIt is ignored.\n--" + testBoundary + "\r\n" + cd + "\r\n" + tail, true, "f.bin"},
		{"transport padding after the boundary", "--" + testBoundary + " \t \r\n" + cd + "\r\n" + tail, true, "f.bin"},
		{"headers ending in LF alone", "--" + testBoundary + "\r\nContent-Disposition: form-data; name=file; filename=f.bin\n\n" + tail, true, "f.bin"},
		{"folded header", "--" + testBoundary + "\r\nContent-Disposition: form-data;\r\n name=\"file\";\r\n\tfilename=\"f.bin\"\r\n\r\n" + tail, true, "f.bin"},
		{"quoted filename with escapes", "--" + testBoundary + "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a \\\"q\\\" \\\\b.txt\"\r\n\r\n" + tail, true, `a "q" \b.txt`},
		{"raw filename with a folder", "--" + testBoundary + "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"../a/b.txt\"\r\n\r\n" + tail, true, "../a/b.txt"},
		{"RFC 2231 filename", "--" + testBoundary + "\r\nContent-Disposition: form-data; name=\"file\"; filename*=UTF-8''%C3%A4%20x.txt\r\n\r\n" + tail, true, "ä x.txt"},
		{"upper-case disposition and names", "--" + testBoundary + "\r\ncontent-disposition: FORM-DATA; NAME=\"file\"; FILENAME=\"f.bin\"\r\n\r\n" + tail, true, "f.bin"},
		{"no filename", "--" + testBoundary + "\r\nContent-Disposition: form-data; name=\"file\"\r\n\r\n" + tail, true, ""},
		{"file first, then another field", "--" + testBoundary + "\r\n" + cd + "\r\nDATA\r\n--" + testBoundary + "\r\nContent-Disposition: form-data; name=\"note\"\r\n\r\nx\r\n--" + testBoundary + "--\r\n", true, "f.bin"},

		{"another field first", "--" + testBoundary + "\r\nContent-Disposition: form-data; name=\"note\"\r\n\r\nx\r\n--" + testBoundary + "\r\n" + cd + "\r\n" + tail, false, ""},
		{"field FILE", "--" + testBoundary + "\r\nContent-Disposition: form-data; name=\"FILE\"; filename=\"f\"\r\n\r\n" + tail, false, ""},
		{"attachment", "--" + testBoundary + "\r\nContent-Disposition: attachment; name=\"file\"; filename=\"f\"\r\n\r\n" + tail, false, ""},
		{"malformed disposition", "--" + testBoundary + "\r\nContent-Disposition: form-data; name=\"file\r\n\r\n" + tail, false, ""},
		{"conflicting parameters", "--" + testBoundary + "\r\nContent-Disposition: form-data; name=file; name=other\r\n\r\n" + tail, false, ""},
		{"no disposition", "--" + testBoundary + "\r\nContent-Type: text/plain\r\n\r\n" + tail, false, ""},
		{"quoted-printable, which multipart.Reader decodes", "--" + testBoundary + "\r\n" + cd + "Content-Transfer-Encoding: Quoted-Printable\r\n\r\n" + tail, false, ""},
		{"boundary line ending in LF alone", "--" + testBoundary + "\n" + "Content-Disposition: form-data; name=file; filename=f\n\nDATA\n--" + testBoundary + "--\n", false, ""},
		{"preamble line that starts like the boundary", "--" + testBoundary + "x\r\n--" + testBoundary + "\r\n" + cd + "\r\n" + tail, false, ""},
		{"closing boundary first", "--" + testBoundary + "--\r\n", false, ""},
		{"header line without a colon", "--" + testBoundary + "\r\n" + cd + "NoColon\r\n\r\n" + tail, false, ""},
		{"continuation as the first header line", "--" + testBoundary + "\r\n folded: x\r\n" + cd + "\r\n" + tail, false, ""},
		{"preamble line over 4096 bytes", strings.Repeat("p", 4096) + "\r\n--" + testBoundary + "\r\n" + cd + "\r\n" + tail, false, ""},
		{"empty body", "", false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := checkHeadAgainstMultipart(t, []byte(tc.body), testBoundary)
			if h.file != tc.file || h.filename != tc.filename {
				t.Fatalf("file %v, filename %q; want %v, %q", h.file, h.filename, tc.file, tc.filename)
			}
		})
	}
}

// readFormHead reads no further than the head needs when it can, at most
// maxFormHead bytes, whatever the reads return; only a failing body is an
// error, and nothing it read is lost.
func TestReadFormHead(t *testing.T) {
	head := "--" + testBoundary + "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"f.bin\"\r\n\r\n"
	body := head + strings.Repeat("x", 40<<10) + "\r\n--" + testBoundary + "--\r\n"
	for _, tc := range []struct {
		name string
		r    func() io.Reader
		file bool
		read int // bytes read ahead, -1: any
	}{
		{"one byte a read", func() io.Reader { return iotest.OneByteReader(strings.NewReader(body)) }, true, len(head)},
		{"half a head a read", func() io.Reader { return iotest.HalfReader(strings.NewReader(body)) }, true, -1},
		{"all at once", func() io.Reader { return strings.NewReader(body) }, true, maxFormHead},
		{"headers over 16 KiB", func() io.Reader {
			return strings.NewReader("--" + testBoundary + "\r\nX-Pad: " + strings.Repeat("p", maxFormHead) + "\r\n" + body[len("--"+testBoundary+"\r\n"):])
		}, false, maxFormHead},
		{"ends within the head", func() io.Reader { return strings.NewReader(head[:30]) }, false, 30},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.r()
			h, err := readFormHead(r, testBoundary)
			if err != nil || h.file != tc.file || (tc.read >= 0 && len(h.buf) != tc.read) {
				t.Fatalf("file %v after %d bytes (%v); want %v after %d", h.file, len(h.buf), err, tc.file, tc.read)
			}
			rest, _ := io.ReadAll(r)
			if whole := string(h.buf) + string(rest); whole != body && !strings.HasSuffix(whole, body[len("--"+testBoundary+"\r\n"):]) && whole != head[:30] {
				t.Fatalf("bytes were lost: %d read ahead, %d left", len(h.buf), len(rest))
			}
			if h.file && h.fileAt != len(head) {
				t.Fatalf("file at %d, want %d", h.fileAt, len(head))
			}
		})
	}
	if _, err := readFormHead(iotest.ErrReader(errors.New("connection reset")), testBoundary); !fault.Is(err, fault.Invalid) {
		t.Fatalf("a failing body: %v, want an Invalid fault", err)
	}
}

func FuzzParseFormHead(f *testing.F) {
	for _, seed := range []string{
		"--" + testBoundary + "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"f\"\r\n\r\n",
		"pre\r\n--" + testBoundary + "  \r\nContent-Disposition: form-data; name=file; filename=\"a\\\"b\"\n\n",
		"--" + testBoundary + "\r\nContent-Disposition: form-data;\r\n name=file\r\nContent-Type: x\r\n\r\nabc\r\n--" + testBoundary + "\r\n",
		"--" + testBoundary + "\nContent-Disposition: form-data; name=file\n\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, head []byte) {
		body := append(head, "file content\r\n--"+testBoundary+"--\r\n"...)
		checkHeadAgainstMultipart(t, body, testBoundary)
	})
}

// readFormFile reads a formFile of size bytes over body, chunk bytes a
// read at most, and returns what it gave and its error.
func readFormFile(body []byte, size int64, chunk int) ([]byte, error) {
	f := newFormFile(iotest.HalfReader(bytes.NewReader(body)), size, testBoundary)
	var got []byte
	buf := make([]byte, chunk)
	for {
		n, err := f.Read(buf)
		got = append(got, buf[:n]...)
		if errors.Is(err, io.EOF) {
			return got, nil
		}
		if err != nil {
			return got, err
		}
	}
}

func TestFormFile(t *testing.T) {
	closing := "\r\n--" + testBoundary + "--\r\n"
	content := strings.Repeat("0123456789", 1000)
	for _, tc := range []struct {
		name    string
		body    string
		size    int
		errHas  string // "": the file is body[:size]
		refuses bool   // a body multipart.Reader takes differently: refused with 400
	}{
		{"exact", content + closing, len(content), "", false},
		{"one byte", "x" + closing, 1, "", false},
		{"delimiter-like prefixes inside", "a\r\n--" + testBoundary[:4] + "b\r\n--\r\n-" + closing, len("a\r\n--" + testBoundary[:4] + "b\r\n--\r\n-"), "", false},
		{"boundary without its CRLF inside", "a--" + testBoundary + "--b" + closing, len("a--" + testBoundary + "--b"), "", false},
		{"content ending in a delimiter prefix", "abc\r\n--" + testBoundary[:5] + closing, len("abc\r\n--" + testBoundary[:5]), "", false},
		{"a field after the file", content + "\r\n--" + testBoundary + "\r\nContent-Disposition: form-data; name=\"n\"\r\n\r\nx" + closing,
			len(content + "\r\n--" + testBoundary + "\r\nContent-Disposition: form-data; name=\"n\"\r\n\r\nx"), "boundary comes earlier", true},
		{"the delimiter inside", content[:500] + "\r\n--" + testBoundary + "x" + content[500:] + closing, len(content) + len("\r\n--"+testBoundary+"x"), "boundary comes earlier", true},
		{"the delimiter as the file's end", content + "\r\n--" + testBoundary + closing, len(content) + len("\r\n--"+testBoundary), "boundary comes earlier", true},
		{"closing without its CRLF", content + closing[:len(closing)-2], len(content) - 2, "and nothing more", false},
		{"closing with an epilogue", content + closing + "epilogue", len(content) + len("epilogue"), "boundary comes earlier", true},
		{"bytes after the closing", content + closing + "x", len(content), "and nothing more", false},
		{"no closing", content + strings.Repeat("-", len(closing)), len(content), "and nothing more", false},
		{"a wrong closing", content + "\r\n--" + testBoundary + "-!\r\n", len(content), "and nothing more", false},
		{"body ends early", content[:100], len(content), "ended early", false},
		{"body ends in the closing", content + closing[:5], len(content), "ended early", false},
	} {
		for _, chunk := range []int{1, 7, 4096} {
			got, err := readFormFile([]byte(tc.body), int64(tc.size), chunk)
			switch {
			case tc.errHas == "" && (err != nil || string(got) != tc.body[:tc.size]):
				t.Fatalf("%s, %d-byte reads: %d bytes, %v; want the %d bytes", tc.name, chunk, len(got), err, tc.size)
			case tc.errHas != "" && (err == nil || !fault.Is(err, fault.Invalid) || !strings.Contains(fault.Message(err), tc.errHas)):
				t.Fatalf("%s, %d-byte reads: error %v, want one saying %q", tc.name, chunk, err, tc.errHas)
			case tc.errHas != "" && len(got) >= tc.size:
				t.Fatalf("%s, %d-byte reads: all %d bytes given out before failing: the store would keep them", tc.name, chunk, len(got))
			}
		}
	}
}

// FuzzFormFile: a formFile gives out its size's bytes exactly when
// multipart.Reader would read them as the file's whole content followed by
// the form's end, and otherwise fails before its last byte.
func FuzzFormFile(f *testing.F) {
	closing := "\r\n--" + testBoundary + "--\r\n"
	f.Add([]byte("content"), []byte(closing), 3)
	f.Add([]byte("a\r\n--B0und"), []byte(closing), 1)
	f.Add([]byte("a\r\n--B0undary\r\n"), []byte(closing), 64)
	f.Add([]byte("abc"), []byte("\r\n--B0undary--"), 2)
	f.Fuzz(func(t *testing.T, content, tail []byte, chunk int) {
		if len(content) == 0 {
			return
		}
		chunk = 1 + abs(chunk)%300
		body := append(append([]byte{}, content...), tail...)
		got, err := readFormFile(body, int64(len(content)), chunk)
		whole := bytes.Equal(tail, []byte(closing)) && bytes.Index(body, []byte("\r\n--"+testBoundary)) == len(content)
		switch {
		case whole && (err != nil || !bytes.Equal(got, content)):
			t.Fatalf("refused %q + %q: %v", content, tail, err)
		case !whole && err == nil:
			t.Fatalf("took %q + %q", content, tail)
		case !whole && len(got) >= len(content):
			t.Fatalf("gave out all %d bytes of %q + %q before failing", len(got), content, tail)
		}
		if whole {
			form := append([]byte("--"+testBoundary+"\r\nContent-Disposition: form-data; name=file\r\n\r\n"), body...)
			part, err := multipart.NewReader(bytes.NewReader(form), testBoundary).NextPart()
			if err != nil {
				t.Fatal(err)
			}
			if mp, err := io.ReadAll(part); err != nil || !bytes.Equal(mp, content) {
				t.Fatalf("multipart.Reader reads %q (%v), the one-pass file %q", mp, err, content)
			}
		}
	})
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
