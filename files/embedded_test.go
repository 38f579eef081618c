package files_test

import (
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openbdp/bdp/files"
)

// The embedded store in this process: port 0 reports the port bound, the
// objects and links survive a restart on the same directory and keys,
// Close frees the port, and a second store in one process is refused.
// (It changes this test binary's working directory; no test here reads a
// relative path.)
func TestEmbeddedStartRestartClose(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "objects")
	cfg := files.EmbeddedConfig{Addr: "127.0.0.1:0", Dir: dir, AccessKey: "root-access", SecretKey: "root-secret-0123456789"}
	e, err := files.StartEmbedded(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	host, port, err := net.SplitHostPort(e.Endpoint())
	if err != nil || host != "127.0.0.1" || port == "0" {
		t.Fatalf("Endpoint() = %q, want 127.0.0.1 and the port bound", e.Endpoint())
	}
	resp, err := http.Get("http://" + e.Endpoint() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("healthz: %d", resp.StatusCode)
	}

	if _, err := files.StartEmbedded(ctx, files.EmbeddedConfig{Addr: "127.0.0.1:0", Dir: t.TempDir(), AccessKey: "a", SecretKey: "b"}); err == nil ||
		!strings.Contains(err.Error(), "only one instance per process") {
		t.Fatalf("second store in the process: %v, want refused", err)
	}

	o, err := files.OpenObjects(ctx, files.ObjectsConfig{Endpoint: e.Endpoint(), AccessKey: cfg.AccessKey, SecretKey: cfg.SecretKey, Bucket: "bdp-files"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.Put(ctx, "company/1/kept", strings.NewReader("kept"), 4); err != nil {
		t.Fatal(err)
	}
	link, err := o.Link(ctx, "company/1/kept", time.Hour, "kept.txt")
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "bdp-files", "company", "1", "kept")); err != nil || string(b) != "kept" {
		t.Fatalf("object on disk: %q, %v", b, err)
	}

	if err := e.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if c, err := net.DialTimeout("tcp", e.Endpoint(), time.Second); err == nil {
		c.Close()
		t.Fatal("port still open after Close")
	}

	// Restart on the same port, directory and keys: the old link works.
	cfg.Addr = e.Endpoint()
	again, err := files.StartEmbedded(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	status, _, n, _, body := get(t, link)
	if status != http.StatusOK || n != 4 {
		t.Fatalf("link after restart: %d %s", status, body)
	}
}

func TestStartEmbeddedRefusesBadConfig(t *testing.T) {
	abs := t.TempDir()
	for _, tc := range []struct {
		name string
		cfg  files.EmbeddedConfig
		want string
	}{
		{"relative directory", files.EmbeddedConfig{Addr: "127.0.0.1:0", Dir: "data/objects", AccessKey: "a", SecretKey: "b"}, "not absolute"},
		{"no keys", files.EmbeddedConfig{Addr: "127.0.0.1:0", Dir: abs}, "access key and secret key"},
		{"address without port", files.EmbeddedConfig{Addr: "127.0.0.1", Dir: abs, AccessKey: "a", SecretKey: "b"}, "address"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := files.StartEmbedded(context.Background(), tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("StartEmbedded: %v, want an error with %q", err, tc.want)
			}
		})
	}
}
