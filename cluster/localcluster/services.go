// Package localcluster runs a bdp cluster on one machine: the services
// every node shares (PostgreSQL, Kafka, Mosquitto with its
// dynamic-security plugin, etcd and an S3 store), and bdp serve nodes
// joined to them. The cluster test, bdp-bench cluster and `make
// cluster-up` start their clusters with it; it is for loopback only.
package localcluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/openbdp/bdp/cluster/etcdtest"
	"github.com/openbdp/bdp/files"
	"github.com/openbdp/bdp/mqtt/mosquittotest"
	"github.com/openbdp/bdp/store/pgcluster"
)

// Services are the shared services of a local cluster.
type Services struct {
	DatabaseURL  string
	KafkaBrokers string // comma-separated
	MQTT         *mosquittotest.Broker
	Etcd         string // host:port
	S3Endpoint   string // http://host:port
	S3AccessKey  string
	S3SecretKey  string

	stops   []func() // in the order started
	workDir string   // the process's working directory before the S3 gateway changed it
}

// Config says where the services keep their data and what exists already.
type Config struct {
	// Dir holds every service's data, made mode 0755 (PostgreSQL runs as
	// the user postgres under root); its parents must let that user pass.
	Dir string
	// KafkaBrokers, when set, is a running broker to use; empty: one is
	// started with KafkaScript (scripts/kafka.sh of the repository).
	KafkaBrokers string
	KafkaScript  string
	// S3, when its Endpoint is set, is a running S3 store to use; empty:
	// the gateway bdp embeds runs in this process. It changes the
	// process's working directory, so a test, whose temporary directories
	// go away, passes a store of its own (filestest.Start).
	S3  files.ObjectsConfig
	Log *slog.Logger
}

// StartServices starts every service the nodes share. On an error, what
// started is stopped.
func StartServices(ctx context.Context, cfg Config) (_ *Services, err error) {
	// Paths are taken absolute now: the S3 gateway changes the process's
	// working directory, and the Kafka script and the nodes' binary are
	// used after it started (StartNode resolves against workDir).
	workDir, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	if cfg.Dir, err = filepath.Abs(cfg.Dir); err != nil {
		return nil, err
	}
	if cfg.KafkaScript != "" {
		if cfg.KafkaScript, err = filepath.Abs(cfg.KafkaScript); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, err
	}
	if err := os.Chmod(cfg.Dir, 0o755); err != nil {
		return nil, err
	}
	s := &Services{workDir: workDir}
	defer func() {
		if err != nil {
			s.Stop()
		}
	}()
	dir := func(name string) (string, error) {
		d := filepath.Join(cfg.Dir, name)
		return d, os.MkdirAll(d, 0o755)
	}
	pgDir, err := dir("postgres")
	if err != nil {
		return nil, err
	}
	pg, err := pgcluster.Start(ctx, pgcluster.Options{Dir: pgDir, Logger: cfg.Log})
	if err != nil {
		return nil, fmt.Errorf("postgresql: %w", err)
	}
	s.stops = append(s.stops, func() { _ = pg.Stop(context.Background()) })
	s.DatabaseURL = pg.URL()

	s.KafkaBrokers = cfg.KafkaBrokers
	if s.KafkaBrokers == "" {
		kdir, err := dir("kafka")
		if err != nil {
			return nil, err
		}
		if out, err := exec.CommandContext(ctx, "bash", cfg.KafkaScript, "start", kdir).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("kafka (%s start): %w: %s", cfg.KafkaScript, err, out)
		}
		s.stops = append(s.stops, func() { _ = exec.Command("bash", cfg.KafkaScript, "stop", kdir).Run() })
		b, err := os.ReadFile(filepath.Join(kdir, "bootstrap"))
		if err != nil {
			return nil, fmt.Errorf("kafka: %w", err)
		}
		s.KafkaBrokers = strings.TrimSpace(string(b))
	}

	mqDir, err := dir("mosquitto")
	if err != nil {
		return nil, err
	}
	if s.MQTT, err = mosquittotest.Run(mqDir); err != nil {
		return nil, fmt.Errorf("mosquitto: %w", err)
	}
	s.stops = append(s.stops, s.MQTT.Close)

	etcdDir, err := dir("etcd")
	if err != nil {
		return nil, err
	}
	etcd, err := etcdtest.Run(ctx, etcdDir)
	if err != nil {
		return nil, fmt.Errorf("etcd: %w", err)
	}
	s.stops = append(s.stops, etcd.Stop)
	s.Etcd = etcd.Endpoint

	if cfg.S3.Endpoint != "" {
		s.S3Endpoint, s.S3AccessKey, s.S3SecretKey = withScheme(cfg.S3.Endpoint), cfg.S3.AccessKey, cfg.S3.SecretKey
		return s, nil
	}
	// The S3 store: the gateway bdp embeds on one node, here on its own,
	// which every node reaches as an external store.
	s3Dir, err := dir("s3")
	if err != nil {
		return nil, err
	}
	s.S3AccessKey, s.S3SecretKey = "bdp-local-cluster", "bdp-local-cluster-secret"
	store, err := files.StartEmbedded(ctx, files.EmbeddedConfig{Addr: "127.0.0.1:0", Dir: s3Dir, AccessKey: s.S3AccessKey, SecretKey: s.S3SecretKey})
	if err != nil {
		return nil, fmt.Errorf("s3 store: %w", err)
	}
	s.stops = append(s.stops, func() { _ = store.Close() })
	s.S3Endpoint = withScheme(store.Endpoint())
	return s, nil
}

// withScheme is an S3 endpoint as BDP_S3_ENDPOINT takes it: host:port
// gets http://.
func withScheme(endpoint string) string {
	if strings.Contains(endpoint, "://") {
		return endpoint
	}
	return "http://" + endpoint
}

// Env is the environment that makes bdp serve a node of this cluster.
func (s *Services) Env() []string {
	return []string{
		"BDP_DATABASE_URL=" + s.DatabaseURL,
		"BDP_KAFKA_BROKERS=" + s.KafkaBrokers,
		"BDP_MQTT_EXTERNAL=" + s.MQTT.URL, "BDP_MQTT_ADMIN_USER=" + s.MQTT.AdminUser, "BDP_MQTT_ADMIN_PASSWORD=" + s.MQTT.AdminPassword,
		"BDP_CLUSTER_ETCD=" + s.Etcd,
		"BDP_S3_ENDPOINT=" + s.S3Endpoint, "BDP_S3_ACCESS_KEY=" + s.S3AccessKey, "BDP_S3_SECRET_KEY=" + s.S3SecretKey,
	}
}

// Stop stops the services, the last started first.
func (s *Services) Stop() {
	for i := len(s.stops) - 1; i >= 0; i-- {
		s.stops[i]()
	}
	s.stops = nil
}

// errNoNode is returned for a node that is not running.
var errNoNode = errors.New("localcluster: the node is not running")
