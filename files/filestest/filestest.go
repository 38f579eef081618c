// Package filestest gives tests of any package a real S3 object store: the
// embedded store of package files, running in a child process.
//
// A test calls Start (a configuration to pass to files.OpenObjects or to
// bdp's BDP_S3_* variables) or Open (an opened *files.Objects):
//
//	func TestUpload(t *testing.T) {
//		objects := filestest.Open(t)
//		...
//	}
//
// Each call starts a store of its own, with its own directory, keys and
// bucket, stopped when the test ends; tests may run in parallel. Nothing
// else is needed: no TestMain, no flags.
//
// Why a child process: only one embedded store can run per process, and
// starting one changes the process's working directory (see
// files.Embedded), which would break a test reading testdata/ by a
// relative path. So Start runs the test binary itself again with an
// environment variable that this package's init checks: in that child the
// store runs, its address goes to the parent on stdout, and it stops when
// the parent closes its stdin (or dies).
package filestest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openbdp/bdp/files"
)

// Environment of the child process.
const (
	envDir    = "BDP_FILESTEST_STORE_DIR"
	envAccess = "BDP_FILESTEST_ACCESS_KEY"
	envSecret = "BDP_FILESTEST_SECRET_KEY"
)

// readyPrefix starts the line the child writes once it listens.
const readyPrefix = "filestest store listening on "

// startTimeout bounds the wait for the child's store.
const startTimeout = 60 * time.Second

// Bucket is the bucket every store of Start has (its own, per test).
const Bucket = "bdp-test-files"

func init() {
	// In the child: serve and exit, before any test of the binary runs.
	if dir := os.Getenv(envDir); dir != "" {
		os.Exit(serveChild(dir, os.Getenv(envAccess), os.Getenv(envSecret)))
	}
}

// serveChild runs the store until stdin closes and returns the exit code.
func serveChild(dir, access, secret string) int {
	e, err := files.StartEmbedded(context.Background(), files.EmbeddedConfig{
		Addr: "127.0.0.1:0", Dir: dir, AccessKey: access, SecretKey: secret})
	if err != nil {
		fmt.Fprintln(os.Stderr, "filestest:", err)
		return 1
	}
	fmt.Println(readyPrefix + e.Endpoint())
	// EOF when the parent closes the pipe, also when it is killed. The
	// store is thrown away with its directory: the child exits without
	// the gateway's graceful stop, which waits up to 10 s for connections
	// the test's clients still keep open.
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 0
}

// Start runs a fresh store for t and returns how to reach it: Endpoint
// "127.0.0.1:port", random root keys, Bucket (created by the first
// files.OpenObjects) and files.DefaultRegion. The store stops when t ends.
func Start(t testing.TB) files.ObjectsConfig {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatalf("filestest: %v", err)
	}
	access, secret := randomKey(t, 10), randomKey(t, 20)
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), envDir+"="+t.TempDir(), envAccess+"="+access, envSecret+"="+secret)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatalf("filestest: %v", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatalf("filestest: %v", err)
	}
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("filestest: start store process: %v", err)
	}
	exited := make(chan struct{})
	t.Cleanup(func() {
		stdin.Close()
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
			t.Errorf("filestest: store process did not stop within 30s; stderr: %s", stderr)
		}
	})

	endpoint := make(chan string, 1)
	go func() {
		// The child prints the ready line and then nothing we need; the
		// rest of stdout (the gateway's own notes) is drained so it never
		// blocks on a full pipe.
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if addr, ok := strings.CutPrefix(sc.Text(), readyPrefix); ok {
				endpoint <- addr
			}
		}
		_ = cmd.Wait()
		close(exited)
	}()
	select {
	case addr := <-endpoint:
		return files.ObjectsConfig{Endpoint: addr, AccessKey: access, SecretKey: secret,
			Bucket: Bucket, Region: files.DefaultRegion}
	case <-exited:
		t.Fatalf("filestest: store process exited before listening: %s", stderr)
	case <-time.After(startTimeout):
		t.Fatalf("filestest: store not listening after %s; stderr: %s", startTimeout, stderr)
	}
	return files.ObjectsConfig{}
}

// Open is Start followed by files.OpenObjects; the store is closed when t
// ends.
func Open(t testing.TB) *files.Objects {
	t.Helper()
	o, err := files.OpenObjects(context.Background(), Start(t))
	if err != nil {
		t.Fatalf("filestest: %v", err)
	}
	t.Cleanup(o.Close)
	return o
}

func randomKey(t testing.TB, n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// lockedBuffer is the child's stderr, written by exec's copier while a
// failing test may read it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
