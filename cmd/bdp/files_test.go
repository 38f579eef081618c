package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/openbdp/bdp/files"
	"github.com/openbdp/bdp/files/filestest"
)

func TestS3Config(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		bad  []string // variables the error must name; none: valid
		want func(config) bool
	}{
		{"embedded by default", nil, nil, func(c config) bool {
			return c.S3Endpoint == "" && c.S3Addr == "127.0.0.1:9000" && c.S3Bucket == "bdp-files" && c.S3AccessKey == "" && c.S3Region == ""
		}},
		{"embedded on port 0 with its own keys and a public URL",
			map[string]string{"BDP_S3_ADDR": "0.0.0.0:0", "BDP_S3_ACCESS_KEY": "root", "BDP_S3_SECRET_KEY": "rootsecret", "BDP_S3_PUBLIC_URL": "https://files.example.com"},
			nil, func(c config) bool {
				return c.S3Addr == "0.0.0.0:0" && c.S3AccessKey == "root" && c.S3SecretKey == "rootsecret" && c.S3PublicURL == "https://files.example.com"
			}},
		{"external store",
			map[string]string{"BDP_S3_ENDPOINT": "https://s3.example.com", "BDP_S3_ACCESS_KEY": "ak", "BDP_S3_SECRET_KEY": "sk",
				"BDP_S3_BUCKET": "team.files-1", "BDP_S3_REGION": "eu-central-1"},
			nil, func(c config) bool {
				return c.S3Endpoint == "https://s3.example.com" && c.S3Bucket == "team.files-1" && c.S3Region == "eu-central-1"
			}},
		{"external store as host:port", map[string]string{"BDP_S3_ENDPOINT": "minio:9000", "BDP_S3_ACCESS_KEY": "ak", "BDP_S3_SECRET_KEY": "sk"},
			nil, func(c config) bool { return c.S3Endpoint == "minio:9000" }},
		{"external store without keys", map[string]string{"BDP_S3_ENDPOINT": "http://127.0.0.1:9000"},
			[]string{"BDP_S3_ACCESS_KEY", "BDP_S3_SECRET_KEY"}, nil},
		{"external store without its secret", map[string]string{"BDP_S3_ENDPOINT": "http://127.0.0.1:9000", "BDP_S3_ACCESS_KEY": "ak"},
			[]string{"BDP_S3_SECRET_KEY"}, nil},
		{"embedded access key without secret", map[string]string{"BDP_S3_ACCESS_KEY": "ak"}, []string{"BDP_S3_SECRET_KEY"}, nil},
		{"embedded secret without access key", map[string]string{"BDP_S3_SECRET_KEY": "sk"}, []string{"BDP_S3_ACCESS_KEY"}, nil},
		{"region without an external store", map[string]string{"BDP_S3_REGION": "eu-west-1"}, []string{"BDP_S3_REGION"}, nil},
		{"bad endpoints and names", map[string]string{"BDP_S3_ENDPOINT": "ftp://x:21", "BDP_S3_ACCESS_KEY": "ak", "BDP_S3_SECRET_KEY": "sk",
			"BDP_S3_BUCKET": "Files_Of_Bdp", "BDP_S3_PUBLIC_URL": "https://files.example.com/downloads", "BDP_S3_ADDR": "9000"},
			[]string{"BDP_S3_ENDPOINT", "BDP_S3_BUCKET", "BDP_S3_PUBLIC_URL", "BDP_S3_ADDR"}, nil},
		{"endpoint without a port", map[string]string{"BDP_S3_ENDPOINT": "minio", "BDP_S3_ACCESS_KEY": "ak", "BDP_S3_SECRET_KEY": "sk"},
			[]string{"BDP_S3_ENDPOINT"}, nil},
		{"public URL without a scheme", map[string]string{"BDP_S3_PUBLIC_URL": "files.example.com:443"}, []string{"BDP_S3_PUBLIC_URL"}, nil},
		{"bucket too short", map[string]string{"BDP_S3_BUCKET": "ab"}, []string{"BDP_S3_BUCKET"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := loadConfig(envOf(tc.env))
			if len(tc.bad) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				if !tc.want(c) {
					t.Fatalf("%+v", c)
				}
				return
			}
			if err == nil {
				t.Fatal("bad configuration accepted")
			}
			for _, name := range tc.bad {
				if !strings.Contains(err.Error(), name+"=") {
					t.Errorf("error does not name %s:\n%v", name, err)
				}
			}
		})
	}
}

func TestS3ConfigDoesNotRepeatTheSecretKey(t *testing.T) {
	_, err := loadConfig(envOf(map[string]string{"BDP_S3_SECRET_KEY": "s3-very-secret"}))
	if err == nil || strings.Contains(err.Error(), "s3-very-secret") || !strings.Contains(err.Error(), "BDP_S3_ACCESS_KEY=") {
		t.Fatalf("error %v: want BDP_S3_ACCESS_KEY named and the secret not repeated", err)
	}
}

// The embedded store changes the working directory; BDP_DATA_DIR is
// resolved against the one bdp was started in, first.
func TestDataDirIsMadeAbsolute(t *testing.T) {
	c, err := loadConfig(envOf(map[string]string{"BDP_DATA_DIR": "state/bdp"}))
	if err != nil {
		t.Fatal(err)
	}
	wd, _ := os.Getwd()
	if want := filepath.Join(wd, "state", "bdp"); c.DataDir != want {
		t.Fatalf("DataDir %q, want %q", c.DataDir, want)
	}
}

// addresses reads addresses.json of a running bdp serve.
func addresses(t *testing.T, dataDir string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dataDir, "addresses.json"))
	if err != nil {
		t.Fatal(err)
	}
	var addrs map[string]string
	if err := json.Unmarshal(b, &addrs); err != nil {
		t.Fatal(err)
	}
	return addrs
}

// putAndLink stores body under key through objects and returns a link.
func putAndLink(t *testing.T, o *files.Objects, key, body string) string {
	t.Helper()
	ctx := context.Background()
	if _, err := o.Put(ctx, key, strings.NewReader(body), int64(len(body))); err != nil {
		t.Fatal(err)
	}
	link, err := o.Link(ctx, key, time.Hour, "a.txt")
	if err != nil {
		t.Fatal(err)
	}
	return link
}

func download(t *testing.T, link string) (int, string) {
	t.Helper()
	res, err := http.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	return res.StatusCode, string(b)
}

// bdp serve runs the embedded store on BDP_S3_ADDR, writes
// it to addresses.json as "s3", keeps generated root keys in
// s3-credentials.json (0600) and its objects under objects/; the keys and
// so the links handed out survive a restart, and stopping bdp stops the
// store.
func TestServeRunsTheEmbeddedObjectStore(t *testing.T) {
	dir := newDataDir(t)
	// A fixed port, the same after the restart: a link is signed for its
	// host and port.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s3Addr := ln.Addr().String()
	ln.Close()
	s := startServe(t, dir, "BDP_S3_ADDR="+s3Addr)
	addrs := addresses(t, dir)
	if addrs["s3"] != s3Addr || addrs["s3_external"] != "" {
		t.Fatalf("addresses.json: %v, want the embedded store's address as s3", addrs)
	}
	credPath := filepath.Join(dir, "s3-credentials.json")
	fi, err := os.Stat(credPath)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("s3-credentials.json mode %v, want 0600", fi.Mode().Perm())
	}
	credJSON, _ := os.ReadFile(credPath)
	var keys s3Credentials
	if err := json.Unmarshal(credJSON, &keys); err != nil || len(keys.AccessKey) < 16 || len(keys.SecretKey) < 32 {
		t.Fatalf("s3-credentials.json: %s (%v)", credJSON, err)
	}

	ocfg := files.ObjectsConfig{Endpoint: addrs["s3"], AccessKey: keys.AccessKey, SecretKey: keys.SecretKey, Bucket: "bdp-files"}
	o, err := files.OpenObjects(context.Background(), ocfg)
	if err != nil {
		t.Fatal(err)
	}
	link := putAndLink(t, o, "outside-bdp/hello", "hello from bdp") // not under company/ or project/: the start-up repair leaves it
	if status, body := download(t, link); status != 200 || body != "hello from bdp" {
		t.Fatalf("download: %d %q", status, body)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "objects", "bdp-files", "outside-bdp", "hello")); err != nil || string(b) != "hello from bdp" {
		t.Fatalf("object under BDP_DATA_DIR/objects: %q, %v", b, err)
	}
	bad := ocfg
	bad.SecretKey = "not-the-secret"
	if _, err := files.OpenObjects(context.Background(), bad); err == nil {
		t.Fatal("the store accepted a wrong secret key")
	}

	if err := s.stop(syscall.SIGTERM); err != nil {
		t.Fatalf("bdp serve: %v\n%s", err, s.log)
	}
	if c, err := net.DialTimeout("tcp", addrs["s3"], time.Second); err == nil {
		c.Close()
		t.Fatal("the object store still listens after bdp serve stopped")
	}

	startServe(t, dir, "BDP_S3_ADDR="+s3Addr)
	if after, _ := os.ReadFile(credPath); string(after) != string(credJSON) {
		t.Fatalf("keys changed across a restart: %s, was %s", after, credJSON)
	}
	if status, body := download(t, link); status != 200 || body != "hello from bdp" {
		t.Fatalf("link handed out before the restart: %d %q", status, body)
	}
}

// With BDP_S3_ENDPOINT bdp uses that store: no embedded store, no keys of
// its own; the bucket is created there.
func TestServeUsesAnExternalObjectStore(t *testing.T) {
	ext := filestest.Start(t)
	dir := newDataDir(t)
	startServe(t, dir, "BDP_S3_ENDPOINT=http://"+ext.Endpoint, "BDP_S3_ACCESS_KEY="+ext.AccessKey,
		"BDP_S3_SECRET_KEY="+ext.SecretKey, "BDP_S3_BUCKET=bdp-external")
	addrs := addresses(t, dir)
	if addrs["s3_external"] != "http://"+ext.Endpoint || addrs["s3"] != "" {
		t.Fatalf("addresses.json: %v, want s3_external %s and no embedded store", addrs, ext.Endpoint)
	}
	for _, name := range []string{"objects", "s3-credentials.json"} {
		if _, err := os.Stat(filepath.Join(dir, name)); !os.IsNotExist(err) {
			t.Errorf("%s in BDP_DATA_DIR with an external store (%v)", name, err)
		}
	}
	raw, err := minio.New(ext.Endpoint, &minio.Options{Creds: credentials.NewStaticV4(ext.AccessKey, ext.SecretKey, ""), Region: ext.Region})
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := raw.BucketExists(context.Background(), "bdp-external"); err != nil || !ok {
		t.Fatalf("bucket bdp-external in the external store: %v %v", ok, err)
	}
	ext.Bucket = "bdp-external"
	o, err := files.OpenObjects(context.Background(), ext)
	if err != nil {
		t.Fatal(err)
	}
	if status, body := download(t, putAndLink(t, o, "project/2/x", "external")); status != 200 || body != "external" {
		t.Fatalf("download: %d %q", status, body)
	}
}

// A partial external configuration stops bdp before anything starts: no
// database, no store.
func TestServeRefusesAPartialObjectStoreConfig(t *testing.T) {
	dir := newDataDir(t)
	cmd := exec.Command(bdpBinary, "serve")
	cmd.Env = append(os.Environ(), "BDP_DATA_DIR="+dir, "BDP_HTTP_ADDR=127.0.0.1:0", "BDP_MQTT_ADDR=127.0.0.1:0",
		"BDP_S3_ENDPOINT=http://127.0.0.1:9", "BDP_S3_ACCESS_KEY=", "BDP_S3_SECRET_KEY=")
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("want exit code 1, got %v:\n%s", err, out)
	}
	for _, name := range []string{"BDP_S3_ACCESS_KEY", "BDP_S3_SECRET_KEY"} {
		if !strings.Contains(string(out), name) {
			t.Errorf("message does not name %s:\n%s", name, out)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("BDP_DATA_DIR has %v after a refused configuration, want nothing started", entries)
	}
}
