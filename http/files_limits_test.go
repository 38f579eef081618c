package http

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	nethttp "net/http"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The document store's limits through real HTTP: bad input changes
// nothing, quotas hold under concurrency, uploads stream.

// setQuota sets a space's limits through the operator API.
func (e *filesEnv) setQuota(sp fileSpaceOf, files, spaceBytes, fileSize int64) {
	e.t.Helper()
	path := fmt.Sprintf("/operator/companies/%d/quota", sp.owner)
	if sp.name == "project" {
		path = fmt.Sprintf("/operator/projects/%d/quota", sp.owner)
	}
	e.do("PUT", path, bearer(testOperatorToken), map[string]any{"files": files, "space_bytes": spaceBytes, "file_size_bytes": fileSize}).want(e.t, 200)
}

// patterned is n bytes of a repeating pattern, made as they are read.
type patterned struct{ n, off int64 }

func (p *patterned) Read(b []byte) (int, error) {
	if p.off >= p.n {
		return 0, io.EOF
	}
	b = b[:min(int64(len(b)), p.n-p.off)]
	for i := range b {
		b[i] = byte((p.off + int64(i)) % 251)
	}
	p.off += int64(len(b))
	return len(b), nil
}

// streamUpload sends size patterned bytes as the file name without ever
// holding them: with Content-Length (counted first) or chunked.
func (e *filesEnv) streamUpload(sp fileSpaceOf, name string, size int64, chunked bool) resp {
	e.t.Helper()
	boundary := "bdp-test-boundary-4f2a"
	head := fmt.Sprintf("--%s\r\nContent-Disposition: form-data; name=\"file\"; filename=\"%s\"\r\n"+
		"Content-Type: application/octet-stream\r\n\r\n", boundary, name)
	tail := "\r\n--" + boundary + "--\r\n"
	body := io.MultiReader(strings.NewReader(head), &patterned{n: size}, strings.NewReader(tail))
	req, err := nethttp.NewRequest("POST", e.base+sp.base+"/file", body)
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "multipart/form-data; boundary="+boundary)
	if !chunked {
		req.ContentLength = int64(len(head)) + size + int64(len(tail))
	}
	sp.as.apply(req)
	res, err := nethttp.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	r := resp{Status: res.StatusCode, Header: res.Header, Body: raw}
	_ = json.Unmarshal(raw, &r.JSON)
	return r
}

// TestFilesBadInputChangesNothing: each refused request answers its
// status with the error envelope and leaves no row, no object, no
// reservation and no used quota behind.
func TestFilesBadInputChangesNothing(t *testing.T) {
	e := newFilesEnv(t)
	c := e.newCompany()
	for _, sp := range e.spaces(c) {
		t.Run(sp.name, func(t *testing.T) {
			e.setQuota(sp, 3, 20<<20, 9<<20)
			e.upload("POST", sp, "?folder=docs", "a.txt", []byte("existing")).want(t, 201)
			e.upload("POST", sp, "", "b.txt", []byte("b")).want(t, 201)
			formCT, formBody := multipartFile("attachment", "x.txt", []byte("x")) // no field file
			long := strings.Repeat("d", 1020)
			for _, tc := range []struct {
				name   string
				do     func() resp
				status int
				errHas string
			}{
				{"no form field file", func() resp {
					return e.send("POST", sp.base+"/file", sp.as, formCT, bytes.NewReader(formBody))
				}, 400, "form field file is required"},
				{"not multipart", func() resp { return e.send("POST", sp.base+"/file", sp.as, "text/plain", strings.NewReader("hello")) }, 400, "multipart"},
				{"no filename", func() resp { return e.upload("POST", sp, "", "", []byte("x")) }, 400, "no filename"},
				{"filename with a folder", func() resp { return e.upload("POST", sp, "", "docs/c.txt", []byte("x")) }, 400, "must not contain /"},
				{"filename ..", func() resp { return e.upload("POST", sp, "", "..", []byte("x")) }, 400, "invalid file name"},
				{"filename with a backslash", func() resp { return e.upload("POST", sp, "", `..\c.txt`, []byte("x")) }, 400, "backslash"},
				{"folder ..", func() resp { return e.upload("POST", sp, "?folder=docs/..", "c.txt", []byte("x")) }, 400, "invalid folder"},
				{"folder absolute", func() resp { return e.upload("POST", sp, "?folder=/etc", "c.txt", []byte("x")) }, 400, "absolute"},
				{"folder with an empty segment", func() resp { return e.upload("POST", sp, "?folder=docs//x", "c.txt", []byte("x")) }, 400, "empty segments"},
				{"folder with a trailing slash", func() resp { return e.upload("POST", sp, "?folder=docs/", "c.txt", []byte("x")) }, 400, "empty segments"},
				{"folder with a control character", func() resp { return e.upload("POST", sp, "?folder=docs%01", "c.txt", []byte("x")) }, 400, "control character"},
				{"path over 1024 bytes", func() resp { return e.upload("POST", sp, "?folder="+long, "c.txt", []byte("x")) }, 400, "1024"},
				{"upload of an existing file", func() resp { return e.upload("POST", sp, "?folder=docs", "a.txt", []byte("new")) }, 400, "already exists"},
				{"over the per-file limit", func() resp { return e.streamUpload(sp, "big.bin", 9<<20+1, false) }, 413, "per-file limit of 9437184 bytes"},
				{"over the per-file limit, chunked", func() resp { return e.streamUpload(sp, "big.bin", 10<<20, true) }, 413, "per-file limit of 9437184 bytes"},
				{"upload over 8 MiB to an existing file", func() resp { return e.streamUpload(sp, "b.txt", 9<<20, false) }, 400, "already exists"},
				{"tags", func() resp { return e.upload("POST", sp, "?tags=%7B%7D", "c.txt", []byte("x")) }, 400, "tags is not supported"},
				{"replace without folder", func() resp { return e.upload("PUT", sp, "", "b.txt", []byte("x")) }, 400, "folder is required"},
				{"replace of a missing file", func() resp { return e.upload("PUT", sp, "?folder=docs", "missing.txt", []byte("x")) }, 404, "not found"},
				{"replace in a missing folder", func() resp { return e.upload("PUT", sp, "?folder=nowhere", "a.txt", []byte("x")) }, 404, "not found"},
				{"delete of a missing file", func() resp { return e.do("DELETE", sp.base+"/file?path=docs/missing.txt", sp.as, nil) }, 404, "not found"},
				{"delete of a folder", func() resp { return e.do("DELETE", sp.base+"/file?path=docs", sp.as, nil) }, 404, "not found"},
				{"delete without path", func() resp { return e.do("DELETE", sp.base+"/file", sp.as, nil) }, 400, "path is required"},
				{"delete of a bad path", func() resp { return e.do("DELETE", sp.base+"/file?path=docs/../b.txt", sp.as, nil) }, 400, "invalid path"},
				{"link of a missing file", func() resp { return e.do("GET", sp.base+"/file?path=A.TXT", sp.as, nil) }, 404, "not found"},
				{"link without path", func() resp { return e.do("GET", sp.base+"/file", sp.as, nil) }, 400, "path is required"},
				{"quota of another service", func() resp { return e.do("GET", sp.base+"/quota?service=ai", sp.as, nil) }, 400, "service must be files"},
				{"per_page over 1000", func() resp { return e.do("GET", sp.base+"/files?per_page=1001", sp.as, nil) }, 400, "per_page"},
			} {
				t.Run(tc.name, func(t *testing.T) {
					before := e.state(sp)
					r := tc.do().wantError(t, tc.status)
					if msg := r.JSON["error"].(string); !strings.Contains(msg, tc.errHas) || len(msg) > 600 {
						t.Fatalf("error %q, want it to contain %q", msg, tc.errHas)
					}
					if after := e.state(sp); after != before {
						t.Fatalf("state changed:\n%s\n%s", before, after)
					}
				})
			}
			for _, expiry := range []string{"0s", "500ms", "8d", "169h", "604801s", "10", "abc", "1x", "-1m", "1.5d", "99999999999999999999d", "m"} {
				t.Run("expiry "+expiry, func(t *testing.T) {
					r := e.do("GET", sp.base+"/file?path=b.txt&expiry="+url.QueryEscape(expiry), sp.as, nil).wantError(t, 400)
					if !strings.Contains(r.JSON["error"].(string), "expiry must be") {
						t.Fatalf("error %s", r.Body)
					}
				})
			}
			for _, expiry := range []string{"1s", "90m", "1h30m", "168h", "604800s", "7d"} {
				e.do("GET", sp.base+"/file?path=b.txt&expiry="+expiry, sp.as, nil).want(t, 200)
			}

			// The count and space limits answer 413 naming them.
			e.upload("POST", sp, "", "c.txt", []byte("c")).want(t, 201)
			before := e.state(sp)
			r := e.upload("POST", sp, "", "d.txt", []byte("d")).wantError(t, 413)
			if !strings.Contains(r.JSON["error"].(string), "limit of 3 files") {
				t.Fatalf("count limit: %s", r.Body)
			}
			e.setQuota(sp, 10, 8<<20, 9<<20)
			r = e.streamUpload(sp, "e.bin", 8<<20, false).wantError(t, 413)
			if !strings.Contains(r.JSON["error"].(string), "space limit of 8388608 bytes") {
				t.Fatalf("space limit: %s", r.Body)
			}
			if after := e.state(sp); after != before {
				t.Fatalf("state changed:\n%s\n%s", before, after)
			}
		})
	}
}

// An upload cut short by its client leaves nothing behind.
func TestFilesUploadCutShortLeavesNothing(t *testing.T) {
	e := newFilesEnv(t)
	sp := e.spaces(e.newCompany())[1]
	before := e.state(sp)
	for _, sent := range []int64{100, 12 << 20} { // within the first 8 MiB, and streaming
		conn, err := net.Dial("tcp", strings.TrimPrefix(e.base, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		boundary := "cut"
		head := fmt.Sprintf("--%s\r\nContent-Disposition: form-data; name=\"file\"; filename=\"cut.bin\"\r\n\r\n", boundary)
		req := fmt.Sprintf("POST %s/file HTTP/1.1\r\nHost: x\r\nAuthorization: Basic %s\r\nContent-Type: multipart/form-data; boundary=%s\r\nContent-Length: %d\r\n\r\n",
			sp.base, base64.StdEncoding.EncodeToString([]byte(sp.as.(basic).email+":"+sp.as.(basic).password)), boundary, len(head)+(20<<20))
		w := bufio.NewWriter(conn)
		_, _ = w.WriteString(req + head)
		_, _ = io.Copy(w, &patterned{n: sent})
		_ = w.Flush()
		time.Sleep(200 * time.Millisecond) // the server is reading the file
		_ = conn.Close()
	}
	deadline := time.Now().Add(10 * time.Second)
	for e.state(sp) != before {
		if time.Now().After(deadline) {
			t.Fatalf("state after uploads cut short:\n%s\nwant\n%s", e.state(sp), before)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// A replace counts only its difference: a file may grow by what is left,
// whatever its own size.
func TestFilesReplaceCountsTheDifference(t *testing.T) {
	e := newFilesEnv(t)
	sp := e.spaces(e.newCompany())[0]
	e.setQuota(sp, 10, 1000, 1000)
	e.upload("POST", sp, "", "r.bin", bytes.Repeat([]byte("r"), 600)).want(t, 201)
	e.upload("POST", sp, "", "other.bin", bytes.Repeat([]byte("o"), 100)).want(t, 201)
	// 300 left: 900 bytes fit as a replace of 600, not as a new file.
	e.upload("POST", sp, "", "new.bin", bytes.Repeat([]byte("n"), 301)).wantError(t, 413)
	e.upload("PUT", sp, "?folder=", "r.bin", bytes.Repeat([]byte("R"), 900)).want(t, 201)
	if st := e.state(sp); st != "used 2/1000; files [other.bin:100 r.bin:900]; objects [100 900]; reservations 0" {
		t.Fatalf("after growing: %s", st)
	}
	before := e.state(sp)
	r := e.upload("PUT", sp, "?folder=", "r.bin", bytes.Repeat([]byte("X"), 901)).wantError(t, 413)
	if !strings.Contains(r.JSON["error"].(string), "only 0 of the space limit of 1000 bytes remain") {
		t.Fatalf("growing past the space: %s", r.Body)
	}
	if e.state(sp) != before || e.content(sp, "r.bin") != strings.Repeat("R", 900) {
		t.Fatalf("a refused replace changed the file: %s", e.state(sp))
	}
	e.upload("PUT", sp, "?folder=", "r.bin", []byte("small")).want(t, 201)
	if st := e.state(sp); st != "used 2/105; files [other.bin:100 r.bin:5]; objects [100 5]; reservations 0" {
		t.Fatalf("after shrinking: %s", st)
	}
}

// TestFilesConcurrentUploadsHoldTheQuota: 100 uploads race through HTTP
// for the last free space; exactly as many succeed as fit, and the quota
// route, the list and the object store agree afterwards.
func TestFilesConcurrentUploadsHoldTheQuota(t *testing.T) {
	e := newFilesEnv(t)
	sp := e.spaces(e.newCompany())[1]
	const size, free = 1000, 7
	e.setQuota(sp, 1000, 3000+free*size+size/2, 10*size)
	e.upload("POST", sp, "", "base.bin", bytes.Repeat([]byte("b"), 3000)).want(t, 201)
	var created, refused atomic.Int64
	var wg sync.WaitGroup
	for i := range 100 {
		wg.Go(func() {
			ct, body := multipartFile("file", fmt.Sprintf("race-%03d.bin", i), bytes.Repeat([]byte{byte(i)}, size))
			req, _ := nethttp.NewRequest("POST", e.base+sp.base+"/file?folder=race", bytes.NewReader(body))
			req.Header.Set("Content-Type", ct)
			sp.as.apply(req)
			res, err := nethttp.DefaultClient.Do(req)
			if err != nil {
				t.Errorf("upload %d: %v", i, err)
				return
			}
			msg, _ := io.ReadAll(res.Body)
			res.Body.Close()
			switch res.StatusCode {
			case 201:
				created.Add(1)
			case 413:
				refused.Add(1)
			default:
				t.Errorf("upload %d: %d %s", i, res.StatusCode, msg)
			}
		})
	}
	wg.Wait()
	if created.Load() != free || refused.Load() != 100-free {
		t.Fatalf("%d uploads created, %d refused; %d fit", created.Load(), refused.Load(), free)
	}
	q := e.do("GET", sp.base+"/quota", sp.as, nil).want(t, 200)
	if num(t, q.JSON, "files.quota_used.files") != 1+free || num(t, q.JSON, "files.quota_used.space_bytes") != 3000+free*size ||
		num(t, q.JSON, "files.quota_available.space_bytes") != size/2 {
		t.Fatalf("quota %s", q.Body)
	}
	var objects, bytesStored int64
	if err := e.objects.Keys(t.Context(), sp.prefix, func(_ string, n int64, _ time.Time) error {
		objects, bytesStored = objects+1, bytesStored+n
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	list := e.do("GET", sp.base+"/files?search=race/", sp.as, nil).want(t, 200)
	if objects != 1+free || bytesStored != 3000+free*size || num(t, list.JSON, "meta.total_items") != free {
		t.Fatalf("object store holds %d objects of %d bytes; list %s", objects, bytesStored, list.Body)
	}
}

// TestFilesUploadStreams: a 128 MiB upload through the route grows the
// server's live heap by a bounded amount (the first 8 MiB and the object
// store client's two parts), not by its size. The live heap is sampled
// after a forced collection, so garbage waiting for the collector does not
// count.
func TestFilesUploadStreams(t *testing.T) {
	e := newFilesEnv(t)
	sp := e.spaces(e.newCompany())[0]
	const size = 128 << 20
	e.setQuota(sp, 10, 1<<30, 1<<30)
	live := func() int64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return int64(m.HeapAlloc)
	}
	base := live()
	var peak atomic.Int64
	done := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-done:
				return
			case <-time.After(20 * time.Millisecond):
				if h := live(); h > peak.Load() {
					peak.Store(h)
				}
			}
		}
	}()
	r := e.streamUpload(sp, "big.bin", size, false)
	close(done)
	<-sampled
	r.want(t, 201)
	if grew := peak.Load() - base; grew > 40<<20 {
		t.Fatalf("the live heap grew by %d MiB during a %d MiB upload", grew>>20, size>>20)
	} else {
		t.Logf("live heap grew by at most %.1f MiB during a %d MiB upload", float64(grew)/(1<<20), size>>20)
	}
	if st := e.state(sp); st != fmt.Sprintf("used 1/%d; files [big.bin:%d]; objects [%d]; reservations 0", size, size, size) {
		t.Fatalf("state %s", st)
	}
	// What was stored is what was sent.
	link := e.do("GET", sp.base+"/file?path=big.bin", sp.as, nil).want(t, 200).JSON["download_link"].(string)
	res, err := nethttp.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	want := &patterned{n: size}
	got, wantBuf := make([]byte, 1<<20), make([]byte, 1<<20)
	var n int64
	for {
		k, err := io.ReadFull(res.Body, got)
		if k > 0 {
			if _, werr := io.ReadFull(want, wantBuf[:k]); werr != nil || !bytes.Equal(got[:k], wantBuf[:k]) {
				t.Fatalf("downloaded bytes differ near offset %d", n)
			}
			n += int64(k)
		}
		if err != nil {
			break
		}
	}
	if n != size {
		t.Fatalf("downloaded %d bytes of %d", n, size)
	}
}
