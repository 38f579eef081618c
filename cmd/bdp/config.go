package main

import (
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/openbdp/bdp/actors"
	"github.com/openbdp/bdp/analytics/runner"
	"github.com/openbdp/bdp/cluster"
	"github.com/openbdp/bdp/store/sealer"
)

// config is the whole platform configuration, read from BDP_* environment
// variables (decisions.md 1). Every bad value is reported at once, by
// name, before anything starts.
type config struct {
	HTTPAddr        string
	MQTTAddr        string
	MQTTWSAddr      string // empty: no WebSocket listener
	MQTTClientQueue int    // messages waiting to be written to one MQTT client
	S3Addr          string
	DataDir         string // absolute: the embedded object store changes the working directory
	DatabaseURL     string
	OperatorToken   string
	TokenSecret     []byte
	TokenTTL        time.Duration
	BodyLimit       int
	ImportLimit     int
	CredentialTTL   time.Duration
	ShutdownTimeout time.Duration
	LogLevel        slog.Level
	KafkaBrokers    []string // empty: no Kafka code runs
	KafkaTopic      string
	KafkaGroup      string
	// The window budget of virtual datapoints (actors.Budget).
	WindowBudgetDatapoint int64
	WindowBudgetNode      int64
	WindowSourceInterval  time.Duration
	// ResumeConcurrency is how many virtual datapoints resume at once
	// after a restart (actors.Resume).
	ResumeConcurrency int
	// TickRate bounds the ticks a second of one timed-trigger boundary
	// (actors.EngineConfig.TickRate).
	TickRate int
	// Failed password logins tolerated within LoginFailureWindow, per
	// account and per client address, before 429.
	LoginAccountFailures int
	LoginAddressFailures int
	LoginFailureWindow   time.Duration
	// MQTTExternal is an external broker's URL (tcp://host:port): no
	// embedded broker runs. Empty: the embedded broker.
	MQTTExternal      string
	MQTTAdminUser     string // the external broker's dynamic-security admin client
	MQTTAdminPassword string
	// MQTTTLSAddr and MQTTWSSAddr are the embedded broker's TLS listeners
	// (empty: off), serving MQTTTLS, the certificate of BDP_TLS_CERT and
	// BDP_TLS_KEY loaded and checked at start (loadTLSConfig).
	MQTTTLSAddr, MQTTWSSAddr string
	MQTTTLS                  *tls.Config
	// AnalysisWorkers is how many analysis runs this node computes at
	// once; 0: runner.DefaultWorkers.
	AnalysisWorkers int
	// EdgeSimulator runs a simulated edge device per project with setpoint
	// writing enabled (BDP_EDGE_SIMULATOR=1, cmd/bdp/edge_sim_serve.go).
	EdgeSimulator bool

	// Seal is the sealing of closed weeks (store/sealer); nil: off.
	Seal *sealer.Config

	// S3Endpoint is an external S3 store (host:port or http(s)://host:port):
	// no embedded store runs. Empty: the embedded store on S3Addr.
	S3Endpoint string
	// S3AccessKey and S3SecretKey sign requests to the store; for the
	// embedded store they are its root keys, and empty means the ones
	// generated and kept in BDP_DATA_DIR/s3-credentials.json.
	S3AccessKey, S3SecretKey string
	S3Bucket                 string
	S3Region                 string // empty: files.DefaultRegion
	S3PublicURL              string // where download links point; empty: the store's address

	// NodeID names this node (BDP_NODE_ID; the host name by default).
	NodeID string
	// Cluster is the cluster configuration; nil: one node.
	Cluster    *cluster.Config
	RelayTopic string // the Kafka topic of stored observations (cluster mode)
}

// configVars documents every variable with its default, for --help and
// the README.
// configVar is one variable, its default and what it does.
type configVar struct{ name, def, doc string }

var configVars = append([]configVar{
	{"BDP_HTTP_ADDR", "127.0.0.1:8080", "HTTP listen address; port 0 picks a free port"},
	{"BDP_MQTT_ADDR", "127.0.0.1:1883", "MQTT listen address (embedded broker); port 0 picks a free port"},
	{"BDP_MQTT_WS_ADDR", "auto", "MQTT over WebSocket listen address (embedded broker, for browser pages: the UI's live values); auto: BDP_MQTT_ADDR's host, port 9001 (port 0 when BDP_MQTT_ADDR's is 0); off: none"},
	{"BDP_MQTT_TLS_ADDR", "", "MQTT over TLS listen address (embedded broker; TLS 1.2 or later, for gateways that reach the platform over the internet; 8883 is the usual port); empty: off; needs BDP_TLS_CERT and BDP_TLS_KEY"},
	{"BDP_MQTT_WSS_ADDR", "", "MQTT over WebSocket over TLS listen address (embedded broker, wss:// for pages served over https); empty: off; needs BDP_TLS_CERT and BDP_TLS_KEY"},
	{"BDP_TLS_CERT", "", "PEM file of the TLS listeners' certificate (leaf first, then the chain); read at start, refused when unreadable, expired or not matching BDP_TLS_KEY; a replaced file is served within 10 s"},
	{"BDP_TLS_KEY", "", "PEM file of the certificate's private key"},
	{"BDP_MQTT_CLIENT_QUEUE", "1024", "messages waiting to be written to one MQTT client before further ones to it are dropped (64 to 1048576; 8 bytes of heap each, per connection)"},
	{"BDP_MQTT_EXTERNAL", "", "external MQTT broker (Mosquitto 2 with its dynamic-security plugin) as tcp://host:port; set, no embedded broker runs and BDP_MQTT_ADDR, BDP_MQTT_WS_ADDR are unused"},
	{"BDP_MQTT_ADMIN_USER", "", "the external broker's dynamic-security admin client, which bdp connects as; required with BDP_MQTT_EXTERNAL; no MQTT user may take the name"},
	{"BDP_MQTT_ADMIN_PASSWORD", "", "its password; required with BDP_MQTT_EXTERNAL"},
	{"BDP_S3_ADDR", "127.0.0.1:9000", "embedded object store (file contents, kept under BDP_DATA_DIR/objects) listen address; port 0 picks a free port"},
	{"BDP_S3_ENDPOINT", "", "external S3-compatible object store, host:port or http(s)://host:port; set, no embedded store runs and BDP_S3_ADDR is unused"},
	{"BDP_S3_ACCESS_KEY", "", "object store access key; required with BDP_S3_ENDPOINT; for the embedded store its root key, empty: generated once and kept in BDP_DATA_DIR/s3-credentials.json"},
	{"BDP_S3_SECRET_KEY", "", "its secret key; set together with BDP_S3_ACCESS_KEY"},
	{"BDP_S3_BUCKET", "bdp-files", "bucket holding the files; created if missing"},
	{"BDP_S3_REGION", "", "signing region of the external store; empty: us-east-1; only with BDP_S3_ENDPOINT"},
	{"BDP_S3_PUBLIC_URL", "", "http(s)://host:port download links point to (the store's public name, or a proxy that passes the Host header on); empty: the store's address"},
	{"BDP_DATA_DIR", "./data", "state directory: managed PostgreSQL, embedded object store, addresses.json; made absolute at start"},
	{"BDP_DATABASE_URL", "", "PostgreSQL URL; empty runs a managed cluster under BDP_DATA_DIR/postgres"},
	{"BDP_OPERATOR_TOKEN", "", "enables the operator API; at least 16 characters"},
	{"BDP_TOKEN_SECRET", "", "bearer token signing key, at least 32 bytes; empty: generated once, kept in the database"},
	{"BDP_TOKEN_TTL", "1h", "lifetime of bearer tokens"},
	{"BDP_BODY_LIMIT", "32MiB", "largest accepted request body (bytes, or with KiB/MiB/GiB/TiB)"},
	{"BDP_IMPORT_LIMIT", "2GiB", "largest CSV import upload (streamed, never held in memory; bytes, or with KiB/MiB/GiB/TiB)"},
	{"BDP_CREDENTIAL_CACHE_TTL", "60s", "how long verified Basic credentials are remembered; 0 disables"},
	{"BDP_SHUTDOWN_TIMEOUT", "15s", "how long shutdown waits for requests in flight, and then again for the parts to stop, the last started first; a part not stopped by then is left behind and logged"},
	{"BDP_LOG_LEVEL", "info", "debug, info, warn or error (info logs every request)"},
	{"BDP_KAFKA_BROKERS", "", "comma-separated Kafka bootstrap addresses; empty: no Kafka ingestion"},
	{"BDP_KAFKA_TOPIC", "bdp.observations", "topic the field gateways produce observations to; its DLQ is <topic>.dlq"},
	{"BDP_KAFKA_GROUP", "bdp", "Kafka consumer group of the platform's nodes"},
	{"BDP_WINDOW_BUDGET_DATAPOINT", "24MiB", "most memory one virtual datapoint's windows may hold by the estimate; a larger configuration is refused (400)"},
	{"BDP_WINDOW_BUDGET_NODE", "1GiB", "most memory the windows of all running virtual datapoints may hold together by the estimate; a start over it is refused (503)"},
	{"BDP_WINDOW_SOURCE_INTERVAL", "1s", "shortest interval assumed between two observations of a source, which bounds the estimate of time and cron windows (1ms to 1h)"},
	{"BDP_RESUME_CONCURRENCY", strconv.Itoa(actors.DefaultResumeConcurrency), "virtual datapoints resumed at once after a restart, in the background (1 to " + strconv.Itoa(actors.MaxResumeConcurrency) + "); their history reads are batched"},
	{"BDP_TICK_RATE", strconv.Itoa(actors.DefaultTickRate), "timed-trigger ticks a second at most when many virtual datapoints share a boundary (1000 to 10000000): 100,000 every_minute datapoints fire over 3.3 s by default, so that their outputs do not stall ingestion"},
	{"BDP_LOGIN_ACCOUNT_FAILURES", "10", "failed password logins of one account within BDP_LOGIN_FAILURE_WINDOW before 429"},
	{"BDP_LOGIN_ADDRESS_FAILURES", "100", "failed password logins from one client address (IPv6: its /64) within the window before 429"},
	{"BDP_LOGIN_FAILURE_WINDOW", "1m", "how long a failed login counts against its account and address"},
	{"BDP_ANALYSIS_WORKERS", "", "analysis runs computed at once on this node (1 to 64); more wait in the database; empty: half the CPUs, at least 1, so analyses do not starve ingestion"},
	{"BDP_EDGE_SIMULATOR", "0", "1: run a simulated edge device (bdp edge-sim) for every project with setpoint writing enabled, with fresh edge credentials; projects are picked up every 5 s; SIGUSR1 crashes them (simulated power loss)"},
}, append(sealVars, clusterVars...)...)

// loadConfig reads the environment through getenv.
func loadConfig(getenv func(string) string) (config, error) {
	get := func(name string) string {
		if v := strings.TrimSpace(getenv(name)); v != "" {
			return v
		}
		for _, cv := range configVars {
			if cv.name == name {
				return cv.def
			}
		}
		return ""
	}
	var c config
	var errs []error
	bad := func(name string, err error) {
		v := fmt.Sprintf("%q", getenv(name))
		if secretVars[name] {
			v = "(value not shown)" // error output ends up in logs; secrets must not
		}
		errs = append(errs, fmt.Errorf("%s=%s: %w", name, v, err))
	}

	for name, dst := range map[string]*string{"BDP_HTTP_ADDR": &c.HTTPAddr, "BDP_MQTT_ADDR": &c.MQTTAddr, "BDP_S3_ADDR": &c.S3Addr} {
		*dst = get(name)
		if err := checkAddr(*dst); err != nil {
			bad(name, err)
		}
	}
	switch c.MQTTWSAddr = get("BDP_MQTT_WS_ADDR"); c.MQTTWSAddr {
	case "off":
		c.MQTTWSAddr = ""
	case "auto":
		c.MQTTWSAddr = autoWSAddr(c.MQTTAddr)
	default:
		if err := checkAddr(c.MQTTWSAddr); err != nil {
			bad("BDP_MQTT_WS_ADDR", err)
		}
	}
	loadTLSConfig(&c, get, bad)
	c.MQTTExternal, c.MQTTAdminUser, c.MQTTAdminPassword = get("BDP_MQTT_EXTERNAL"), get("BDP_MQTT_ADMIN_USER"), getenv("BDP_MQTT_ADMIN_PASSWORD")
	if c.MQTTExternal != "" {
		c.MQTTWSAddr = "" // unused: no embedded broker
		if err := checkMQTTURL(c.MQTTExternal); err != nil {
			bad("BDP_MQTT_EXTERNAL", err)
		}
		if c.MQTTAdminUser == "" {
			bad("BDP_MQTT_ADMIN_USER", errors.New("is required with BDP_MQTT_EXTERNAL"))
		}
		if c.MQTTAdminPassword == "" {
			bad("BDP_MQTT_ADMIN_PASSWORD", errors.New("is required with BDP_MQTT_EXTERNAL"))
		}
	} else {
		for _, name := range []string{"BDP_MQTT_ADMIN_USER", "BDP_MQTT_ADMIN_PASSWORD"} {
			if getenv(name) != "" {
				bad(name, errors.New("is used only with BDP_MQTT_EXTERNAL, which is not set"))
			}
		}
	}
	// Absolute before anything runs: the embedded object store changes the
	// process's working directory.
	var absErr error
	if c.DataDir, absErr = filepath.Abs(get("BDP_DATA_DIR")); absErr != nil {
		bad("BDP_DATA_DIR", absErr)
	} else if fi, err := os.Stat(c.DataDir); err == nil && !fi.IsDir() {
		bad("BDP_DATA_DIR", errors.New("exists and is not a directory"))
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		bad("BDP_DATA_DIR", err)
	}
	loadS3Config(&c, get, bad)
	c.DatabaseURL = get("BDP_DATABASE_URL")
	if c.DatabaseURL != "" && !strings.HasPrefix(c.DatabaseURL, "postgres://") && !strings.HasPrefix(c.DatabaseURL, "postgresql://") {
		bad("BDP_DATABASE_URL", errors.New("must start with postgres:// or postgresql://"))
	}
	c.OperatorToken = get("BDP_OPERATOR_TOKEN")
	if c.OperatorToken != "" && len(c.OperatorToken) < 16 {
		bad("BDP_OPERATOR_TOKEN", errors.New("must have at least 16 characters"))
	}
	if s := get("BDP_TOKEN_SECRET"); s != "" {
		if len(s) < 32 {
			bad("BDP_TOKEN_SECRET", errors.New("must have at least 32 bytes"))
		}
		c.TokenSecret = []byte(s)
	}
	durations := []struct {
		name string
		dst  *time.Duration
		min  time.Duration
	}{
		{"BDP_TOKEN_TTL", &c.TokenTTL, time.Minute},
		{"BDP_CREDENTIAL_CACHE_TTL", &c.CredentialTTL, 0},
		{"BDP_SHUTDOWN_TIMEOUT", &c.ShutdownTimeout, 0},
		{"BDP_LOGIN_FAILURE_WINDOW", &c.LoginFailureWindow, time.Second},
	}
	for _, d := range durations {
		v, err := time.ParseDuration(get(d.name))
		if err != nil || v < d.min {
			bad(d.name, fmt.Errorf("must be a duration such as 90s or 1h, at least %s", d.min))
		}
		*d.dst = v
	}
	var err error
	if c.BodyLimit, err = parseSizeInt(get("BDP_BODY_LIMIT")); err != nil {
		bad("BDP_BODY_LIMIT", err)
	}
	if c.ImportLimit, err = parseSizeInt(get("BDP_IMPORT_LIMIT")); err != nil {
		bad("BDP_IMPORT_LIMIT", err)
	}
	if c.WindowBudgetDatapoint, err = parseSize(get("BDP_WINDOW_BUDGET_DATAPOINT")); err != nil {
		bad("BDP_WINDOW_BUDGET_DATAPOINT", err)
	}
	if c.WindowBudgetNode, err = parseSize(get("BDP_WINDOW_BUDGET_NODE")); err != nil {
		bad("BDP_WINDOW_BUDGET_NODE", err)
	} else if c.WindowBudgetDatapoint > c.WindowBudgetNode {
		bad("BDP_WINDOW_BUDGET_NODE", errors.New("must be at least BDP_WINDOW_BUDGET_DATAPOINT"))
	}
	if d, err := time.ParseDuration(get("BDP_WINDOW_SOURCE_INTERVAL")); err != nil || d < time.Millisecond || d > time.Hour {
		bad("BDP_WINDOW_SOURCE_INTERVAL", errors.New("must be a duration from 1ms to 1h, such as 1s or 100ms"))
	} else {
		c.WindowSourceInterval = d
	}
	for name, dst := range map[string]*int{"BDP_LOGIN_ACCOUNT_FAILURES": &c.LoginAccountFailures, "BDP_LOGIN_ADDRESS_FAILURES": &c.LoginAddressFailures} {
		n, err := strconv.Atoi(get(name))
		if err != nil || n < 1 || n > 1_000_000 {
			bad(name, errors.New("must be a whole number from 1 to 1000000"))
		}
		*dst = n
	}
	switch lvl := strings.ToLower(get("BDP_LOG_LEVEL")); lvl {
	case "debug", "info", "warn", "error":
		_ = c.LogLevel.UnmarshalText([]byte(lvl))
	default:
		bad("BDP_LOG_LEVEL", errors.New("must be debug, info, warn or error"))
	}
	if c.KafkaBrokers, err = hostPorts(get("BDP_KAFKA_BROKERS")); err != nil {
		bad("BDP_KAFKA_BROKERS", err)
	}
	c.KafkaTopic, c.KafkaGroup = get("BDP_KAFKA_TOPIC"), get("BDP_KAFKA_GROUP")
	// Kafka's own rule for topic names; the DLQ topic adds ".dlq".
	if !kafkaTopicName.MatchString(c.KafkaTopic) {
		bad("BDP_KAFKA_TOPIC", errors.New("must be 1 to 245 of a-z, A-Z, 0-9, '.', '_' and '-'"))
	}
	if n, err := strconv.Atoi(get("BDP_MQTT_CLIENT_QUEUE")); err != nil || n < 64 || n > 1<<20 {
		bad("BDP_MQTT_CLIENT_QUEUE", errors.New("must be a whole number from 64 to 1048576"))
	} else {
		c.MQTTClientQueue = n
	}
	if n, err := strconv.Atoi(get("BDP_RESUME_CONCURRENCY")); err != nil || n < 1 || n > actors.MaxResumeConcurrency {
		bad("BDP_RESUME_CONCURRENCY", fmt.Errorf("must be a whole number from 1 to %d", actors.MaxResumeConcurrency))
	} else {
		c.ResumeConcurrency = n
	}
	if n, err := strconv.Atoi(get("BDP_TICK_RATE")); err != nil || n < 1000 || n > 10_000_000 {
		bad("BDP_TICK_RATE", errors.New("must be a whole number from 1000 to 10000000"))
	} else {
		c.TickRate = n
	}
	if w := get("BDP_ANALYSIS_WORKERS"); w != "" {
		if n, err := strconv.Atoi(w); err != nil || n < 1 || n > runner.MaxWorkers {
			bad("BDP_ANALYSIS_WORKERS", fmt.Errorf("must be a whole number from 1 to %d", runner.MaxWorkers))
		} else {
			c.AnalysisWorkers = n
		}
	}
	switch get("BDP_EDGE_SIMULATOR") {
	case "0":
	case "1":
		c.EdgeSimulator = true
	default:
		bad("BDP_EDGE_SIMULATOR", errors.New("must be 0 or 1"))
	}
	loadSealConfig(&c, get, bad)
	loadClusterConfig(&c, get, bad) // after what cluster mode needs
	return c, errors.Join(errs...)
}

var kafkaTopicName = regexp.MustCompile(`^[a-zA-Z0-9._-]{1,245}$`)

// secretVars are the variables whose values an error must not repeat.
var secretVars = map[string]bool{"BDP_DATABASE_URL": true, "BDP_OPERATOR_TOKEN": true, "BDP_TOKEN_SECRET": true,
	"BDP_MQTT_ADMIN_PASSWORD": true, "BDP_S3_SECRET_KEY": true}

// hostPorts splits a comma-separated list of host:port addresses; empty
// is none.
func hostPorts(list string) ([]string, error) {
	if list == "" {
		return nil, nil
	}
	var out []string
	for _, a := range strings.Split(list, ",") {
		a = strings.TrimSpace(a)
		if _, _, err := net.SplitHostPort(a); err != nil {
			return nil, fmt.Errorf("%q is not host:port", a)
		}
		out = append(out, a)
	}
	return out, nil
}

// checkMQTTURL accepts tcp://host:port (or mqtt://), nothing more.
func checkMQTTURL(s string) error {
	rest, ok := strings.CutPrefix(s, "tcp://")
	if !ok {
		rest, ok = strings.CutPrefix(s, "mqtt://")
	}
	if !ok {
		return errors.New("must be tcp://host:port")
	}
	return checkHostPort(rest, "must be tcp://host:port")
}

// checkHostPort accepts host:port with a host and a port from 1 to 65535;
// malformed answers the error text a caller's form needs.
func checkHostPort(hostPort, malformed string) error {
	host, port, err := net.SplitHostPort(hostPort)
	if err != nil || host == "" {
		return errors.New(malformed)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return errors.New("port must be 1 to 65535")
	}
	return nil
}

// autoWSAddr is the default WebSocket listener of the embedded broker:
// on the TCP listener's host, port 9001 (Mosquitto's usual WebSocket
// port), or a free port when the TCP listener takes one (tests, several
// servers on one machine). The browser UI's live values need it, so it
// is on unless BDP_MQTT_WS_ADDR=off.
func autoWSAddr(mqttAddr string) string {
	host, port, err := net.SplitHostPort(mqttAddr)
	if err != nil {
		return "" // BDP_MQTT_ADDR is reported bad already
	}
	if port == "0" {
		return net.JoinHostPort(host, "0")
	}
	return net.JoinHostPort(host, "9001")
}

func checkAddr(a string) error {
	host, port, err := net.SplitHostPort(a)
	if err != nil {
		return errors.New("must be host:port")
	}
	if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		return errors.New("port must be 0 to 65535")
	}
	if host == "" {
		return errors.New("host is missing; use 127.0.0.1 or 0.0.0.0 explicitly")
	}
	return nil
}

// parseSize reads a size in bytes: 1048576, 512KiB, 32MiB, 8GiB or 2TiB,
// positive and at most the int64 maximum (9223372036854775807 bytes).
func parseSize(s string) (int64, error) {
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40}} {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSuffix(s, u.suffix), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || n <= 0 || n > math.MaxInt64/mult {
		return 0, fmt.Errorf("must be a positive size such as 1048576, 512KiB, 32MiB, 8GiB or 2TiB (at most %d bytes)", int64(math.MaxInt64))
	}
	return n * mult, nil
}

// parseSizeInt is parseSize for a limit held in an int (HTTP bodies),
// which is as wide as int64 on the 64-bit platforms bdp is built for and
// refused, not truncated, where it is narrower.
func parseSizeInt(s string) (int, error) {
	n, err := parseSize(s)
	if err == nil && int64(int(n)) != n {
		return 0, fmt.Errorf("must be at most %d bytes on this platform", math.MaxInt)
	}
	return int(n), err
}

func newLogger(level slog.Level) *slog.Logger {
	return slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}

func randomBytes32() []byte {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return b
}
