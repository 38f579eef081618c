package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/openbdp/bdp/cluster"
)

// clusterVars are the variables of cluster mode (README: Several nodes).
var clusterVars = []configVar{
	{"BDP_CLUSTER_ETCD", "", "comma-separated etcd endpoints (host:port); set: cluster mode, whose nodes divide the virtual datapoints among themselves; it needs BDP_DATABASE_URL, BDP_KAFKA_BROKERS, BDP_MQTT_EXTERNAL and BDP_S3_ENDPOINT shared by every node"},
	{"BDP_CLUSTER_NAME", cluster.DefaultName, "the cluster's name, its members' key prefix in etcd"},
	{"BDP_CLUSTER_ADDR", "127.0.0.1:0", "where this node listens for the other nodes (protoactor remote, gRPC), host:port; port 0 picks a free port"},
	{"BDP_CLUSTER_ADVERTISE", "", "the host the other nodes reach this one at, when not BDP_CLUSTER_ADDR's; needs a fixed port in BDP_CLUSTER_ADDR"},
	{"BDP_CLUSTER_RELAY_TOPIC", "bdp.stored", "the Kafka topic that carries every stored observation to every node's virtual datapoints"},
	{"BDP_NODE_ID", "", "this node's name, unique in the cluster: its MQTT client id (bdp-<id>) and its name in logs and /operator/cluster; empty: the host name"},
}

// loadClusterConfig reads the cluster variables, and in cluster mode
// refuses what one node may use but several cannot share: the managed
// PostgreSQL, the embedded MQTT broker and the embedded object store each
// live in one node's data directory, and without Kafka no node's actors
// see what another stored.
func loadClusterConfig(c *config, get func(string) string, bad func(string, error)) {
	c.NodeID = get("BDP_NODE_ID")
	if c.NodeID == "" {
		host, _ := os.Hostname()
		c.NodeID = host
	}
	if strings.ContainsAny(c.NodeID, " /#+") {
		bad("BDP_NODE_ID", errors.New("must not contain spaces, '/', '#' or '+' (it names MQTT clients)"))
	}
	endpoints := get("BDP_CLUSTER_ETCD")
	if endpoints == "" {
		return
	}
	cc := cluster.Config{Name: get("BDP_CLUSTER_NAME"), NodeID: c.NodeID, AdvertisedHost: get("BDP_CLUSTER_ADVERTISE")}
	var err error
	if cc.Etcd, err = hostPorts(endpoints); err != nil {
		bad("BDP_CLUSTER_ETCD", err)
		return
	}
	host, port, err := net.SplitHostPort(get("BDP_CLUSTER_ADDR"))
	p, perr := strconv.Atoi(port)
	if err != nil || perr != nil || p < 0 || p > 65535 {
		bad("BDP_CLUSTER_ADDR", errors.New("must be host:port"))
	}
	cc.Host, cc.Port = host, p
	if cc.AdvertisedHost != "" && p == 0 {
		bad("BDP_CLUSTER_ADVERTISE", errors.New("needs BDP_CLUSTER_ADDR with a fixed port: the other nodes dial the advertised host at it"))
	} else if err := cc.Validate(); err != nil {
		bad("BDP_CLUSTER_ETCD", err)
	}
	c.Cluster = &cc
	c.RelayTopic = get("BDP_CLUSTER_RELAY_TOPIC")
	if !kafkaTopicName.MatchString(c.RelayTopic) {
		bad("BDP_CLUSTER_RELAY_TOPIC", errors.New("must be 1 to 245 of a-z, A-Z, 0-9, '.', '_' and '-'"))
	}
	needs := []struct{ name, set, why string }{
		{"BDP_DATABASE_URL", c.DatabaseURL, "the managed PostgreSQL lives in one node's data directory; give every node the same external database"},
		{"BDP_KAFKA_BROKERS", strings.Join(c.KafkaBrokers, ","), "stored observations reach the virtual datapoints of every node over Kafka"},
		{"BDP_MQTT_EXTERNAL", c.MQTTExternal, "the embedded broker serves one node's clients only; run Mosquitto with its dynamic-security plugin for every node"},
		{"BDP_S3_ENDPOINT", c.S3Endpoint, "the embedded object store keeps files in one node's data directory; give every node the same S3 store"},
	}
	for _, n := range needs {
		if n.set == "" {
			bad("BDP_CLUSTER_ETCD", fmt.Errorf("cluster mode needs %s: %s", n.name, n.why))
		}
	}
}
