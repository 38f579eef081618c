package files_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/openbdp/bdp/files"
	"github.com/openbdp/bdp/files/filestest"
)

// The tests run against the real embedded store (filestest: a child
// process per test), the same one bdp serve runs.

// pattern is a reader of n deterministic bytes that never holds more than
// one small block, so a test can stream tens of MiB without allocating
// them. Its length is hidden from minio-go (no Len/Size/Seek).
type pattern struct {
	left, off int64
	failAt    int64 // > 0: fail with errBroken once this many bytes were read
	read      int64
}

var errBroken = errors.New("client went away")

func (p *pattern) Read(b []byte) (int, error) {
	if p.failAt > 0 && p.read >= p.failAt {
		return 0, errBroken
	}
	if p.left == 0 {
		return 0, io.EOF
	}
	if int64(len(b)) > p.left {
		b = b[:p.left]
	}
	for i := range b {
		b[i] = byte((p.off + int64(i)) * 7 / 3)
	}
	p.off += int64(len(b))
	p.left -= int64(len(b))
	p.read += int64(len(b))
	return len(b), nil
}

func patternSum(n int64) [32]byte {
	h := sha256.New()
	_, _ = io.Copy(h, &pattern{left: n})
	return [32]byte(h.Sum(nil))
}

// get downloads u and returns the status, the body's hash and length and
// the response (body closed).
func get(t *testing.T, u string) (int, [32]byte, int64, *http.Response, string) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	h := sha256.New()
	var head bytes.Buffer
	n, err := io.Copy(io.MultiWriter(h, &limitedWriter{w: &head, left: 4096}), resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, [32]byte(h.Sum(nil)), n, resp, head.String()
}

type limitedWriter struct {
	w    io.Writer
	left int
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if l.left > 0 {
		k := min(len(p), l.left)
		l.w.Write(p[:k])
		l.left -= k
	}
	return len(p), nil
}

func TestPutKnownAndUnknownSizeReadBack(t *testing.T) {
	ctx := context.Background()
	o := filestest.Open(t)
	for _, tc := range []struct {
		name  string
		size  int64
		known bool
	}{
		{"known empty", 0, true},
		{"known small", 1000, true},
		{"known 20 MiB", 20 << 20, true},
		{"unknown empty", 0, false},
		{"unknown small", 1000, false},
		{"unknown exactly one part", files.PartSize, false},
		{"unknown one part and a byte", files.PartSize + 1, false},
		{"unknown 2.5 parts", files.PartSize*5/2 + 3, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := "company/1/" + strings.ReplaceAll(tc.name, " ", "-")
			size := tc.size
			if !tc.known {
				size = -1
			}
			n, err := o.Put(ctx, key, &pattern{left: tc.size}, size)
			if err != nil {
				t.Fatal(err)
			}
			if n != tc.size {
				t.Fatalf("Put stored %d bytes, want %d", n, tc.size)
			}
			u, err := o.Link(ctx, key, time.Minute, "x.bin")
			if err != nil {
				t.Fatal(err)
			}
			status, sum, got, _, _ := get(t, u)
			if status != http.StatusOK || got != tc.size || sum != patternSum(tc.size) {
				t.Fatalf("download: status %d, %d bytes (want 200, %d bytes), content equal: %v", status, got, tc.size, sum == patternSum(tc.size))
			}
		})
	}
}

// A 40 MiB body of unknown length is sent with bounded memory: what the
// client allocates over the whole upload stays under three parts, where
// buffering the body (or a fresh buffer per part) would take 40 MiB.
func TestPutUnknownSizeHoldsBoundedMemory(t *testing.T) {
	ctx := context.Background()
	o := filestest.Open(t)
	const size = 40 << 20
	// Warm the connection pool so its one-time buffers do not count.
	if _, err := o.Put(ctx, "warm", strings.NewReader("x"), 1); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	n, err := o.Put(ctx, "project/7/big", &pattern{left: size}, -1)
	runtime.ReadMemStats(&after)
	if err != nil || n != size {
		t.Fatalf("Put: %d bytes, %v", n, err)
	}
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("allocated %.1f MiB for a %d MiB upload of unknown size", float64(allocated)/(1<<20), size>>20)
	if limit := uint64(3 * files.PartSize); allocated > limit {
		t.Fatalf("allocated %d bytes for a %d-byte upload, want at most %d (two parts of %d)", allocated, size, limit, files.PartSize)
	}
	u, err := o.Link(ctx, "project/7/big", time.Minute, "")
	if err != nil {
		t.Fatal(err)
	}
	if status, sum, got, _, _ := get(t, u); status != 200 || got != size || sum != patternSum(size) {
		t.Fatalf("download: %d, %d bytes, equal %v", status, got, sum == patternSum(size))
	}
}

// rawClient talks to the store behind cfg directly, to see what Objects
// leaves there.
func rawClient(t *testing.T, cfg files.ObjectsConfig) *minio.Client {
	t.Helper()
	c, err := minio.New(cfg.Endpoint, &minio.Options{Creds: credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, ""), Region: cfg.Region})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A multipart upload that fails (the body breaks, the caller gives up)
// is aborted: no object and no parts stay in the store.
func TestPutUnknownSizeFailureLeavesNothing(t *testing.T) {
	cfg := filestest.Start(t)
	o, err := files.OpenObjects(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	raw := rawClient(t, cfg)
	for _, tc := range []struct {
		name   string
		body   *pattern
		cancel bool // cancel the context once 12 MiB were read
		want   error
	}{
		{"body breaks in the third part", &pattern{left: 40 << 20, failAt: 20 << 20}, false, errBroken},
		{"context cancelled during the second part", &pattern{left: 40 << 20}, true, context.Canceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var r io.Reader = tc.body
			if tc.cancel {
				r = &cancelAfter{r: tc.body, after: 12 << 20, cancel: cancel}
			}
			key := "company/2/" + strings.ReplaceAll(tc.name, " ", "-")
			if _, err := o.Put(ctx, key, r, -1); !errors.Is(err, tc.want) {
				t.Fatalf("Put: %v, want %v", err, tc.want)
			}
			for up := range raw.ListIncompleteUploads(context.Background(), cfg.Bucket, "", true) {
				t.Fatalf("multipart upload left in the store: %+v", up)
			}
			var keys []string
			if err := o.Keys(context.Background(), "", func(k string, _ int64, _ time.Time) error { keys = append(keys, k); return nil }); err != nil {
				t.Fatal(err)
			}
			if len(keys) != 0 {
				t.Fatalf("objects left: %v", keys)
			}
		})
	}
}

type cancelAfter struct {
	r      io.Reader
	after  int64
	read   int64
	cancel func()
}

func (c *cancelAfter) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	if c.read += int64(n); c.read >= c.after {
		c.cancel()
	}
	return n, err
}

func TestDeleteDeletePrefixKeys(t *testing.T) {
	ctx := context.Background()
	o := filestest.Open(t)
	put := func(key string, size int64) {
		t.Helper()
		if _, err := o.Put(ctx, key, &pattern{left: size}, size); err != nil {
			t.Fatal(err)
		}
	}
	// More than one page of a listing and of a bulk delete (1000 keys).
	for i := range 1003 {
		put(fmt.Sprintf("project/5/%04d", i), 1)
	}
	put("project/50/a", 3)
	put("company/5/a", 4)
	put("company/5/b", 5)

	keys := func(prefix string) map[string]int64 {
		t.Helper()
		got := map[string]int64{}
		err := o.Keys(ctx, prefix, func(k string, size int64, modified time.Time) error {
			if time.Since(modified) > time.Hour || time.Until(modified) > time.Minute {
				t.Errorf("%s modified %s, want about now", k, modified)
			}
			got[k] = size
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := keys("company/5/"); len(got) != 2 || got["company/5/a"] != 4 || got["company/5/b"] != 5 {
		t.Fatalf("Keys(company/5/) = %v", got)
	}
	if got := keys("project/5/"); len(got) != 1003 {
		t.Fatalf("Keys(project/5/): %d keys, want 1003", len(got))
	}

	// Keys stops at the callback's first error and returns it.
	stop := errors.New("enough")
	calls := 0
	if err := o.Keys(ctx, "project/5/", func(string, int64, time.Time) error { calls++; return stop }); err != stop || calls != 1 {
		t.Fatalf("Keys with a failing callback: %v after %d calls, want %v after 1", err, calls, stop)
	}

	if err := o.Delete(ctx, "company/5/a"); err != nil {
		t.Fatal(err)
	}
	if err := o.Delete(ctx, "company/5/never-was"); err != nil {
		t.Fatalf("Delete of a missing key: %v, want nil", err)
	}
	if got := keys("company/"); len(got) != 1 || got["company/5/b"] != 5 {
		t.Fatalf("after Delete: %v", got)
	}

	if err := o.DeletePrefix(ctx, "project/5/"); err != nil {
		t.Fatal(err)
	}
	all := keys("")
	names := slices.Sorted(func(yield func(string) bool) {
		for k := range all {
			if !yield(k) {
				return
			}
		}
	})
	if want := []string{"company/5/b", "project/50/a"}; !slices.Equal(names, want) {
		t.Fatalf("after DeletePrefix(project/5/): %v, want %v", names, want)
	}
	if err := o.DeletePrefix(ctx, "project/5/"); err != nil {
		t.Fatalf("DeletePrefix of nothing: %v", err)
	}
}

func TestOpenObjectsRefusesBadConfig(t *testing.T) {
	good := files.ObjectsConfig{Endpoint: "127.0.0.1:1", AccessKey: "a", SecretKey: "s", Bucket: "b"}
	for _, tc := range []struct {
		name   string
		change func(*files.ObjectsConfig)
		want   string
	}{
		{"nothing", func(c *files.ObjectsConfig) { *c = files.ObjectsConfig{} }, "missing endpoint, access key, secret key, bucket"},
		{"no secret", func(c *files.ObjectsConfig) { c.SecretKey = "" }, "missing secret key"},
		{"ftp endpoint", func(c *files.ObjectsConfig) { c.Endpoint = "ftp://host:21" }, `scheme "ftp"`},
		{"endpoint with a path", func(c *files.ObjectsConfig) { c.Endpoint = "http://host:9000/s3" }, "only scheme, host and port"},
		{"public URL with a path", func(c *files.ObjectsConfig) { c.PublicURL = "https://files.example.com/dl" }, "public URL"},
		{"unreachable store", func(*files.ObjectsConfig) {}, "bucket"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := good
			tc.change(&cfg)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			_, err := files.OpenObjects(ctx, cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("OpenObjects: %v, want an error with %q", err, tc.want)
			}
		})
	}
}

// stalled yields one part and a byte, then blocks until release is closed
// and ends: an upload that holds a streaming slot as long as a test wants.
type stalled struct {
	left    int
	release chan struct{}
}

func (s *stalled) Read(b []byte) (int, error) {
	if s.left == 0 {
		<-s.release
		return 0, io.EOF
	}
	n := min(len(b), s.left)
	clear(b[:n])
	s.left -= n
	return n, nil
}

// At most MaxStreams uploads of unknown length stream at once (each holds
// two parts); one more waits for a slot, and gives up with its ctx.
func TestPutUnknownSizeWaitsForASlot(t *testing.T) {
	ctx := context.Background()
	o := filestest.Open(t)
	release := make(chan struct{})
	errs := make(chan error, files.MaxStreams)
	for i := range files.MaxStreams {
		go func() {
			_, err := o.Put(ctx, fmt.Sprintf("company/9/%d", i), &stalled{left: files.PartSize + 1, release: release}, -1)
			errs <- err
		}()
	}
	// Give the stalled uploads time to take their slots.
	time.Sleep(500 * time.Millisecond)
	wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if _, err := o.Put(wctx, "company/9/waiting", strings.NewReader("x"), -1); !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "slots") {
		t.Fatalf("upload beyond %d streams: %v, want it to wait for a slot until its deadline", files.MaxStreams, err)
	}
	close(release)
	for range files.MaxStreams {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if n, err := o.Put(ctx, "company/9/after", strings.NewReader("x"), -1); err != nil || n != 1 {
		t.Fatalf("upload after the slots were freed: %d, %v", n, err)
	}
}
