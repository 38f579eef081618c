package bench

import (
	"context"
	"time"
)

// Rounds counts the rounds acknowledged so far.
func (l *Load) Rounds() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.rounds
}

// CommandP99 is the 99th percentile of the commands' times so far.
func (l *Load) CommandP99() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return percentile(l.commands, 99)
}

// UploadPercentile is the p-th percentile of the acknowledged HTTP
// uploads' times so far.
func (l *Load) UploadPercentile(p float64) time.Duration {
	return l.PathPercentile(PathHTTP, p)
}

// PathPercentile is the p-th percentile of a path's acknowledgements so
// far: an upload's answer, a Kafka message's batch acknowledged by the
// brokers (from its hand-over to the writer), a publish's PUBACK.
func (l *Load) PathPercentile(path Path, p float64) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return percentile(l.paths[path].latencies, p)
}

// PathFigures are the JSON keys of each path that carries sources:
// <path>_obs_per_s (acknowledged, from its first send to its last
// acknowledgement), <path>_p50_ms, <path>_p99_ms, <path>_observations,
// <path>_sources.
func (l *Load) PathFigures() map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string]any{}
	for _, p := range Paths() {
		pl, sources := l.paths[p], len(l.onPath[p])
		if sources == 0 {
			continue
		}
		key := string(p) + "_"
		rate := 0.0
		if span := pl.last.Sub(pl.first).Seconds(); span > 0 {
			rate = round3(float64(pl.observations) / span)
		}
		out[key+"obs_per_s"] = rate
		out[key+"p50_ms"] = ms(percentile(pl.latencies, 50))
		out[key+"p99_ms"] = ms(percentile(pl.latencies, 99))
		out[key+"observations"] = pl.observations
		out[key+"sources"] = sources
	}
	return out
}

// pathMark is where the last progress line left a path.
type pathMark struct{ observations, latencies int }

// Progress prints, every interval until ctx ends, a line per path that
// carries sources: the observations per second acknowledged since the
// last line and the latency percentiles of that interval (HTTP's line
// adds the commands'), the harness's report while it runs (the JSON
// object comes at the end).
func (l *Load) Progress(ctx context.Context, every time.Duration, print func(format string, a ...any)) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	marks := map[Path]pathMark{}
	l.mu.Lock()
	for p, pl := range l.paths {
		marks[p] = pathMark{pl.observations, len(pl.latencies)}
	}
	lastCmd, last := len(l.commands), time.Now()
	l.mu.Unlock()
	units := map[Path]string{PathHTTP: "uploads", PathKafka: "messages", PathMQTT: "publishes"}
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			seconds := now.Sub(last).Seconds()
			l.mu.Lock()
			cmds := l.commands[lastCmd:]
			c99 := percentile(cmds, 99)
			lastCmd = len(l.commands)
			type line struct {
				path     Path
				obs      int
				p50, p99 time.Duration
				n        int
			}
			var lines []line
			for _, p := range Paths() {
				if len(l.onPath[p]) == 0 {
					continue
				}
				pl, m := l.paths[p], marks[p]
				lats := pl.latencies[m.latencies:]
				lines = append(lines, line{p, pl.observations - m.observations, percentile(lats, 50), percentile(lats, 99), len(lats)})
				marks[p] = pathMark{pl.observations, len(pl.latencies)}
			}
			l.mu.Unlock()
			for _, ln := range lines {
				if ln.path == PathHTTP {
					print("load: http uploads %.0f obs/s, p50 %.1f ms, p99 %.1f ms (%d uploads); commands p99 %.1f ms (%d)",
						float64(ln.obs)/seconds, ms(ln.p50), ms(ln.p99), ln.n, ms(c99), len(cmds))
					continue
				}
				print("load: %s %.0f obs/s, p50 %.1f ms, p99 %.1f ms (%d %s)",
					ln.path, float64(ln.obs)/seconds, ms(ln.p50), ms(ln.p99), ln.n, units[ln.path])
			}
			if len(l.onPath[PathHTTP]) == 0 {
				print("load: commands p99 %.1f ms (%d)", ms(c99), len(cmds))
			}
			last = now
		}
	}
}
