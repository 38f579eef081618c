#!/usr/bin/env bash
# Loads GET /v2/user with Basic credentials from wrk (a second process on
# loopback) against `bdp serve` on its managed PostgreSQL, once with the
# verified-credentials cache and once without. Prints one JSON object as
# its last line.
#
#   scripts/bench-http.sh [DURATION (default 10s)] [CONNECTIONS (default 64)]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="/usr/local/go/bin:$PATH"
DURATION="${1:-10s}"
CONNS="${2:-64}"

command -v wrk >/dev/null || bash scripts/install-deps.sh --bench
go build -o bin/bdp ./cmd/bdp

WORK="$(mktemp -d "${TMPDIR:-/tmp}/bdp-bench-http.XXXXXX")"
chmod 755 "$WORK"
PID=""
cleanup() {
	if [ -n "$PID" ]; then kill -TERM "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; fi
	rm -rf "$WORK"
}
trap cleanup EXIT

TOKEN="bench-operator-token-$RANDOM$RANDOM"
EMAIL="bench@example.com"
PASSWORD="bench-password-1"

# start_server CACHE_TTL: runs bdp serve and waits until it is ready.
start_server() {
	BDP_HTTP_ADDR=127.0.0.1:0 BDP_MQTT_ADDR=127.0.0.1:0 BDP_S3_ADDR=127.0.0.1:0 BDP_DATA_DIR="$WORK/data" BDP_OPERATOR_TOKEN="$TOKEN" \
		BDP_CREDENTIAL_CACHE_TTL="$1" ./bin/bdp serve >"$WORK/server.log" 2>&1 &
	PID=$!
	rm -f "$WORK/data/addresses.json"
	for _ in $(seq 1 600); do
		if [ -f "$WORK/data/addresses.json" ]; then
			ADDR="$(sed -n 's/.*"http": "\(.*\)".*/\1/p' "$WORK/data/addresses.json")"
			if curl -fs "http://$ADDR/readyz" >/dev/null 2>&1; then return 0; fi
		fi
		sleep 0.1
	done
	echo "bdp serve did not become ready:" >&2; tail -20 "$WORK/server.log" >&2; exit 1
}

stop_server() { kill -TERM "$PID"; wait "$PID" || true; PID=""; }

# load: runs wrk and prints requests/s.
load() {
	local auth
	auth="Basic $(printf '%s:%s' "$EMAIL" "$PASSWORD" | base64 -w0)"
	wrk -t2 -c"$CONNS" -d"$DURATION" -H "Authorization: $auth" "http://$ADDR/v2/user" >"$WORK/wrk.txt"
	cat "$WORK/wrk.txt" >&2
	if grep -q "Non-2xx" "$WORK/wrk.txt"; then echo "wrk saw non-2xx answers" >&2; exit 1; fi
	awk '/^Requests\/sec:/ {print $2}' "$WORK/wrk.txt"
}

start_server 60s
curl -fs -X POST "http://$ADDR/operator/companies" -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
	-d "{\"name\":\"bench\",\"admin\":{\"firstName\":\"B\",\"lastName\":\"B\",\"email\":\"$EMAIL\",\"password\":\"$PASSWORD\"}}" >/dev/null
echo "== with the credentials cache" >&2
WITH="$(load)"
stop_server

start_server 0s
echo "== without the credentials cache (argon2id on every request)" >&2
WITHOUT="$(DURATION=$DURATION load)"
stop_server

printf '{"scenario":"get_user_basic","connections":%s,"duration":"%s","rps_with_cache":%s,"rps_without_cache":%s}\n' \
	"$CONNS" "$DURATION" "$WITH" "$WITHOUT"
