#!/usr/bin/env bash
# A real single-node Apache Kafka (KRaft, one process as broker and
# controller, PLAINTEXT on 127.0.0.1) for the tests. Needs java (17+) and
# mvn; the Kafka jars come from Maven Central and are cached.
#
# Usage: scripts/kafka.sh fetch
#          download kafka_2.13 and its runtime dependencies into
#          $BDP_KAFKA_CACHE (default ~/.cache/bdp/kafka-<version>); does
#          nothing when they are already there
#        scripts/kafka.sh start DIR
#          fetch, then start a fresh broker whose config, data (wiped
#          first), log and pid live in DIR; writes the bootstrap address
#          to DIR/bootstrap and prints it once the broker is up
#        scripts/kafka.sh stop DIR
#          stop the broker started in DIR (its data stays there)
#        scripts/kafka.sh run CMD [ARG...]
#          run CMD with BDP_TEST_KAFKA_BROKERS set to a broker started for
#          it in a temporary directory, stop the broker afterwards (also
#          on failure) and exit with CMD's status; when
#          BDP_TEST_KAFKA_BROKERS is already set, just run CMD
#
# Environment: BDP_KAFKA_VERSION (default 4.1.1), BDP_KAFKA_CACHE,
# BDP_KAFKA_HEAP (default 512m).
set -euo pipefail

KAFKA_VERSION="${BDP_KAFKA_VERSION:-4.1.1}"
# The SLF4J binding Kafka's own distribution ships, so the broker logs to
# DIR/server.log through log4j2.
LOG4J_VERSION=2.24.3
CACHE="${BDP_KAFKA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/bdp/kafka-$KAFKA_VERSION}"
LIBS="$CACHE/libs"
HEAP="${BDP_KAFKA_HEAP:-512m}"

say() { printf 'kafka: %s\n' "$*" >&2; }
die() {
	say "$*"
	exit 1
}
now_ms() { date +%s%3N; }

need_tools() {
	local t
	for t in "$@"; do
		command -v "$t" >/dev/null 2>&1 || die "$t is missing (run: bash scripts/install-deps.sh --test)"
	done
}

cmd_fetch() {
	if [ -f "$LIBS/kafka_2.13-$KAFKA_VERSION.jar" ]; then
		return 0
	fi
	need_tools mvn java
	local t0 tmp
	t0=$(now_ms)
	mkdir -p "$CACHE"
	tmp=$(mktemp -d "$CACHE/fetch.XXXXXX")
	# A throwaway project whose only purpose is its dependency list.
	cat >"$tmp/pom.xml" <<EOF
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>org.openbdp.bdp</groupId>
  <artifactId>kafka-test-broker</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>org.apache.kafka</groupId>
      <artifactId>kafka_2.13</artifactId>
      <version>$KAFKA_VERSION</version>
    </dependency>
    <dependency>
      <groupId>org.apache.logging.log4j</groupId>
      <artifactId>log4j-slf4j-impl</artifactId>
      <version>$LOG4J_VERSION</version>
    </dependency>
  </dependencies>
</project>
EOF
	say "fetching org.apache.kafka:kafka_2.13:$KAFKA_VERSION from Maven Central into $LIBS"
	if ! mvn -B -q -f "$tmp/pom.xml" \
		org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy-dependencies \
		-DincludeScope=runtime -DoutputDirectory="$tmp/libs" >"$tmp/mvn.log" 2>&1; then
		cat "$tmp/mvn.log" >&2
		rm -rf "$tmp"
		die "mvn could not fetch Kafka $KAFKA_VERSION"
	fi
	[ -f "$tmp/libs/kafka_2.13-$KAFKA_VERSION.jar" ] || die "mvn did not produce kafka_2.13-$KAFKA_VERSION.jar"
	# -T: a concurrent fetch that finished first wins; ours is dropped.
	mv -T "$tmp/libs" "$LIBS" 2>/dev/null || true
	rm -rf "$tmp"
	say "fetched $(find "$LIBS" -name '*.jar' | wc -l) jars in $(($(now_ms) - t0)) ms"
}

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# A port nobody listens on right now (the broker binds it moments later;
# start retries with new ports if it lost the race), below Linux's
# ephemeral range (32768 and up) so that no outgoing connection holds it.
free_port() {
	local p
	while :; do
		p=$((20000 + RANDOM % 12700))
		if ! port_in_use "$p" && [ "$p" != "${1:-}" ]; then
			echo "$p"
			return
		fi
	done
}

running() { [ -f "$1/pid" ] && kill -0 "$(cat "$1/pid")" 2>/dev/null; }

write_config() {
	local dir=$1 port=$2 cport=$3
	cat >"$dir/server.properties" <<EOF
# Written by scripts/kafka.sh: a single-node KRaft test broker.
node.id=1
process.roles=broker,controller
controller.quorum.voters=1@127.0.0.1:$cport
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport
advertised.listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
controller.listener.names=CONTROLLER
log.dirs=$dir/data
num.partitions=4
auto.create.topics.enable=true
default.replication.factor=1
min.insync.replicas=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=4
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=4
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
EOF
	cat >"$dir/log4j2.properties" <<EOF
status = warn
appender.file.type = File
appender.file.name = file
appender.file.fileName = $dir/server.log
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = WARN
rootLogger.appenderRef.file.ref = file
logger.server.name = kafka.server
logger.server.level = INFO
EOF
}

# One attempt at starting the broker on fresh ports; 0 once it serves.
start_once() {
	local dir=$1 port cport id pid deadline i
	port=$(free_port)
	cport=$(free_port "$port")
	rm -rf "$dir/data" "$dir/server.log" "$dir/stdout.log" "$dir/bootstrap"
	write_config "$dir" "$port" "$cport"
	# A random cluster id in Kafka's form: 16 bytes, URL-safe base64 (it
	# may start with "-", hence --cluster-id=).
	id=$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=')
	java -Xmx256m -cp "$LIBS/*" -Dlog4j2.configurationFile="$dir/log4j2.properties" \
		kafka.tools.StorageTool format --cluster-id="$id" --config "$dir/server.properties" \
		>"$dir/format.log" 2>&1 || {
		cat "$dir/format.log" >&2
		die "formatting the storage in $dir/data failed"
	}
	# setsid: the broker outlives this script and ignores the terminal's ^C;
	# `stop` ends it. The inner shell writes its own pid, which java keeps.
	rm -f "$dir/pid"
	setsid bash -c 'echo $$ >"$1/pid"; shift; exec "$@"' _ "$dir" \
		java -Xms256m -Xmx"$HEAP" -XX:+UseG1GC -XX:MaxGCPauseMillis=20 \
		-XX:+ExitOnOutOfMemoryError -Djava.awt.headless=true \
		-Dlog4j2.configurationFile="$dir/log4j2.properties" \
		-cp "$LIBS/*" kafka.Kafka "$dir/server.properties" \
		>"$dir/stdout.log" 2>&1 </dev/null &
	for ((i = 0; i < 500; i++)); do
		[ -s "$dir/pid" ] && break
		sleep 0.01
	done
	[ -s "$dir/pid" ] || die "the broker process did not start (see $dir/stdout.log)"
	pid=$(cat "$dir/pid")
	deadline=$(($(date +%s) + 60))
	# Up when the port accepts connections and the server says it started
	# (after that it answers metadata requests).
	until port_in_use "$port" && grep -q 'Kafka Server started' "$dir/server.log" 2>/dev/null; do
		if ! kill -0 "$pid" 2>/dev/null; then
			rm -f "$dir/pid"
			if grep -q 'Address already in use' "$dir/server.log" "$dir/stdout.log" 2>/dev/null; then
				cat "$dir/server.log" "$dir/stdout.log" >"$dir/port-taken.log" 2>/dev/null || true
				return 1
			fi
			tail -n 30 "$dir/server.log" "$dir/stdout.log" >&2 || true
			die "the broker exited while starting (logs in $dir)"
		fi
		if [ "$(date +%s)" -ge "$deadline" ]; then
			tail -n 30 "$dir/server.log" "$dir/stdout.log" >&2 || true
			kill "$pid" 2>/dev/null || true
			rm -f "$dir/pid"
			die "the broker did not start within 60 s (logs in $dir)"
		fi
		sleep 0.1
	done
	echo "127.0.0.1:$port" >"$dir/bootstrap"
}

cmd_start() {
	[ $# -eq 1 ] || die "usage: kafka.sh start DIR"
	local dir=$1 t0 attempt
	cmd_fetch
	need_tools java
	mkdir -p "$dir"
	dir=$(cd "$dir" && pwd)
	running "$dir" && die "a broker already runs in $dir (pid $(cat "$dir/pid")); stop it first"
	t0=$(now_ms)
	for attempt in 1 2 3; do
		if start_once "$dir"; then
			say "broker $(cat "$dir/bootstrap") up in $(($(now_ms) - t0)) ms (pid $(cat "$dir/pid"), logs in $dir)"
			cat "$dir/bootstrap"
			return 0
		fi
		say "port taken, retrying ($attempt)"
	done
	die "could not find free ports"
}

cmd_stop() {
	[ $# -eq 1 ] || die "usage: kafka.sh stop DIR"
	local dir=$1 pid t0 i
	if ! running "$dir"; then
		rm -f "$dir/pid"
		say "no broker runs in $dir"
		return 0
	fi
	pid=$(cat "$dir/pid")
	t0=$(now_ms)
	kill "$pid" 2>/dev/null || true
	for ((i = 0; i < 300; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$pid" 2>/dev/null; then
		say "broker $pid ignored SIGTERM for 30 s: SIGKILL"
		kill -9 "$pid" 2>/dev/null || true
	fi
	rm -f "$dir/pid"
	say "broker stopped in $(($(now_ms) - t0)) ms"
}

cmd_run() {
	[ $# -ge 1 ] || die "usage: kafka.sh run CMD [ARG...]"
	if [ -n "${BDP_TEST_KAFKA_BROKERS:-}" ]; then
		say "using the broker at $BDP_TEST_KAFKA_BROKERS"
		exec "$@"
	fi
	local dir rc=0
	dir=$(mktemp -d "${TMPDIR:-/tmp}/bdp-kafka.XXXXXX")
	# shellcheck disable=SC2064 # expand $dir now
	trap "cmd_stop '$dir' || true; rm -rf '$dir'" EXIT
	trap 'exit 129' HUP
	trap 'exit 130' INT
	trap 'exit 143' TERM
	BDP_TEST_KAFKA_BROKERS=$(cmd_start "$dir")
	export BDP_TEST_KAFKA_BROKERS
	"$@" || rc=$?
	exit "$rc"
}

case "${1:-}" in
fetch) cmd_fetch ;;
start) shift && cmd_start "$@" ;;
stop) shift && cmd_stop "$@" ;;
run) shift && cmd_run "$@" ;;
*)
	awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0" >&2
	exit 2
	;;
esac
