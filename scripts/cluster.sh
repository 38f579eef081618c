#!/usr/bin/env bash
# A three-node bdp cluster on this machine, for trying cluster mode
# (README: Several nodes): PostgreSQL, Kafka, Mosquitto with its
# dynamic-security plugin, etcd and an S3 store, and three bdp serve nodes
# joined to them (bdp-bench cluster-up, cluster/localcluster).
#
# Usage: scripts/cluster.sh up|down [DIR]   (DIR: /tmp/bdp-cluster)
#   up    starts everything in the background; DIR/cluster.env has the
#         nodes' URLs (BDP_CLUSTER_HTTP) and the services' addresses
#   down  stops the nodes gracefully, then the services
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

cmd=${1:-}
dir=${2:-/tmp/bdp-cluster}
pidfile="$dir/cluster-up.pid"

case "$cmd" in
up)
	if [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
		echo "cluster: already up (pid $(cat "$pidfile")); scripts/cluster.sh down $dir stops it" >&2
		exit 1
	fi
	mkdir -p "$dir"
	rm -f "$dir/cluster.env"
	nohup bin/bdp-bench cluster-up -dir "$dir" >"$dir/cluster-up.log" 2>&1 &
	echo $! >"$pidfile"
	for _ in $(seq 1 600); do
		if [ -f "$dir/cluster.env" ]; then
			echo "cluster: up; its addresses ($dir/cluster.env):"
			grep -E '^BDP_(NODE_.*_HTTP|CLUSTER_HTTP|OPERATOR_TOKEN)=' "$dir/cluster.env"
			exit 0
		fi
		if ! kill -0 "$(cat "$pidfile")" 2>/dev/null; then
			echo "cluster: failed to start; $dir/cluster-up.log:" >&2
			tail -n 30 "$dir/cluster-up.log" >&2
			exit 1
		fi
		sleep 0.5
	done
	echo "cluster: not up within 300 s; see $dir/cluster-up.log" >&2
	exit 1
	;;
down)
	if [ ! -f "$pidfile" ]; then
		echo "cluster: not up in $dir"
		exit 0
	fi
	pid=$(cat "$pidfile")
	kill -TERM "$pid" 2>/dev/null || true
	for _ in $(seq 1 240); do
		kill -0 "$pid" 2>/dev/null || { rm -f "$pidfile" "$dir/cluster.env"; echo "cluster: down"; exit 0; }
		sleep 0.5
	done
	echo "cluster: still running after 120 s; killing pid $pid" >&2
	kill -KILL "$pid" 2>/dev/null || true
	rm -f "$pidfile"
	;;
*)
	echo "usage: scripts/cluster.sh up|down [DIR]" >&2
	exit 2
	;;
esac
