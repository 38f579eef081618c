package localcluster

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// Node is a bdp serve process of a local cluster.
type Node struct {
	Name    string
	HTTP    string // http://host:port
	DataDir string
	LogFile string // its standard output and error

	cmd    *exec.Cmd
	exited chan struct{}
	err    error // how it exited, once exited is closed
}

// nodeStartTimeout bounds a node's start (migrations, joining the
// cluster, connecting to the services).
const nodeStartTimeout = 90 * time.Second

// StartNode runs bin (bdp) serve as node name of the cluster, with its
// data directory dir and extra environment (BDP_OPERATOR_TOKEN, say), and
// returns once it serves HTTP.
func StartNode(ctx context.Context, bin string, s *Services, name, dir string, extra ...string) (*Node, error) {
	return startNode(ctx, s, bin, s.Env(), name, dir, extra...)
}

// StartSingle runs bin serve as one node, not a member of the cluster, on
// the cluster's database only (its own embedded broker and object store):
// the single mode that cluster mode is measured against.
func StartSingle(ctx context.Context, bin string, s *Services, name, dir string, extra ...string) (*Node, error) {
	return startNode(ctx, s, bin, []string{"BDP_DATABASE_URL=" + s.DatabaseURL, "BDP_MQTT_ADDR=127.0.0.1:0", "BDP_S3_ADDR=127.0.0.1:0"},
		name, dir, extra...)
}

func startNode(ctx context.Context, s *Services, bin string, env []string, name, dir string, extra ...string) (*Node, error) {
	// Relative paths as the caller meant them, before the S3 gateway
	// changed the working directory.
	if !filepath.IsAbs(bin) {
		bin = filepath.Join(s.workDir, bin)
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(s.workDir, dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	addrs := filepath.Join(dir, "addresses.json")
	_ = os.Remove(addrs) // a previous run's
	logPath := filepath.Join(dir, "bdp.log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "serve")
	cmd.Env = append(append(os.Environ(), env...), append([]string{"BDP_NODE_ID=" + name,
		"BDP_HTTP_ADDR=127.0.0.1:0", "BDP_CLUSTER_ADDR=127.0.0.1:0", "BDP_DATA_DIR=" + dir}, extra...)...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start node %s: %w", name, err)
	}
	n := &Node{Name: name, DataDir: dir, LogFile: logPath, cmd: cmd, exited: make(chan struct{})}
	go func() { n.err = cmd.Wait(); logFile.Close(); close(n.exited) }()
	deadline := time.NewTimer(nodeStartTimeout)
	defer deadline.Stop()
	for {
		if b, err := os.ReadFile(addrs); err == nil {
			var a map[string]string
			if json.Unmarshal(b, &a) == nil && a["http"] != "" {
				n.HTTP = "http://" + a["http"]
				return n, nil
			}
		}
		select {
		case <-n.exited:
			return nil, fmt.Errorf("node %s exited at start (%v); its log: %s", name, n.err, logPath)
		case <-deadline.C:
			n.Kill()
			return nil, fmt.Errorf("node %s did not serve within %s; its log: %s", name, nodeStartTimeout, logPath)
		case <-ctx.Done():
			n.Kill()
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Running tells whether the process still runs.
func (n *Node) Running() bool {
	select {
	case <-n.exited:
		return false
	default:
		return true
	}
}

// Kill ends the node with SIGKILL (kill -9) and waits for it.
func (n *Node) Kill() {
	if n.Running() {
		_ = n.cmd.Process.Signal(syscall.SIGKILL)
	}
	<-n.exited
}

// Stop stops the node gracefully (SIGTERM): it hands what it runs to the
// other members first. After timeout it is killed.
func (n *Node) Stop(timeout time.Duration) error {
	if !n.Running() {
		return errNoNode
	}
	_ = n.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-n.exited:
		return n.err
	case <-time.After(timeout):
		n.Kill()
		return fmt.Errorf("node %s did not stop within %s; killed", n.Name, timeout)
	}
}
