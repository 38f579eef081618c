#!/usr/bin/env bash
# Installs, with apt-get, the system packages that bdp needs and that are
# missing on this machine. Runs `apt-get update` once, and only when
# something must be installed.
#
# Usage: scripts/install-deps.sh [--run] [--test] [--npm]
#   --run   what `bdp serve` needs: PostgreSQL's server binaries (initdb,
#           postgres), from which bdp starts its embedded database
#   --test  what `make test` needs: the above, plus chromium and
#           chromium-driver for the browser tests, java and maven for the
#           Kafka test broker, python3 with venv for the Python tests,
#           mosquitto (with its dynamic-security plugin) for the external
#           MQTT broker tests, mosquitto-clients and openssl for the MQTT
#           over TLS client tests, etcd-server for the cluster tests
#   --npm   npm, to fetch the Swagger UI assets (`make ui`)
#   --bench what the benchmark scripts need: the above for --run, plus wrk
#           and curl
# With no flag, --run.
#
# Runs apt-get as root, or through sudo when not root and sudo exists.
set -euo pipefail

export DEBIAN_FRONTEND=noninteractive

want_run=0 want_test=0 want_npm=0 want_bench=0
[ $# -eq 0 ] && want_run=1
for arg in "$@"; do
	case "$arg" in
	--run) want_run=1 ;;
	--test) want_run=1 want_test=1 ;;
	--npm) want_npm=1 ;;
	--bench) want_run=1 want_bench=1 ;;
	-h | --help)
		awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"
		exit 0
		;;
	*)
		echo "install-deps: unknown flag $arg (want --run, --test, --npm or --bench)" >&2
		exit 2
		;;
	esac
done

have_initdb() {
	local f
	for f in /usr/lib/postgresql/*/bin/initdb; do
		[ -x "$f" ] && return 0
	done
	return 1
}

pkgs=()
if [ "$want_run" = 1 ] && ! have_initdb; then
	pkgs+=(postgresql)
fi
if [ "$want_test" = 1 ]; then
	# Recommends are not installed (they pull in a desktop's worth of
	# packages); fonts-liberation is the one that matters to render pages.
	[ -x /usr/bin/chromium ] || pkgs+=(chromium fonts-liberation)
	[ -x /usr/bin/chromedriver ] || pkgs+=(chromium-driver)
	# The Kafka test broker (scripts/kafka.sh): Java 17+ and Maven.
	command -v java >/dev/null 2>&1 || pkgs+=(default-jre-headless)
	command -v mvn >/dev/null 2>&1 || pkgs+=(maven)
	# The external MQTT broker tests (mqtt/mosquittotest) run Debian's
	# mosquitto 2 with the dynamic-security plugin, which it ships.
	[ -x /usr/sbin/mosquitto ] || pkgs+=(mosquitto)
	# The third-party MQTT client tests (cmd/bdp TestServeMQTTThirdPartyClients,
	# tests/python/test_aedifion_mqtt_tls.py) subscribe with Debian's
	# mosquitto_sub; the TLS tests make their certificates with openssl.
	command -v mosquitto_sub >/dev/null 2>&1 || pkgs+=(mosquitto-clients)
	command -v openssl >/dev/null 2>&1 || pkgs+=(openssl)
	# Cluster mode's membership (cluster/etcdtest, the cluster tests).
	[ -x /usr/bin/etcd ] || pkgs+=(etcd-server)
	# The Python tests (make test-python, test-api) run in a virtualenv;
	# Debian's python3 makes one only with python3-venv (ensurepip).
	if ! command -v python3 >/dev/null 2>&1; then
		pkgs+=(python3 python3-venv)
	elif ! python3 -c 'import ensurepip' >/dev/null 2>&1; then
		pkgs+=(python3-venv)
	fi
fi
if [ "$want_bench" = 1 ]; then
	command -v wrk >/dev/null 2>&1 || pkgs+=(wrk)
	command -v curl >/dev/null 2>&1 || pkgs+=(curl)
fi
if [ "$want_npm" = 1 ] && ! command -v npm >/dev/null 2>&1; then
	pkgs+=(npm)
fi

if [ ${#pkgs[@]} -eq 0 ]; then
	echo "deps: nothing to install"
	exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
	echo "deps: missing ${pkgs[*]}, and there is no apt-get here: install them by hand" >&2
	exit 1
fi

sudo=()
if [ "$(id -u)" != 0 ]; then
	if command -v sudo >/dev/null 2>&1; then
		# sudo drops the environment: pass DEBIAN_FRONTEND explicitly.
		sudo=(sudo env DEBIAN_FRONTEND=noninteractive)
	else
		echo "deps: missing ${pkgs[*]}; run this as root or install sudo" >&2
		exit 1
	fi
fi

# Wait for another apt-get or dpkg that holds the lock instead of failing.
apt_opts=(-o DPkg::Lock::Timeout=900 -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold)

echo "deps: installing ${pkgs[*]}"
"${sudo[@]}" apt-get "${apt_opts[@]}" update
"${sudo[@]}" apt-get "${apt_opts[@]}" install -y --no-install-recommends "${pkgs[@]}" </dev/null
echo "deps: installed ${pkgs[*]}"
