# bdp — building-data platform.
#
#   make run    install what is missing, build, and serve on http://127.0.0.1:8080
#   make build  build bin/bdp (and bin/bdp-bench)
#   make test   run every test (installs chromium for the browser tests;
#               starts a Kafka test broker, scripts/kafka.sh), then
#               test-python and test-api
#   make test-python  the Python client tests (pytest, tests/python) against bin/bdp
#   make test-api     schemathesis against bdp's own OpenAPI document
#   make lint   gofmt, go vet, staticcheck
#   make bench-http  load GET /v2/user with wrk (issue figure: >= 15,000 req/s)
#   make bench-go    Go benchmarks of the hot paths
#   make bench-export  GET /v2/datapoint/timeseries over 20M rows (goals: p50 <= 2 ms newest 1000, <= 5 ms 30-day hourly)
#   make bench-csv   CSV import of 1M lines, streamed (goal: >= 300,000 lines/s)
#   make bench-ingest  2M observations through Kafka vs raw COPY (goals: >= 200,000 obs/s, ratio >= 0.8)
#   make bench-resume  restart with 10 running virtual datapoints over 500,000 stored points each (seconds until HTTP answers, until all Running)
#   make bench-vdp   10,000 formula datapoints fed 50,000 obs/s for 60 s (goals: outputs keep pace, p99 <= 50 ms, <= 4 KiB heap each)
#   make bench-vdp-mix  issue 18: 100,000 datapoints of a mix of types, windows and triggers at 100,000 obs/s, a restart, every output against a recompute, a minute burst (goals: p99 <= 50 ms, <= 2 KiB heap beside windows, all Running <= 60 s, burst p99 <= 5 s, ingest >= 0.8)
#   make bench-mqtt  embedded MQTT broker: 10,000 idle connections (<= 20 KiB heap each, connected in <= 5 s), live out to 10 QoS 1 subscribers under 20,000 obs/s (delivered 1.0, p99 <= 20 ms), QoS 1 ingestion (>= 200,000 obs/s) beside HTTP
#   make bench-analytics  each analysis function run over 4 weeks of minute data (p50 <= 100 ms), a weekly batch of 1,000 instances beside a 20,000 obs/s ingest (<= 60 s, ingest loss <= 10 %)
#   make bench-apps  1,000 running schedule apps over 100 projects with simulated edge devices (goals: <= 8 KiB heap each, idle CPU <= 2 % of a core)
#   make bench-files  document store: 100 MiB up and down through bdp vs minio-go straight to its store (goals: ratios >= 0.8), bdp's RSS during a 1 GiB upload (goal: growth <= 32 MiB)
#   make bench-cluster  three local nodes in cluster mode under the load harness: kill -9, stops through other nodes, rejoin, graceful stop, schedule apps and crashing devices (goals: nothing missing, different or lost; one write per boundary, one log entry per event; failover <= 10 s; command p99 <= 50 ms)
#   make bench-ui   the browser UI in headless Chromium: 30-day plot of minute data (goal <= 1 s), live value stored -> drawn p99 (goal <= 1 s), first load's assets (goal <= 500 KiB)
#   make bench-storage  23.6M observations of a building's mix (pvlib's BSRN one-minute data) sealed into chunks (goals: <= 1.37 bytes per observation, exports sealed/rows <= 1.0, ingest beside the sealer >= 0.8, nothing lost or doubled)
#   make cluster-up / cluster-down [CLUSTER_DIR=/tmp/bdp-cluster]
#               a three-node cluster on this machine with the services it
#               needs, in the background (README: Several nodes)
#   make bench-compare BASE=<rev> SCENARIO=<name> [ROUNDS=3] [ARGS='<flags>']
#               a bdp-bench scenario on the base revision and on the working
#               tree alternately: both sides' medians and head/base, last line
#               one JSON object (README: Comparing before and after a change)
#   make bench-compare-go BASE=<rev> PKG=./<pkg> [BENCH=<regexp>] [COUNT=6] [BENCHTIME=1s]
#               a package's Go benchmarks on both sides alternately, benchstat
#   make ui     fetch the Swagger UI assets (npm) into http/ui/dist
#   make deps   install the system packages `make run` needs
#   make clean  remove build outputs and fetched assets

SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := build

# Go lives in /usr/local/go/bin, which CI's PATH may lack; tools installed
# with `go install` land in ~/go/bin.
export PATH := /usr/local/go/bin:$(HOME)/go/bin:$(PATH)
export DEBIAN_FRONTEND := noninteractive

GO ?= go
UI_DIST := http/ui/dist
# The Python test tools (pytest, requests, schemathesis), pinned in
# tests/python/requirements.txt, live in this virtualenv.
VENV := .venv
VENV_PY := $(VENV)/bin/python

.PHONY: all deps deps-test ui build run test test-python test-api lint clean cluster-up cluster-down bench-cluster bench-http bench-go bench-export bench-csv bench-ingest bench-vdp bench-vdp-mix bench-resume bench-mqtt bench-analytics bench-apps bench-files bench-ui bench-compare bench-compare-go

all: build

# System packages for running the platform (PostgreSQL's initdb/postgres).
deps:
	bash scripts/install-deps.sh --run

# System packages for the tests: the above plus chromium and chromium-driver,
# and java and maven for the Kafka test broker.
deps-test:
	bash scripts/install-deps.sh --test

# Swagger UI assets, embedded by package http/ui. Fetched only when missing.
ui:
	bash scripts/fetch-swagger-ui.sh
	bash scripts/fetch-ui-libs.sh

build: ui
	$(GO) build -o bin/bdp ./cmd/bdp
	if [ -d cmd/bdp-bench ]; then $(GO) build -o bin/bdp-bench ./cmd/bdp-bench; fi

# The platform on its embedded defaults, at http://127.0.0.1:8080.
run: deps build
	./bin/bdp serve

# scripts/kafka.sh run: the tests get a real Kafka broker
# (BDP_TEST_KAFKA_BROKERS), stopped afterwards, also when they fail.
test: deps-test ui
	bash scripts/kafka.sh run $(GO) test ./... -count=1 -p 2 -timeout 20m
	$(MAKE) --no-print-directory test-python test-api

# The virtualenv, made again when the pinned requirements change.
$(VENV)/.installed: tests/python/requirements.txt
	rm -rf $(VENV)
	python3 -m venv $(VENV)
	$(VENV_PY) -m pip install --quiet --disable-pip-version-check -r tests/python/requirements.txt
	touch $@

# Python clients written the way aedifion's published examples call the
# API, against a real `bdp serve` (tests/python/test_aedifion_clients.py).
test-python: deps-test build $(VENV)/.installed
	BDP_BIN=bin/bdp $(VENV_PY) -m pytest tests/python -q -p no:cacheprovider

# schemathesis on every operation of GET /v2/openapi.json: no 5xx, only
# documented statuses, bodies that match their schemas
# (tests/python/run_schemathesis.py).
test-api: deps-test build $(VENV)/.installed
	BDP_BIN=bin/bdp $(VENV_PY) tests/python/run_schemathesis.py

lint:
	@echo "nothing reads beside the clone (../shared)"
	@out="$$(git ls-files -z | xargs -0 grep -ln -e '\.\./shared' -- 2>/dev/null | grep -v '^Makefile$$' || true)"; \
	if [ -n "$$out" ]; then \
		echo "these files name ../shared; a clone must stand on its own (copy what they need into the repository):"; \
		echo "$$out"; exit 1; \
	fi
	@echo "gofmt -l ."
	@out="$$(gofmt -l .)"; if [ -n "$$out" ]; then \
		echo "these files need gofmt (run: gofmt -w .):"; echo "$$out"; exit 1; \
	fi
	$(GO) vet ./...
	@gopath="$$($(GO) env GOPATH)"; gobin="$${gopath%%:*}/bin"; \
	if [ ! -x "$$gobin/staticcheck" ]; then \
		echo "installing staticcheck into $$gobin"; \
		GOBIN="$$gobin" $(GO) install honnef.co/go/tools/cmd/staticcheck@latest; \
	fi; \
	echo "$$gobin/staticcheck ./..."; \
	"$$gobin/staticcheck" ./...

# GET /v2/user with Basic auth under wrk, with and without the credentials
# cache; the last line is one JSON object.
bench-http: deps ui
	bash scripts/bench-http.sh

# Go benchmarks (permission check, password hashing, credentials cache).
bench-go:
	$(GO) test ./rbac ./auth -run '^$$' -bench . -benchmem -count 5

# GET /v2/datapoint/timeseries on 20 datapoints x 1M minutes (bench/export.go);
# the last line is one JSON object.
bench-export: build
	./bin/bdp-bench export -bdp bin/bdp

# POST importTimeseries with a generated 1M-line CSV, on_error=abort
# (bench/csv.go); the last line is one JSON object with lines_per_s.
bench-csv: build
	./bin/bdp-bench csv -bdp bin/bdp

# 4 simulated gateways produce 2M observations of 10,000 datapoints through a
# real Kafka broker (started and stopped by scripts/kafka.sh) into bdp serve;
# then the same rows go through a raw pgx CopyFrom (bench/ingest.go).
bench-ingest: deps-test build
	bash scripts/kafka.sh run ./bin/bdp-bench ingest -bdp bin/bdp

# 10,000 formula virtual datapoints (two pins, count 10, mean, every_value)
# run in process over the real pipeline and a throwaway PostgreSQL, fed
# 50,000 source observations/s for 60 s (bench/vdp.go); the last line is one
# JSON object with outputs_per_s, latency_p50_ms, latency_p99_ms (source
# stored -> output stored) and heap_bytes_per_vdp.
bench-vdp: build
	./bin/bdp-bench vdp

# Issue 20's cluster scenario on a Kafka broker of scripts/kafka.sh.
bench-cluster: deps-test build
	bash scripts/kafka.sh run ./bin/bdp-bench cluster

CLUSTER_DIR ?= /tmp/bdp-cluster

cluster-up: deps-test build
	bash scripts/cluster.sh up $(CLUSTER_DIR)

cluster-down:
	bash scripts/cluster.sh down $(CLUSTER_DIR)

# Issue 18's 100,000 scenario: the mix of types, windows and triggers at
# 100,000 obs/s, a restart with Resume, every output against a recompute,
# then the minute burst (README, "100,000 virtual datapoints: the mix").
bench-vdp-mix: build
	./bin/bdp-bench vdp -vdps 100000 -rate 100000

# bdp serve restarted (SIGTERM, start) 3 times with 10 running virtual
# datapoints whose sources hold 500,000 stored minutes each (bench/resume.go);
# the last line is one JSON object with http_ready_s and all_running_s, the
# medians of the restarts.
bench-resume: build
	./bin/bdp-bench resume -bdp bin/bdp

# bdp serve's embedded MQTT broker (bench/mqtt*.go), three parts in one
# run: 10,000 idle authenticated connections (heap bytes each, seconds to
# connect them with the credentials cache warm); 10 QoS 1 subscribers of
# the project while 20,000 observations/s are uploaded over HTTP for 60 s
# (delivered_ratio, live_p50_ms, live_p99_ms); 10 QoS 1 publishers of
# arrays of 100 observations, then the same load over HTTP
# (mqtt_ingest_obs_per_s, http_upload_obs_per_s). The last line is one
# JSON object; -parts, -conns, -duration and -ingest-duration size it down.
# The live part's subscribers are the bench's own minimal QoS 1 clients:
# paho spends about 4 µs of this machine's CPU per message, 0.6 of its 2
# cores at 200,000 messages/s, which would measure paho, not bdp
# (`bdp-bench mqtt` without -raw-subscribers uses paho).
bench-mqtt: build
	./bin/bdp-bench mqtt -bdp bin/bdp $(BENCH_ARGS_mqtt)

# The flags a bench-<name> target gives its scenario beyond the defaults;
# bench-compare gives them to both sides the same way.
BENCH_ARGS_mqtt := -raw-subscribers

# Issue 10's analytics figures (bench/analytics*.go), two parts on fresh
# platforms, driven through the API from the function catalog bdp serves.
# functions: each analysis function on the component where it reads the
# most pins, every pin holding 4 weeks of 1-minute data (-previous-data:
# the 4 weeks before too, which the summary's previous period reads), run
# by hand 9 times
# (run_p50_ms: the result row's finished_at - created_at; api_p50_ms: POST
# run until a GET answers the final status). weekly: 1,000 enabled
# instances over 100 projects, a week of minute data each, run by the
# weekly schedule while 20,000 obs/s are uploaded over HTTP (batch_seconds,
# ingest_loss_ratio against a window of the same length after the batch).
# The last line is one JSON object; -parts, -runs, -instances size it.
bench-analytics: build
	./bin/bdp-bench analytics -bdp bin/bdp

# 1,000 schedule apps (100 projects, 10 rooms each, one simulated edge
# device per project in the bench process, not in bdp serve) created and
# run on bdp serve (bench/apps.go); the last line is one JSON object with
# heap_bytes_per_app (bdp's heap after a collection, apps Running against
# created) and idle_cpu_percent (bdp's CPU over 30 s with no schedule
# boundary; idle_cpu_percent_no_apps: the same window before the run).
bench-apps: build
	./bin/bdp-bench apps -bdp bin/bdp

# Issue 12's figures (bench/files.go), on a fresh bdp serve whose embedded
# S3 store gets root keys from the bench: one 1 GiB upload through bdp with
# its VmRSS sampled every 20 ms (rss_growth_mib), then 5 interleaved rounds
# of a 100 MiB file through bdp (POST .../file; link + GET of the link)
# and with minio-go straight to the same store (PutObject, GetObject);
# upload_ratio and download_ratio are bdp's median MB/s over the direct
# median. Every download is checked (length, CRC-32C).
bench-files: build
	./bin/bdp-bench files -bdp bin/bdp

# Issue 22's figures (bench/ui.go): the browser UI in Debian's headless
# Chromium against a fresh bdp serve; the last line is one JSON object with
# first_plot_ms, live_p99_ms and assets_kib.
bench-ui: deps-test build
	./bin/bdp-bench ui -bdp bin/bdp

# Issue 21's figures (bench/storage*.go): a month of one-minute
# measurements pvlib ships on PyPI (scripts/fetch-pvlib-data.sh) stretched
# into a building's mix of 20M+ observations, loaded into the head, sealed
# by the sealer while a Kafka ingest runs, then bytes per observation
# sealed (overall and by kind), reads sealed vs rows, the sealer's
# throughput per CPU-second and a late-write test; the last line is one
# JSON object.
.PHONY: bench-storage
bench-storage: deps-test build
	bash scripts/kafka.sh run ./bin/bdp-bench storage -bdp bin/bdp -data "$$(bash scripts/fetch-pvlib-data.sh)"

# A bdp-bench scenario side by side (bench/compare.go): BASE (any git
# revision) is extracted with git archive into a temporary directory and
# built there; then `bdp-bench SCENARIO` runs ROUNDS times with each side's
# binaries, alternately, from each side's root as its bench-<name> target
# runs it, with the target's flags and ARGS (given to both sides alike; an
# old revision may lack a newer flag). The ingest scenario gets its Kafka
# broker from scripts/kafka.sh, one for every run (each run makes its own
# topic). Prints a table of both sides' medians and head/base; the last
# line is one JSON object (scenario, base, rounds, base_median,
# head_median, ratio).
BASE ?=
SCENARIO ?=
ROUNDS ?= 3
ARGS ?=
bench-compare: build
	@if [ -z "$(BASE)" ] || [ -z "$(SCENARIO)" ]; then \
		echo "usage: make bench-compare BASE=<rev> SCENARIO=<name> [ROUNDS=3] [ARGS='<flags>']"; exit 2; fi
	$(if $(filter ingest,$(SCENARIO)),bash scripts/kafka.sh run )./bin/bdp-bench compare -base '$(BASE)' -rounds $(ROUNDS) $(SCENARIO) $(BENCH_ARGS_$(SCENARIO)) $(ARGS)

# A package's Go benchmarks side by side (bench/compare_go.go): both
# sides' test binaries run COUNT times each, alternately, then benchstat
# (installed into ~/go/bin when missing) compares them.
PKG ?=
BENCH ?= .
COUNT ?= 6
BENCHTIME ?=
bench-compare-go:
	@if [ -z "$(BASE)" ] || [ -z "$(PKG)" ]; then \
		echo "usage: make bench-compare-go BASE=<rev> PKG=./<pkg> [BENCH=<regexp>] [COUNT=6] [BENCHTIME=1s]"; exit 2; fi
	@command -v benchstat >/dev/null || { echo "installing benchstat into $(HOME)/go/bin"; \
		GOBIN="$(HOME)/go/bin" $(GO) install golang.org/x/perf/cmd/benchstat@latest; }
	$(GO) build -o bin/bdp-bench ./cmd/bdp-bench
	./bin/bdp-bench compare-go -base '$(BASE)' -pkg '$(PKG)' -bench '$(BENCH)' -count $(COUNT) $(if $(BENCHTIME),-benchtime '$(BENCHTIME)')

clean:
	rm -rf bin
	find $(UI_DIST) -mindepth 1 ! -name README.md -exec rm -rf {} +
	rm -f coverage.out coverage.html *.coverprofile
	rm -rf $(VENV)
