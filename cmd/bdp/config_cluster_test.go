package main

import (
	"maps"
	"strings"
	"testing"
)

// Cluster mode refuses at start what several nodes cannot share, naming
// what to configure instead; one node needs none of it.
func TestConfigClusterMode(t *testing.T) {
	shared := map[string]string{
		"BDP_CLUSTER_ETCD": "127.0.0.1:2379", "BDP_NODE_ID": "n1",
		"BDP_DATABASE_URL": "postgres://db/bdp", "BDP_KAFKA_BROKERS": "127.0.0.1:9092",
		"BDP_MQTT_EXTERNAL": "tcp://127.0.0.1:1883", "BDP_MQTT_ADMIN_USER": "admin", "BDP_MQTT_ADMIN_PASSWORD": "pw",
		"BDP_S3_ENDPOINT": "http://127.0.0.1:9000", "BDP_S3_ACCESS_KEY": "k", "BDP_S3_SECRET_KEY": "secret-key",
	}
	without := func(names ...string) map[string]string {
		m := maps.Clone(shared)
		for _, n := range names {
			delete(m, n)
		}
		return m
	}
	with := func(k, v string) map[string]string {
		m := maps.Clone(shared)
		m[k] = v
		return m
	}
	for _, c := range []struct {
		name string
		env  map[string]string
		want []string // what the error names; none: accepted
	}{
		{"everything shared", shared, nil},
		{"one node", map[string]string{}, nil},
		{"managed PostgreSQL", without("BDP_DATABASE_URL"), []string{"BDP_CLUSTER_ETCD=", "needs BDP_DATABASE_URL"}},
		{"no Kafka", without("BDP_KAFKA_BROKERS"), []string{"needs BDP_KAFKA_BROKERS"}},
		{"embedded broker", without("BDP_MQTT_EXTERNAL", "BDP_MQTT_ADMIN_USER", "BDP_MQTT_ADMIN_PASSWORD"), []string{"needs BDP_MQTT_EXTERNAL"}},
		{"embedded object store", without("BDP_S3_ENDPOINT", "BDP_S3_ACCESS_KEY", "BDP_S3_SECRET_KEY"), []string{"needs BDP_S3_ENDPOINT"}},
		{"endpoint not host:port", with("BDP_CLUSTER_ETCD", "etcd"), []string{"BDP_CLUSTER_ETCD="}},
		{"remote address", with("BDP_CLUSTER_ADDR", "nowhere"), []string{"BDP_CLUSTER_ADDR="}},
		{"advertised host with port 0", with("BDP_CLUSTER_ADVERTISE", "node1.example"), []string{"BDP_CLUSTER_ADVERTISE=", "fixed port"}},
		{"node id with a slash", with("BDP_NODE_ID", "a/b"), []string{"BDP_NODE_ID="}},
		{"relay topic", with("BDP_CLUSTER_RELAY_TOPIC", "no spaces"), []string{"BDP_CLUSTER_RELAY_TOPIC="}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := loadConfig(envOf(c.env))
			if len(c.want) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				if (c.env["BDP_CLUSTER_ETCD"] != "") != (cfg.Cluster != nil) {
					t.Fatalf("cluster mode %v for %v", cfg.Cluster, c.env)
				}
				if cfg.Cluster != nil && (cfg.Cluster.NodeID != "n1" || cfg.NodeID != "n1" || cfg.RelayTopic != "bdp.stored") {
					t.Fatalf("%+v", cfg.Cluster)
				}
				return
			}
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("the error does not say %q: %v", w, err)
				}
			}
		})
	}
}
