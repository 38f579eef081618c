package http

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"mime/multipart"
	nethttp "net/http"
	"net/url"
	"strings"
	"testing"
)

// The one-pass upload (fileform.go) through real HTTP: which uploads take
// it, what they store, and that a form it cannot take whole leaves
// nothing behind.

const onePassBoundary = "onepass-boundary-0123456789"

// goForm is the form Go's multipart.Writer makes of fields (name, value)
// and the file, in that order when fileFirst is false; the file is the
// only part when fields is empty.
func goForm(name string, content []byte, fileFirst bool, fields ...string) (string, []byte) {
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	_ = w.SetBoundary(onePassBoundary)
	writeFields := func() {
		for i := 0; i+1 < len(fields); i += 2 {
			_ = w.WriteField(fields[i], fields[i+1])
		}
	}
	if !fileFirst {
		writeFields()
	}
	fw, _ := w.CreateFormFile("file", name)
	_, _ = fw.Write(content)
	if fileFirst {
		writeFields()
	}
	_ = w.Close()
	return w.FormDataContentType(), b.Bytes()
}

// stored is the content of the file at path and the ETag the object store
// gives it: the MD5 of the content for an object stored with one PUT,
// "<md5 of the parts' MD5s>-<parts>" for one stored as a multipart upload.
func (e *filesEnv) stored(sp fileSpaceOf, path string) ([]byte, string) {
	e.t.Helper()
	r := e.do("GET", sp.base+"/file?path="+url.QueryEscape(path), sp.as, nil).want(e.t, 200)
	res, err := nethttp.Get(r.JSON["download_link"].(string))
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil || res.StatusCode != 200 {
		e.t.Fatalf("download of %s: %d %v", path, res.StatusCode, err)
	}
	return body, strings.Trim(res.Header.Get("ETag"), `"`)
}

func onePassContent(size int) []byte {
	b := make([]byte, size)
	rng := rand.NewChaCha8([32]byte{'b', 'd', 'p'})
	_, _ = rng.Read(b)
	return b
}

// TestFilesUploadOnePass: a file over 8 MiB sent as a form's only part
// with a Content-Length is stored with one PUT (the object's ETag is its
// MD5, not a multipart upload's "-N"), byte for byte; the same file after
// another field, or sent chunked, still goes the streamed way.
func TestFilesUploadOnePass(t *testing.T) {
	e := newFilesEnv(t)
	sp := e.spaces(e.newCompany())[1]
	content := onePassContent(9<<20 + 12345)
	// Delimiter-like sequences that are not the delimiter, inside and as
	// the file's very end, where the closing delimiter follows at once.
	tricky := append(append(append([]byte{}, content[:5<<20]...), "\r\n--"+onePassBoundary[:7]+"\r\n--"+onePassBoundary[:len(onePassBoundary)-1]+"X--\r\n"...), content[5<<20:]...)
	tricky = append(tricky, "\r\n--"+onePassBoundary[:len(onePassBoundary)-1]...)
	md5Of := func(b []byte) string { sum := md5.Sum(b); return hex.EncodeToString(sum[:]) }

	for _, tc := range []struct {
		name     string
		content  []byte
		send     func(path string, content []byte) resp
		onePass  bool
		replaced bool
	}{
		{"only part, Content-Length", content, func(path string, content []byte) resp {
			ct, body := goForm(path, content, true)
			return e.send("POST", sp.base+"/file", sp.as, ct, bytes.NewReader(body))
		}, true, false},
		{"delimiter-like bytes inside", tricky, func(path string, content []byte) resp {
			ct, body := goForm(path, content, true)
			return e.send("POST", sp.base+"/file", sp.as, ct, bytes.NewReader(body))
		}, true, false},
		{"replace", tricky, func(path string, content []byte) resp {
			ct, body := goForm(path, content, true)
			return e.send("PUT", sp.base+"/file?folder=", sp.as, ct, bytes.NewReader(body))
		}, true, true},
		{"after another field", content, func(path string, content []byte) resp {
			ct, body := goForm(path, content, false, "note", "before the file")
			return e.send("POST", sp.base+"/file", sp.as, ct, bytes.NewReader(body))
		}, false, false},
		{"chunked", content, func(path string, content []byte) resp {
			ct, body := goForm(path, content, true)
			return e.send("POST", sp.base+"/file", sp.as, ct, io.MultiReader(bytes.NewReader(body))) // no Content-Length
		}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := strings.ReplaceAll(tc.name, " ", "-") + ".bin"
			if tc.replaced {
				path = "only-part,-Content-Length.bin"
			}
			tc.send(path, tc.content).want(t, 201)
			got, etag := e.stored(sp, path)
			if !bytes.Equal(got, tc.content) {
				t.Fatalf("stored %d bytes, not the %d sent", len(got), len(tc.content))
			}
			if onePass := etag == md5Of(tc.content); onePass != tc.onePass || (!onePass && !strings.Contains(etag, "-")) {
				t.Fatalf("ETag %q (content MD5 %s): stored with one PUT %v, want %v", etag, md5Of(tc.content), onePass, tc.onePass)
			}
		})
	}
	c, k := len(content), len(tricky)
	if st, want := e.state(sp), fmt.Sprintf("used 4/%d; files [after-another-field.bin:%d chunked.bin:%d delimiter-like-bytes-inside.bin:%d "+
		"only-part,-Content-Length.bin:%d]; objects %v; reservations 0", 2*c+2*k, c, c, k, k, []int{c, c, k, k}); st != want {
		t.Fatalf("state %s, want %s", st, want)
	}
}

// TestFilesOnePassRefusals: a form sent the one-pass way that does not
// end right after the file answers 400 and leaves no row, object,
// reservation or used quota; the raw filename is checked as ever.
func TestFilesOnePassRefusals(t *testing.T) {
	e := newFilesEnv(t)
	sp := e.spaces(e.newCompany())[0]
	e.upload("POST", sp, "", "kept.txt", []byte("kept")).want(t, 201)
	content := onePassContent(9 << 20)
	for _, tc := range []struct {
		name   string
		body   func() (string, io.Reader)
		status int
		errHas string
	}{
		{"no CRLF after the closing boundary", func() (string, io.Reader) {
			ct, body := goForm("f.bin", content, true)
			return ct, bytes.NewReader(body[:len(body)-2])
		}, 400, "and nothing more"},
		{"a field after the file", func() (string, io.Reader) {
			ct, body := goForm("f.bin", content, true, "note", "after the file")
			return ct, bytes.NewReader(body)
		}, 400, "boundary comes earlier"},
		{"an epilogue", func() (string, io.Reader) {
			ct, body := goForm("f.bin", content, true)
			return ct, bytes.NewReader(append(body, "an epilogue\r\n"...))
		}, 400, "boundary comes earlier"},
		{"a filename with a folder", func() (string, io.Reader) {
			ct, body := goForm("a/f.bin", content, true)
			return ct, bytes.NewReader(body)
		}, 400, "must not contain /"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := e.state(sp)
			ct, body := tc.body()
			r := e.send("POST", sp.base+"/file", sp.as, ct, body).wantError(t, tc.status)
			if msg := r.JSON["error"].(string); !strings.Contains(msg, tc.errHas) || len(msg) > 600 {
				t.Fatalf("error %q, want it to contain %q", msg, tc.errHas)
			}
			if after := e.state(sp); after != before {
				t.Fatalf("state changed:\n%s\n%s", before, after)
			}
		})
	}
}
