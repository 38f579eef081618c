package node

import (
	"bufio"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// GCPercent is bdp serve's GOGC unless the environment sets one, and what
// bdp-bench vdp runs its in-process engine with. The routing of
// observations to actors and live MQTT delivery make garbage at every
// message, and each collection's mark phase takes the CPU that PostgreSQL,
// on the same machine, needs for the commits everything waits for:
//   - at Go's default of 100, live MQTT out's p99 was 24.6 and 17.6 ms
//     against 15.1 and 11.2 ms at 200 (10 QoS 1 subscribers under 20,000
//     observations/s, bdp-bench mqtt -parts live -raw-subscribers);
//   - at 200, 100,000 virtual datapoints under 100,000 observations/s
//     collected every 10-20 s, and the 10 s of the feed holding a
//     collection had an output p99 of 60-85 ms against 12-14 ms for the
//     others (bdp-bench vdp -vdps 100000 -rate 100000, latency_p99_ms_by_10s);
//     at 400, two collections a minute, 40-60 ms and 12-14 ms.
//
// The price is a heap allowed to grow to five times its live size between
// collections: about 1.9 GB at 100,000 running virtual datapoints.
// TuneGC's memory limit bounds that on a small machine.
const GCPercent = 400

// TuneGC sets the garbage collector as bdp serve runs it, unless the
// environment does: GOGC GCPercent, and unless GOMEMLIMIT is set, a soft
// memory limit of half the machine's memory, past which the collector runs
// more often rather than let the heap grow (when /proc/meminfo tells the
// machine's memory). It returns the GOGC in effect and a func that puts
// back what it changed.
func TuneGC(getenv func(string) string) (gogc string, restore func()) {
	var undo []func()
	restore = func() {
		for _, u := range undo {
			u()
		}
	}
	gogc = getenv("GOGC")
	if gogc == "" {
		prev := debug.SetGCPercent(GCPercent)
		undo = append(undo, func() { debug.SetGCPercent(prev) })
		gogc = strconv.Itoa(GCPercent)
	}
	if getenv("GOMEMLIMIT") == "" {
		if total, ok := memTotal("/proc/meminfo"); ok {
			prev := debug.SetMemoryLimit(total / 2)
			undo = append(undo, func() { debug.SetMemoryLimit(prev) })
		}
	}
	return gogc, restore
}

// memTotal reads MemTotal, in bytes, from a file in the format of
// /proc/meminfo.
func memTotal(path string) (int64, bool) {
	f, err := os.Open(path)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:")
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
		return kb * 1024, err == nil && kb > 0
	}
	return 0, false
}
