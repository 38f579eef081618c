// Package etcdtest runs a real etcd server (Debian's etcd-server) for the
// tests of cluster mode: one member on loopback ports, its data in a
// temporary directory.
package etcdtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// Binary is where Debian installs etcd; BDP_TEST_ETCD overrides it.
const Binary = "/usr/bin/etcd"

// Server is a running etcd.
type Server struct {
	Endpoint string // host:port of its client API
	cmd      *exec.Cmd
	exited   chan struct{}
}

// Start runs etcd for a test, its data in the test's temporary directory,
// and stops it when the test ends.
func Start(tb testing.TB) *Server {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := Run(ctx, tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.Stop)
	return s
}

// Run is Start outside a test (the local cluster of bdp-bench cluster):
// etcd with its data under dir, stopped by Stop.
func Run(ctx context.Context, dir string) (*Server, error) {
	bin := os.Getenv("BDP_TEST_ETCD")
	if bin == "" {
		bin = Binary
	}
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("etcd not found at %s (apt-get install etcd-server, or set BDP_TEST_ETCD): %w", bin, err)
	}
	client, peer := freePort(), freePort()
	if client == 0 || peer == 0 {
		return nil, errors.New("etcdtest: no free port")
	}
	clientURL := "http://127.0.0.1:" + strconv.Itoa(client)
	peerURL := "http://127.0.0.1:" + strconv.Itoa(peer)
	log, err := os.Create(filepath.Join(dir, "etcd.log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "--name", "bdp-test", "--data-dir", filepath.Join(dir, "etcd"),
		"--listen-client-urls", clientURL, "--advertise-client-urls", clientURL,
		"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
		"--initial-cluster", "bdp-test="+peerURL, "--log-level", "warn")
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("start etcd: %w", err)
	}
	s := &Server{Endpoint: "127.0.0.1:" + strconv.Itoa(client), cmd: cmd, exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); log.Close(); close(s.exited) }()
	if err := s.waitReady(ctx); err != nil {
		s.Stop()
		return nil, fmt.Errorf("etcd did not come up (log: %s): %w", log.Name(), err)
	}
	return s, nil
}

func (s *Server) waitReady(ctx context.Context) error {
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{s.Endpoint}, DialTimeout: time.Second, Logger: zap.NewNop()})
	if err != nil {
		return err
	}
	defer c.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		rctx, cancel := context.WithTimeout(ctx, time.Second)
		_, err := c.Get(rctx, "health")
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-s.exited:
			return errors.New("etcd exited")
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return err
		}
	}
}

// Stop ends the server and waits for it.
func (s *Server) Stop() {
	_ = s.cmd.Process.Kill()
	<-s.exited
}

func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
