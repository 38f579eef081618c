package files

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/versity/versitygw/backend/meta"
	"github.com/versity/versitygw/backend/posix"
	"github.com/versity/versitygw/embedgw"
	"github.com/versity/versitygw/s3api"
)

// EmbeddedConfig configures the object store bdp runs itself.
type EmbeddedConfig struct {
	// Addr is the listen address, host:port; port 0 picks a free port.
	Addr string
	// Dir holds the objects, as plain files under Dir/<bucket>/<key>. It
	// must be absolute: the store makes it the process's working directory.
	Dir string
	// AccessKey and SecretKey are the store's root account, the only one.
	AccessKey, SecretKey string
}

// Embedded is a running embedded S3 store (versitygw, posix backend). Only
// one can run per process, and starting it changes the process's working
// directory to Dir: every relative path must be resolved before.
type Embedded struct {
	endpoint string
	stop     context.CancelFunc
	done     chan struct{}
	err      error // what the gateway returned; read after done is closed
	close    sync.Once
}

// running is set while this process runs an embedded store. embedgw
// refuses a second gateway itself, but only after posix.New has already
// moved the working directory into the second store's directory, under the
// first, running one: the first would then write its objects there. This
// guard refuses before anything changes.
var running atomic.Bool

// startAttempts is how often a free port is picked again when another
// process took it between our probe and the gateway's bind (port 0 only).
const startAttempts = 5

// startTimeout bounds the wait for the gateway to listen.
const startTimeout = 30 * time.Second

// StartEmbedded starts the store and returns once it accepts connections.
// ctx bounds only the start; the store runs until Close.
func StartEmbedded(ctx context.Context, cfg EmbeddedConfig) (*Embedded, error) {
	return startEmbedded(ctx, cfg, func(dir string) bool { return (meta.XattrMeta{}).Test(dir) == nil })
}

// startEmbedded is StartEmbedded with the probe for user xattrs given, so
// a test can take the sidecar path on a filesystem that has them.
func startEmbedded(ctx context.Context, cfg EmbeddedConfig, hasXattrs func(dir string) bool) (*Embedded, error) {
	if !filepath.IsAbs(cfg.Dir) {
		return nil, fmt.Errorf("embedded object store: directory %q is not absolute", cfg.Dir)
	}
	if cfg.AccessKey == "" || cfg.SecretKey == "" {
		return nil, errors.New("embedded object store: access key and secret key are required")
	}
	host, port, err := net.SplitHostPort(cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("embedded object store: address %q: %w", cfg.Addr, err)
	}
	if !running.CompareAndSwap(false, true) {
		return nil, errors.New("embedded object store: one is already running in this process; only one instance per process is supported")
	}
	e, err := start(ctx, cfg, host, port, hasXattrs)
	if err != nil {
		running.Store(false)
	}
	return e, err
}

func start(ctx context.Context, cfg EmbeddedConfig, host, port string, hasXattrs func(dir string) bool) (*Embedded, error) {
	if err := os.MkdirAll(cfg.Dir, 0o750); err != nil {
		return nil, fmt.Errorf("embedded object store: %w", err)
	}
	store, opts, err := metadataStore(cfg.Dir, hasXattrs)
	if err != nil {
		return nil, err
	}
	attempts := 1
	if port == "0" {
		attempts = startAttempts
	}
	for attempt := 1; ; attempt++ {
		addr := cfg.Addr
		if port == "0" {
			if addr, err = freeAddr(host); err != nil {
				return nil, fmt.Errorf("embedded object store: pick a port on %s: %w", host, err)
			}
		}
		e, err := startGateway(ctx, cfg, addr, store, opts)
		if err == nil || attempt == attempts || ctx.Err() != nil {
			return e, err
		}
	}
}

// metadataStore keeps object metadata in extended attributes, or, where
// the filesystem has no user xattrs (tmpfs, some overlays), in a sidecar
// directory beside dir (the backend refuses one inside it). Once a sidecar
// directory exists it stays in use, so that objects stored without xattrs
// keep their metadata when the data moves to a filesystem that has them.
func metadataStore(dir string, hasXattrs func(dir string) bool) (meta.MetadataStorer, posix.PosixOpts, error) {
	sidecar := filepath.Join(filepath.Dir(dir), "meta-"+filepath.Base(dir))
	if _, err := os.Stat(sidecar); errors.Is(err, os.ErrNotExist) && hasXattrs(dir) {
		return meta.XattrMeta{}, posix.PosixOpts{}, nil
	}
	if err := os.MkdirAll(sidecar, 0o750); err != nil {
		return nil, posix.PosixOpts{}, fmt.Errorf("embedded object store: metadata directory: %w", err)
	}
	sc, err := meta.NewSideCar(sidecar)
	if err != nil {
		return nil, posix.PosixOpts{}, fmt.Errorf("embedded object store: metadata directory %s: %w", sidecar, err)
	}
	return sc, posix.PosixOpts{SideCarDir: sidecar}, nil
}

// freeAddr asks the kernel for a free port on host. The gateway does not
// hand back its listener, so the port is probed and released first.
func freeAddr(host string) (string, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return "", err
	}
	addr := ln.Addr().String()
	return addr, ln.Close()
}

func startGateway(ctx context.Context, cfg EmbeddedConfig, addr string, ms meta.MetadataStorer, opts posix.PosixOpts) (*Embedded, error) {
	be, err := posix.New(cfg.Dir, ms, opts)
	if err != nil {
		return nil, fmt.Errorf("embedded object store: %w", err)
	}
	runCtx, stop := context.WithCancel(context.Background())
	e := &Embedded{endpoint: dialable(addr), stop: stop, done: make(chan struct{})}
	listening := make(chan struct{})
	var once sync.Once
	go func() {
		defer close(e.done)
		e.err = embedgw.RunVersityGW(runCtx, wholeBodies{be}, &embedgw.Config{
			RootUserAccess: cfg.AccessKey,
			RootUserSecret: cfg.SecretKey,
			Region:         DefaultRegion,
			Ports:          []string{addr},
			// Both are required; bdp's own requests are few (one per
			// upload, download links go to the store directly).
			MaxConnections:    250,
			MaxRequests:       100,
			MultipartMaxParts: maxParts,
			Quiet:             true,
			KeepAlive:         true,
			HealthPath:        "/healthz",
			S3Options:         []s3api.Option{s3api.WithOnListen(func() { once.Do(func() { close(listening) }) })},
		})
		// The gateway closes the backend only once it served; a second
		// close of its directory handle is harmless.
		be.Shutdown()
	}()
	timeout := time.NewTimer(startTimeout)
	defer timeout.Stop()
	select {
	case <-listening:
		return e, nil
	case <-e.done:
		stop()
		return nil, fmt.Errorf("embedded object store on %s: %w", addr, errOrStopped(e.err))
	case <-ctx.Done():
		stop()
		<-e.done
		return nil, fmt.Errorf("embedded object store on %s: %w", addr, ctx.Err())
	case <-timeout.C:
		stop()
		<-e.done
		return nil, fmt.Errorf("embedded object store on %s: not listening after %s", addr, startTimeout)
	}
}

func errOrStopped(err error) error {
	if err == nil {
		return errors.New("stopped before listening")
	}
	return err
}

// dialable turns a listen address into one a client can connect to: an
// unspecified host (all interfaces) is reached on the loopback.
func dialable(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		if ip != nil && ip.To4() == nil {
			host = "::1"
		} else {
			host = "127.0.0.1"
		}
	}
	return net.JoinHostPort(host, port)
}

// Endpoint is the host:port the store listens on, with the port it
// actually bound.
func (e *Embedded) Endpoint() string { return e.endpoint }

// Close stops the store and waits for it; requests in flight get a short
// grace period (the gateway's own).
func (e *Embedded) Close() error {
	e.close.Do(func() {
		e.stop()
		<-e.done
		running.Store(false)
	})
	return e.err
}
