package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/openbdp/bdp/files"
)

// loadS3Config reads the BDP_S3_* variables into c (the object store of
// the file routes, issue 12). A partial external configuration is an
// error naming what is missing, before anything starts.
func loadS3Config(c *config, get func(string) string, bad func(string, error)) {
	c.S3Endpoint, c.S3AccessKey, c.S3SecretKey = get("BDP_S3_ENDPOINT"), get("BDP_S3_ACCESS_KEY"), get("BDP_S3_SECRET_KEY")
	c.S3Bucket, c.S3Region, c.S3PublicURL = get("BDP_S3_BUCKET"), get("BDP_S3_REGION"), get("BDP_S3_PUBLIC_URL")
	if c.S3Endpoint != "" {
		if err := checkS3URL(c.S3Endpoint, false); err != nil {
			bad("BDP_S3_ENDPOINT", err)
		}
		if c.S3AccessKey == "" {
			bad("BDP_S3_ACCESS_KEY", errors.New("is required with BDP_S3_ENDPOINT"))
		}
		if c.S3SecretKey == "" {
			bad("BDP_S3_SECRET_KEY", errors.New("is required with BDP_S3_ENDPOINT"))
		}
	} else {
		// The embedded store: both root keys or neither (generated).
		if c.S3AccessKey != "" && c.S3SecretKey == "" {
			bad("BDP_S3_SECRET_KEY", errors.New("is required with BDP_S3_ACCESS_KEY"))
		}
		if c.S3SecretKey != "" && c.S3AccessKey == "" {
			bad("BDP_S3_ACCESS_KEY", errors.New("is required with BDP_S3_SECRET_KEY"))
		}
		if c.S3Region != "" {
			bad("BDP_S3_REGION", errors.New("is used only with BDP_S3_ENDPOINT, which is not set (the embedded store signs for "+files.DefaultRegion+")"))
		}
	}
	if !s3BucketName.MatchString(c.S3Bucket) {
		bad("BDP_S3_BUCKET", errors.New("must be an S3 bucket name: 3 to 63 of a-z, 0-9, '.' and '-', starting and ending with a letter or digit"))
	}
	if c.S3PublicURL != "" {
		if err := checkS3URL(c.S3PublicURL, true); err != nil {
			bad("BDP_S3_PUBLIC_URL", err)
		}
	}
}

var s3BucketName = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$`)

// checkS3URL checks an object store address (files.ParseEndpoint); the
// public URL needs its scheme, since links are handed to clients.
func checkS3URL(s string, needScheme bool) error {
	if needScheme && !strings.Contains(s, "://") {
		return errors.New("must be http(s)://host:port")
	}
	_, _, err := files.ParseEndpoint(s)
	return err
}

// openTimeout bounds connecting to the store and creating the bucket, so
// an unreachable external store fails the start instead of hanging it.
const openTimeout = 30 * time.Second

// startFiles opens the object store of the file routes: the external one
// of BDP_S3_ENDPOINT, or the embedded store, started on BDP_S3_ADDR with
// its objects under BDP_DATA_DIR/objects. It returns the opened store, the
// addresses for addresses.json ("s3": the embedded store's, or
// "s3_external") and the func that stops the embedded store; runServe
// calls it after the HTTP server has drained.
//
// The embedded store changes the process's working directory
// (files.Embedded): cfg.DataDir is absolute, and so must be every path
// opened after this.
func startFiles(ctx context.Context, cfg config, log *slog.Logger) (*files.Objects, map[string]string, func(), error) {
	ocfg := files.ObjectsConfig{Endpoint: cfg.S3Endpoint, AccessKey: cfg.S3AccessKey, SecretKey: cfg.S3SecretKey,
		Bucket: cfg.S3Bucket, Region: cfg.S3Region, PublicURL: cfg.S3PublicURL}
	addrs := map[string]string{"s3_external": cfg.S3Endpoint}
	stop := func() {}
	if cfg.S3Endpoint == "" {
		if ocfg.AccessKey == "" {
			keys, err := embeddedKeys(cfg.DataDir)
			if err != nil {
				return nil, nil, nil, err
			}
			ocfg.AccessKey, ocfg.SecretKey = keys.AccessKey, keys.SecretKey
		}
		dir := filepath.Join(cfg.DataDir, "objects")
		e, err := files.StartEmbedded(ctx, files.EmbeddedConfig{Addr: cfg.S3Addr, Dir: dir, AccessKey: ocfg.AccessKey, SecretKey: ocfg.SecretKey})
		if err != nil {
			return nil, nil, nil, fmt.Errorf("BDP_S3_ADDR %s: %w", cfg.S3Addr, err)
		}
		stop = func() {
			if err := e.Close(); err != nil {
				log.Error("stop the embedded object store", slog.Any("error", err))
			}
		}
		ocfg.Endpoint = e.Endpoint()
		addrs = map[string]string{"s3": e.Endpoint()}
		log.Info("embedded object store running", slog.String("addr", e.Endpoint()), slog.String("dir", dir))
	}
	octx, cancel := context.WithTimeout(ctx, openTimeout)
	defer cancel()
	objects, err := files.OpenObjects(octx, ocfg)
	if err != nil {
		stop()
		return nil, nil, nil, err
	}
	stopStore := stop
	stop = func() {
		// Idle connections first: the embedded store's shutdown waits for
		// every open one.
		objects.Close()
		stopStore()
	}
	log.Info("object store ready", slog.String("endpoint", ocfg.Endpoint), slog.String("bucket", ocfg.Bucket),
		slog.Bool("external", cfg.S3Endpoint != ""))
	return objects, addrs, stop, nil
}

// s3Credentials are the embedded store's root keys, as kept in
// BDP_DATA_DIR/s3-credentials.json.
type s3Credentials struct {
	AccessKey string `json:"access_key"`
	SecretKey string `json:"secret_key"`
}

const s3CredentialsFile = "s3-credentials.json"

// embeddedKeys returns the root keys kept in dataDir, generating and
// keeping them (mode 0600) on the first start, so that links handed out
// stay valid across restarts.
func embeddedKeys(dataDir string) (s3Credentials, error) {
	path := filepath.Join(dataDir, s3CredentialsFile)
	var keys s3Credentials
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		if err := json.Unmarshal(b, &keys); err != nil || keys.AccessKey == "" || keys.SecretKey == "" {
			return keys, fmt.Errorf("%s: want {\"access_key\": ..., \"secret_key\": ...}; remove it to generate new keys (links handed out become invalid)", path)
		}
		return keys, nil
	case !errors.Is(err, fs.ErrNotExist):
		return keys, fmt.Errorf("read the object store keys: %w", err)
	}
	// 130 bits of base32 for the key, 260 for the secret.
	keys = s3Credentials{AccessKey: rand.Text(), SecretKey: rand.Text() + rand.Text()}
	if b, err = json.MarshalIndent(keys, "", "  "); err != nil {
		return keys, err
	}
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return keys, fmt.Errorf("create BDP_DATA_DIR: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return keys, fmt.Errorf("write the object store keys: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return keys, fmt.Errorf("write the object store keys: %w", err)
	}
	return keys, nil
}
