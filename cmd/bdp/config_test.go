package main

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func envOf(kv map[string]string) func(string) string {
	return func(k string) string { return kv[k] }
}

func TestConfigDefaults(t *testing.T) {
	c, err := loadConfig(envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.HTTPAddr != "127.0.0.1:8080" || c.MQTTAddr != "127.0.0.1:1883" || c.S3Addr != "127.0.0.1:9000" {
		t.Fatalf("addresses: %+v", c)
	}
	if wd, _ := os.Getwd(); c.DataDir != filepath.Join(wd, "data") || c.DatabaseURL != "" || c.OperatorToken != "" || c.TokenSecret != nil {
		t.Fatalf("state: %+v", c)
	}
	if c.BodyLimit != 32<<20 || c.ImportLimit != 2<<30 || c.TokenTTL != time.Hour || c.CredentialTTL != time.Minute {
		t.Fatalf("limits: %+v", c)
	}
	if c.WindowBudgetDatapoint != 24<<20 || c.WindowBudgetNode != 1<<30 || c.WindowSourceInterval != time.Second {
		t.Fatalf("window budget: %+v", c)
	}
	if c.LoginAccountFailures != 10 || c.LoginAddressFailures != 100 || c.LoginFailureWindow != time.Minute {
		t.Fatalf("login throttle: %+v", c)
	}
	if c.MQTTWSAddr != "127.0.0.1:9001" || c.MQTTClientQueue != 1024 {
		t.Fatalf("mqtt: %+v", c)
	}
	if c.AnalysisWorkers != 0 { // runner.DefaultWorkers
		t.Fatalf("analysis workers: %d", c.AnalysisWorkers)
	}
}

func TestConfigValues(t *testing.T) {
	c, err := loadConfig(envOf(map[string]string{
		"BDP_HTTP_ADDR": "0.0.0.0:0", "BDP_BODY_LIMIT": "512KiB", "BDP_IMPORT_LIMIT": "3GiB", "BDP_CREDENTIAL_CACHE_TTL": "0s",
		"BDP_DATABASE_URL": "postgres://u:p@db:5432/bdp", "BDP_TOKEN_SECRET": strings.Repeat("s", 32),
		"BDP_LOG_LEVEL": "warn", "BDP_KAFKA_BROKERS": "127.0.0.1:9092, 127.0.0.1:9093",
		"BDP_LOGIN_ACCOUNT_FAILURES": "5", "BDP_LOGIN_ADDRESS_FAILURES": "50", "BDP_LOGIN_FAILURE_WINDOW": "5m",
		"BDP_ANALYSIS_WORKERS": "3",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if c.HTTPAddr != "0.0.0.0:0" || c.BodyLimit != 512<<10 || c.ImportLimit != 3<<30 || c.CredentialTTL != 0 || c.LogLevel.String() != "WARN" ||
		len(c.KafkaBrokers) != 2 || c.KafkaBrokers[1] != "127.0.0.1:9093" || c.KafkaTopic != "bdp.observations" ||
		c.LoginAccountFailures != 5 || c.LoginAddressFailures != 50 || c.LoginFailureWindow != 5*time.Minute || c.AnalysisWorkers != 3 {
		t.Fatalf("%+v", c)
	}
}

// Every bad value is reported, by variable name, in one error.
func TestConfigReportsEveryBadValue(t *testing.T) {
	bad := map[string]string{
		"BDP_HTTP_ADDR":              "8080",
		"BDP_MQTT_ADDR":              "127.0.0.1:99999",
		"BDP_S3_ADDR":                ":9000",
		"BDP_DATABASE_URL":           "mysql://x",
		"BDP_OPERATOR_TOKEN":         "short",
		"BDP_TOKEN_SECRET":           "too-short",
		"BDP_TOKEN_TTL":              "5s",
		"BDP_BODY_LIMIT":             "lots",
		"BDP_IMPORT_LIMIT":           "8388608TiB",
		"BDP_CREDENTIAL_CACHE_TTL":   "-1s",
		"BDP_SHUTDOWN_TIMEOUT":       "soon",
		"BDP_LOG_LEVEL":              "loud",
		"BDP_WINDOW_BUDGET_NODE":     "1KiB", // under the per-datapoint default
		"BDP_WINDOW_SOURCE_INTERVAL": "0s",
		"BDP_KAFKA_BROKERS":          "127.0.0.1:9092,nohost",
		"BDP_KAFKA_TOPIC":            "bad topic!*",
		"BDP_LOGIN_ACCOUNT_FAILURES": "0",
		"BDP_LOGIN_ADDRESS_FAILURES": "many",
		"BDP_LOGIN_FAILURE_WINDOW":   "500ms",
		"BDP_MQTT_WS_ADDR":           "localhost",
		"BDP_MQTT_CLIENT_QUEUE":      "10",
		"BDP_ANALYSIS_WORKERS":       "65",
		"BDP_EDGE_SIMULATOR":         "yes",
	}
	file := filepath.Join(t.TempDir(), "a-file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	bad["BDP_DATA_DIR"] = filepath.Join(file, "data") // below a file
	_, err := loadConfig(envOf(bad))
	if err == nil {
		t.Fatal("bad configuration accepted")
	}
	for name := range bad {
		if !strings.Contains(err.Error(), name+"=") {
			t.Errorf("error does not name %s:\n%v", name, err)
		}
	}
}

// Secrets in a bad value stay out of the error, which ends up in logs.
func TestConfigErrorsDoNotRepeatSecrets(t *testing.T) {
	_, err := loadConfig(envOf(map[string]string{
		"BDP_DATABASE_URL":   "postgress://bdp:supersecretpw@db/bdp",
		"BDP_OPERATOR_TOKEN": "opsecret",
		"BDP_TOKEN_SECRET":   "tokensecret",
		"BDP_LOG_LEVEL":      "info+2", // slog's syntax, not one of the four names
	}))
	if err == nil {
		t.Fatal("bad configuration accepted")
	}
	for _, secret := range []string{"supersecretpw", "opsecret", "tokensecret"} {
		if strings.Contains(err.Error(), secret) {
			t.Errorf("the error repeats a secret:\n%v", err)
		}
	}
	for _, name := range []string{"BDP_DATABASE_URL", "BDP_OPERATOR_TOKEN", "BDP_TOKEN_SECRET", "BDP_LOG_LEVEL"} {
		if !strings.Contains(err.Error(), name+"=") {
			t.Errorf("error does not name %s:\n%v", name, err)
		}
	}
}

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"1048576", 1 << 20, true}, {"1KiB", 1024, true}, {"32MiB", 32 << 20, true}, {"1GiB", 1 << 30, true},
		{" 2GiB", 2 << 30, true}, {"4GiB", 4 << 30, true},
		// Beyond 4 GiB, up to the int64 maximum.
		{"5GiB", 5 << 30, true}, {"4294967297", 1<<32 + 1, true}, {"64GiB", 64 << 30, true}, {"3TiB", 3 << 40, true},
		{"8388607TiB", 8388607 << 40, true}, {"9223372036854775807", math.MaxInt64, true},
		{"8589934591GiB", 8589934591 << 30, true},
		// Overflow is refused, never wrapped.
		{"8388608TiB", 0, false}, {"8589934592GiB", 0, false}, {"9007199254740992KiB", 0, false},
		{"9223372036854775808", 0, false}, {"99999999999999999999MiB", 0, false},
		{"0", 0, false}, {"-5", 0, false}, {"-1GiB", 0, false}, {"12MB", 0, false}, {"1.5GiB", 0, false},
		{"GiB", 0, false}, {"", 0, false},
	}
	for _, tt := range tests {
		got, err := parseSize(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("parseSize(%q) = %d, %v; want %d (ok %v)", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

// A window budget beyond 4 GiB is taken as configured.
func TestConfigSizesBeyond4GiB(t *testing.T) {
	cfg, err := loadConfig(envOf(map[string]string{
		"BDP_WINDOW_BUDGET_DATAPOINT": "6GiB", "BDP_WINDOW_BUDGET_NODE": "64GiB", "BDP_IMPORT_LIMIT": "10GiB", "BDP_BODY_LIMIT": "5GiB",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.WindowBudgetDatapoint != 6<<30 || cfg.WindowBudgetNode != 64<<30 || cfg.ImportLimit != 10<<30 || cfg.BodyLimit != 5<<30 {
		t.Fatalf("budgets %d/%d, import %d, body %d", cfg.WindowBudgetDatapoint, cfg.WindowBudgetNode, cfg.ImportLimit, cfg.BodyLimit)
	}
}
