package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"time"
)

// MQTTOptions shape the MQTT scenario (issue 9's figures); zero values
// take the sizes. Each part runs only when its size is positive,
// so one part can be measured alone.
type MQTTOptions struct {
	Binary string

	// Part 1, live out: Subscribers QoS 1 clients of project/{p}/# while
	// LiveRate observations/s go in through HTTP uploads for Duration,
	// spread over LiveDatapoints.
	Subscribers    int           // default 10; -1: skip part 1
	LiveRate       int           // default 20,000
	LiveDatapoints int           // default 1,000
	Duration       time.Duration // default 60 s
	// RawSubscribers: the subscribers are the bench's own minimal MQTT
	// 3.1.1 clients rather than paho, which spends some microseconds of
	// this process's CPU on each message, on a machine shared with the
	// server measured.
	RawSubscribers bool
	// Drain bounds the wait for messages still on their way once the
	// uploads stop; default 10 s.
	Drain time.Duration

	// Part 2, ingestion in: Publishers write-user clients each keeping
	// Window QoS 1 publishes of PerMessage observations in flight for
	// IngestDuration; then the same load as HTTP uploads.
	Publishers     int           // default 10; -1: skip part 2
	PerMessage     int           // default 100
	Window         int           // unacknowledged publishes per publisher; default 256
	IngestDuration time.Duration // default 20 s, for MQTT and for HTTP each

	// Part 3: IdleConns authenticated connections that do nothing.
	IdleConns int // default 10,000; -1: skip part 3
	// ConnectWorkers connect at once during part 3; default 64.
	ConnectWorkers int

	// PerfPrefix, if set, records bdp serve's CPU with `perf record`
	// during parts 1 and 2 into PerfPrefix.live.data and
	// PerfPrefix.ingest.data (bdp serve has no /debug/pprof).
	PerfPrefix string
	Progress   io.Writer // progress lines; nil for none
}

func (o *MQTTOptions) fill() {
	def := func(p *int, v int) {
		if *p == 0 {
			*p = v
		}
	}
	def(&o.Subscribers, 10)
	def(&o.LiveRate, 20_000)
	def(&o.LiveDatapoints, 1_000)
	def(&o.Publishers, 10)
	def(&o.PerMessage, 100)
	def(&o.Window, 256)
	def(&o.IdleConns, 10_000)
	def(&o.ConnectWorkers, 64)
	for _, d := range []struct {
		p *time.Duration
		v time.Duration
	}{{&o.Duration, time.Minute}, {&o.Drain, 10 * time.Second}, {&o.IngestDuration, 20 * time.Second}} {
		if *d.p == 0 {
			*d.p = d.v
		}
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
}

// mqttBench is one run: the platform, its broker's address and the two
// MQTT users every part logs in as.
type mqttBench struct {
	*Platform
	o      MQTTOptions
	broker string // host:port of the embedded broker
	reader mqttCredentials
	writer mqttCredentials
	http   *http.Client // keeps its connections: uploads must not measure handshakes
}

type mqttCredentials struct{ username, password string }

// MQTT measures the embedded broker of bdp serve: live data out to QoS 1
// subscribers under HTTP uploads, QoS 1 ingestion beside HTTP ingestion,
// and the cost of idle authenticated connections. The result holds each
// part's figures and the load of the machine.
func MQTT(ctx context.Context, o MQTTOptions) (map[string]any, error) {
	o.fill()
	// 10,000 connections are 10,000 descriptors here and as many in bdp
	// serve, which inherits this limit.
	nofile, err := raiseNoFile()
	if err != nil {
		return nil, err
	}
	if o.IdleConns > 0 && nofile < uint64(o.IdleConns)+1024 {
		return nil, fmt.Errorf("RLIMIT_NOFILE is %d, too low for %d connections: raise the hard limit", nofile, o.IdleConns)
	}
	p, err := Start(ctx, Options{Binary: o.Binary})
	if err != nil {
		return nil, err
	}
	defer p.Close()
	b := &mqttBench{Platform: p, o: o, http: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}}
	if err := b.setUp(ctx); err != nil {
		return nil, err
	}
	result := map[string]any{"scenario": "mqtt", "rlimit_nofile": nofile, "load_before": loadAverage()}
	// The idle connections go first, on a fresh heap: parts 1 and 2
	// leave garbage behind that would blur the per-connection figure.
	if o.IdleConns > 0 {
		if err := b.idle(ctx, result); err != nil {
			return nil, fmt.Errorf("idle connections: %w", err)
		}
	}
	if o.Subscribers > 0 {
		if err := b.measured(ctx, "live", result, b.live); err != nil {
			return nil, fmt.Errorf("live out: %w", err)
		}
	}
	if o.Publishers > 0 {
		if err := b.measured(ctx, "ingest", result, b.ingest); err != nil {
			return nil, fmt.Errorf("ingestion in: %w", err)
		}
	}
	result["load_after"] = loadAverage()
	return result, nil
}

// setUp finds the broker's address and creates a read and a write MQTT
// user as the company admin (who created the project and so may).
func (b *mqttBench) setUp(ctx context.Context) error {
	raw, err := os.ReadFile(filepath.Join(b.dir, "addresses.json"))
	if err != nil {
		return err
	}
	var addrs map[string]string
	if err := json.Unmarshal(raw, &addrs); err != nil {
		return err
	}
	if b.broker = addrs["mqtt"]; b.broker == "" {
		return fmt.Errorf("addresses.json has no mqtt address: %s", raw)
	}
	for _, u := range []struct {
		rights string
		dst    *mqttCredentials
	}{{"read", &b.reader}, {"write", &b.writer}} {
		*u.dst = mqttCredentials{username: "bench-" + u.rights, password: "bench-mqtt-password-" + u.rights}
		err := b.Do(ctx, "POST", "/v2/project/"+strconv.FormatInt(b.ProjectID, 10)+"/mqttuser", map[string]any{
			"username": u.dst.username, "password": u.dst.password, "rights": u.rights, "validity": 7200}, nil, false)
		if err != nil {
			return err
		}
	}
	return nil
}

func (b *mqttBench) progress(format string, args ...any) {
	fmt.Fprintf(b.o.Progress, time.Now().Format("15:04:05 ")+format+"\n", args...)
}

// measured runs one part with bdp serve's CPU recorded (-perf) and
// reports the CPU seconds bdp serve and this process spent in it: on a
// small machine the clients compete with the server they measure.
func (b *mqttBench) measured(ctx context.Context, part string, result map[string]any, run func(context.Context, map[string]any) error) error {
	stop := b.perf(part)
	defer stop()
	bdp0, self0, err := b.cpuSeconds(ctx)
	if err != nil {
		return err
	}
	if err := run(ctx, result); err != nil {
		return err
	}
	bdp1, self1, err := b.cpuSeconds(ctx)
	if err != nil {
		return err
	}
	result[part+"_bdp_cpu_s"], result[part+"_bench_cpu_s"] = round(bdp1-bdp0), round(self1-self0)
	return nil
}

// cpuSeconds are the CPU seconds used so far by bdp serve (its /metrics)
// and by this process.
func (b *mqttBench) cpuSeconds(ctx context.Context) (bdp, self float64, err error) {
	m, err := b.metrics(ctx, "process_cpu_seconds_total")
	if err != nil {
		return 0, 0, err
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, 0, fmt.Errorf("getrusage: %w", err)
	}
	seconds := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return m["process_cpu_seconds_total"], seconds(ru.Utime) + seconds(ru.Stime), nil
}

// perf records bdp serve's CPU until the returned func is called, if a
// prefix was given. A failure to start perf is reported, not fatal: the
// figures do not depend on it.
func (b *mqttBench) perf(part string) (stop func()) {
	if b.o.PerfPrefix == "" {
		return func() {}
	}
	out := b.o.PerfPrefix + "." + part + ".data"
	cmd := exec.Command("perf", "record", "-F", "499", "-g", "-o", out, "-p", strconv.Itoa(b.cmd.Process.Pid))
	cmd.Stdout, cmd.Stderr = b.o.Progress, b.o.Progress
	if err := cmd.Start(); err != nil {
		b.progress("perf record: %v", err)
		return func() {}
	}
	return func() {
		_ = cmd.Process.Signal(os.Interrupt)
		// perf exits through the interrupt; the file tells whether it
		// recorded.
		_ = cmd.Wait()
		if st, err := os.Stat(out); err != nil || st.Size() == 0 {
			b.progress("perf record wrote nothing to %s", out)
			return
		}
		b.progress("CPU profile of bdp serve during %s: %s (perf report -i %s)", part, out, out)
	}
}

// raiseNoFile lifts the soft descriptor limit to the hard one and returns
// it.
func raiseNoFile() (uint64, error) {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return 0, fmt.Errorf("getrlimit: %w", err)
	}
	if l.Cur < l.Max {
		l.Cur = l.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
			return 0, fmt.Errorf("setrlimit: %w", err)
		}
	}
	return l.Cur, nil
}

// metrics reads several series of bdp's /metrics at once (missing: 0).
func (b *mqttBench) metrics(ctx context.Context, series ...string) (map[string]float64, error) {
	return scrapeMetrics(ctx, b.http, b.Base, series...)
}

// scrapeMetrics reads the series wanted from bdp serve's /metrics at base.
func scrapeMetrics(ctx context.Context, client *http.Client, base string, series ...string) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", base+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	res, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	text, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, err
	}
	if res.StatusCode != 200 {
		return nil, errors.New("/metrics: " + res.Status)
	}
	return parseMetrics(text, series), nil
}

// parseMetrics picks the wanted series (name and labels exactly as
// exposed) out of Prometheus's text format.
func parseMetrics(text []byte, series []string) map[string]float64 {
	out := make(map[string]float64, len(series))
	for _, line := range bytes.Split(text, []byte("\n")) {
		i := bytes.LastIndexByte(line, ' ')
		if i <= 0 || line[0] == '#' {
			continue
		}
		name := string(line[:i])
		if !slices.Contains(series, name) {
			continue
		}
		if v, err := strconv.ParseFloat(string(line[i+1:]), 64); err == nil {
			out[name] = v
		}
	}
	return out
}
