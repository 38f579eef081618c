package files

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Without user xattrs the store keeps metadata in a sidecar directory
// beside the objects, and keeps using it after a restart on a filesystem
// that has xattrs, so stored objects keep their metadata (the ETag here).
func TestEmbeddedSidecarMetadata(t *testing.T) {
	ctx := context.Background()
	base := t.TempDir()
	cfg := EmbeddedConfig{Addr: "127.0.0.1:0", Dir: filepath.Join(base, "objects"), AccessKey: "root", SecretKey: "root-secret-for-sidecar"}
	noXattrs := func(string) bool { return false }

	download := func(e *Embedded) (string, string) {
		t.Helper()
		o, err := OpenObjects(ctx, ObjectsConfig{Endpoint: e.Endpoint(), AccessKey: cfg.AccessKey, SecretKey: cfg.SecretKey, Bucket: "bdp-files"})
		if err != nil {
			t.Fatal(err)
		}
		link, err := o.Link(ctx, "company/1/s", time.Minute, "")
		if err != nil {
			t.Fatal(err)
		}
		res, err := http.Get(link)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("download: %d %s", res.StatusCode, b)
		}
		return string(b), res.Header.Get("ETag")
	}

	e, err := startEmbedded(ctx, cfg, noXattrs)
	if err != nil {
		t.Fatal(err)
	}
	o, err := OpenObjects(ctx, ObjectsConfig{Endpoint: e.Endpoint(), AccessKey: cfg.AccessKey, SecretKey: cfg.SecretKey, Bucket: "bdp-files"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.Put(ctx, "company/1/s", strings.NewReader("sidecar"), 7); err != nil {
		t.Fatal(err)
	}
	body, etag := download(e)
	if body != "sidecar" || etag == "" {
		t.Fatalf("download: %q, ETag %q", body, etag)
	}
	var metaFiles int
	_ = filepath.Walk(filepath.Join(base, "meta-objects"), func(_ string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			metaFiles++
		}
		return nil
	})
	if metaFiles == 0 {
		t.Fatal("no metadata in the sidecar directory meta-objects")
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}

	// This filesystem has xattrs; the sidecar stays in use.
	again, err := StartEmbedded(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if body, etag2 := download(again); body != "sidecar" || etag2 != etag {
		t.Fatalf("after restart: %q, ETag %q, want ETag %q", body, etag2, etag)
	}
}
