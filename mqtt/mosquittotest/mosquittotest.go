// Package mosquittotest gives tests a real Mosquitto 2 broker with the
// dynamic-security plugin: Debian's /usr/sbin/mosquitto, started on a free
// 127.0.0.1 port with a configuration of its own in a temporary directory
// and stopped when the test ends. Without mosquitto the test fails (it
// never skips); `make deps-test` installs it.
package mosquittotest

import (
	"bytes"
	"context"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Paths of Debian's mosquitto and of the plugin it ships.
const (
	Binary       = "/usr/sbin/mosquitto"
	pluginGlob   = "/usr/lib/*/mosquitto_dynamic_security.so"
	AdminUser    = "bdp-admin"
	startTimeout = 10 * time.Second
)

// Broker is a running mosquitto.
type Broker struct {
	URL           string // tcp://127.0.0.1:port
	Addr          string // 127.0.0.1:port
	AdminUser     string
	AdminPassword string
	Dir           string // configuration, dynsec JSON, persistence and log

	cmd  *exec.Cmd
	done chan struct{}
	log  *lockedBuffer
}

// Start runs a mosquitto for the test. Its one admin client (AdminUser)
// may use the dynamic-security control topic and every topic, as the
// platform's connection needs; everything else is denied until the test
// (or bdp) creates clients and roles. QoS 1 limits are raised far above
// Mosquitto's defaults (20 in flight, 1000 queued per client), which drop
// QoS 1 messages to a busy subscriber.
func Start(t testing.TB) *Broker {
	t.Helper()
	Plugin(t) // fails the test saying what to install
	b, err := Run(t.TempDir())
	if err != nil {
		t.Fatalf("mosquittotest: %v", err)
	}
	t.Cleanup(func() { b.stop(t) })
	return b
}

// Run is Start outside a test (the local cluster of bdp-bench cluster):
// mosquitto with its configuration under dir, stopped by Close.
func Run(dir string) (*Broker, error) {
	found, _ := filepath.Glob(pluginGlob)
	if _, err := os.Stat(Binary); err != nil || len(found) == 0 {
		return nil, fmt.Errorf("mosquitto 2 with its dynamic-security plugin is needed (%s, %s); `make deps-test` installs it", Binary, pluginGlob)
	}
	password := randomHex(16)
	if err := os.WriteFile(filepath.Join(dir, "dynsec.json"), dynsecConfig(AdminUser, password), 0o600); err != nil {
		return nil, err
	}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ { // a free port may be taken before mosquitto binds it
		b, err := start(dir, found[0], password)
		if err == nil {
			return b, nil
		}
		lastErr = err
	}
	return nil, lastErr
}

// Close stops a broker of Run.
func (b *Broker) Close() { b.interrupt() }

// Plugin returns the path of the dynamic-security plugin, failing the test
// with what to do when mosquitto is not installed.
func Plugin(t testing.TB) string {
	t.Helper()
	if _, err := os.Stat(Binary); err != nil {
		t.Fatalf("mosquittotest: %s is missing: this test needs Debian's mosquitto 2; `make deps-test` installs it (%v)", Binary, err)
	}
	found, _ := filepath.Glob(pluginGlob)
	if len(found) == 0 {
		t.Fatalf("mosquittotest: no %s: this test needs mosquitto 2 with its dynamic-security plugin; `make deps-test` installs it", pluginGlob)
	}
	return found[0]
}

func start(dir, plugin, password string) (*Broker, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	conf := filepath.Join(dir, "mosquitto.conf")
	if err := os.WriteFile(conf, config(dir, plugin, port), 0o600); err != nil {
		return nil, err
	}
	log := &lockedBuffer{}
	cmd := exec.Command(Binary, "-c", conf)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", Binary, err)
	}
	b := &Broker{URL: "tcp://" + addr, Addr: addr, AdminUser: AdminUser, AdminPassword: password,
		Dir: dir, cmd: cmd, done: make(chan struct{}), log: log}
	go func() { _ = cmd.Wait(); close(b.done) }()
	deadline := time.Now().Add(startTimeout)
	for time.Now().Before(deadline) {
		select {
		case <-b.done:
			return nil, fmt.Errorf("mosquitto exited at start: %s", log.String())
		default:
		}
		if c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond); err == nil {
			_ = c.Close()
			return b, nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = cmd.Process.Kill()
	<-b.done
	return nil, fmt.Errorf("mosquitto did not listen on %s within %s: %s", addr, startTimeout, log.String())
}

// Log returns what mosquitto wrote so far, for a failing test's message.
func (b *Broker) Log() string { return b.log.String() }

// Stop stops mosquitto (SIGINT: it saves its persistence file, sessions
// and queued QoS 1 messages included); Resume starts it again.
func (b *Broker) Stop(t testing.TB) {
	t.Helper()
	b.terminate(t)
}

// Resume starts a stopped mosquitto on the same port with the state it
// saved.
func (b *Broker) Resume(t testing.TB) {
	t.Helper()
	log := b.log
	cmd := exec.Command(Binary, "-c", filepath.Join(b.Dir, "mosquitto.conf"))
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatalf("mosquittotest: start again: %v", err)
	}
	b.cmd, b.done = cmd, make(chan struct{})
	done := b.done
	go func() { _ = cmd.Wait(); close(done) }()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	for ctx.Err() == nil {
		if c, err := net.DialTimeout("tcp", b.Addr, 200*time.Millisecond); err == nil {
			_ = c.Close()
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("mosquittotest: mosquitto did not listen again on %s: %s", b.Addr, log.String())
}

func (b *Broker) terminate(t testing.TB) {
	if !b.interrupt() {
		t.Errorf("mosquittotest: mosquitto did not stop within 5 s of SIGINT; killed")
	}
}

func (b *Broker) stop(t testing.TB) {
	b.terminate(t)
	if t.Failed() {
		t.Logf("mosquitto log:\n%s", b.log.String())
	}
}

// config is mosquitto.conf: one listener, no anonymous clients, the
// dynamic-security plugin, persistence (so a restart keeps sessions and
// queued QoS 1 messages) and raised QoS 1 limits.
func config(dir, plugin string, port int) []byte {
	var c strings.Builder
	fmt.Fprintf(&c, "per_listener_settings false\nallow_anonymous false\n")
	fmt.Fprintf(&c, "listener %d 127.0.0.1\n", port)
	fmt.Fprintf(&c, "plugin %s\nplugin_opt_config_file %s\n", plugin, filepath.Join(dir, "dynsec.json"))
	fmt.Fprintf(&c, "persistence true\npersistence_location %s/\n", dir)
	fmt.Fprintf(&c, "max_inflight_messages 1000\nmax_queued_messages 1000000\nmax_queued_bytes 0\n")
	fmt.Fprintf(&c, "log_dest stderr\nlog_type error\nlog_type warning\nlog_type notice\nlog_type information\n")
	if u, err := user.Current(); err == nil && u.Uid == "0" {
		// As root mosquitto would switch to the user "mosquitto", which
		// cannot read the test's temporary directory.
		fmt.Fprintf(&c, "user root\n")
	}
	return []byte(c.String())
}

// dynsecConfig is the plugin's initial JSON: the admin client with every
// right, and default access denying everything (publishClientReceive too,
// so a client receives only what a role allows it).
func dynsecConfig(admin, password string) []byte {
	salt := make([]byte, 12)
	_, _ = rand.Read(salt)
	hash, _ := pbkdf2.Key(sha512.New, password, salt, 101, 64) // the plugin's own scheme
	acl := func(typ, topic string) map[string]any {
		return map[string]any{"acltype": typ, "topic": topic, "allow": true}
	}
	var acls []map[string]any
	for _, topic := range []string{"$CONTROL/dynamic-security/#", "$SYS/#", "#"} {
		acls = append(acls, acl("publishClientSend", topic), acl("publishClientReceive", topic),
			acl("subscribePattern", topic), acl("unsubscribePattern", topic))
	}
	doc := map[string]any{
		"clients": []any{map[string]any{
			"username": admin, "textName": "bdp platform connection",
			"password": base64.StdEncoding.EncodeToString(hash), "salt": base64.StdEncoding.EncodeToString(salt),
			"iterations": 101, "roles": []any{map[string]any{"rolename": "bdp-admin"}},
		}},
		"roles":  []any{map[string]any{"rolename": "bdp-admin", "acls": acls}},
		"groups": []any{},
		"defaultACLAccess": map[string]bool{
			"publishClientSend": false, "publishClientReceive": false, "subscribe": false, "unsubscribe": true,
		},
	}
	out, _ := json.MarshalIndent(doc, "", "\t")
	return out
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// lockedBuffer collects mosquitto's log, keeping the last 64 KiB.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.buf.Len() > 64<<10 {
		rest := l.buf.Bytes()[l.buf.Len()-32<<10:]
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			rest = rest[i+1:]
		}
		l.buf = *bytes.NewBuffer(append([]byte(nil), rest...))
	}
	return l.buf.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// interrupt stops mosquitto with SIGINT, or kills it after 5 s (false).
func (b *Broker) interrupt() bool {
	select {
	case <-b.done:
		return true
	default:
	}
	_ = b.cmd.Process.Signal(os.Interrupt)
	select {
	case <-b.done:
		return true
	case <-time.After(5 * time.Second):
		_ = b.cmd.Process.Kill()
		<-b.done
		return false
	}
}
