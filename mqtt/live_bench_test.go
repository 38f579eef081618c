package mqtt

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/openbdp/bdp/codec"
	"github.com/openbdp/bdp/pipeline"
)

// BenchmarkLiveDelivery measures the embedded broker's cost of live data
// out as the figure loads it: 10 QoS 1 subscribers of a project,
// stored batches of 200 observations spread over 1,000 datapoints. One op
// is one message delivered to one subscriber and acknowledged.
//
// The subscribers run in a child process (this test binary again), so
// cpu-ns/delivery (this process's user and system CPU) and allocs/op
// count the broker's side only: the live publisher, the ACL and TagAuth
// checks, mochi's packet ids, in-flight records, writes and PUBACK reads.
// Unlike ns/op they hold on a machine busy with other work.
func BenchmarkLiveDelivery(b *testing.B) {
	const subscribers, datapoints, batch = 10, 1_000, 200
	e := newLiveEnv(b, liveEnvConfig{embedded: true})
	e.account("reader", e.p1, e.tagged, false)
	// The tagged creator reads rooms only: every datapoint is a room, so
	// everything is delivered, each delivery judged by its TagAuth.
	subs := startLiveSubscribers(b, e.addr, "reader", codec.ProjectTopicPrefix(e.p1)+"#", subscribers)

	base := time.Now().UTC().Truncate(time.Hour).Add(-24 * time.Hour)
	next := 0
	feed := func(n int) {
		for n > 0 {
			size := min(n, batch)
			s := pipeline.Stored{Obs: make([]pipeline.Observation, size), Sources: make([]pipeline.Source, size)}
			for i := range size {
				k := next + i
				s.Obs[i] = pipeline.Observation{ProjectID: e.p1, DataPointID: "room-" + strconv.Itoa(k%datapoints),
					Time: base.Add(time.Duration(k/datapoints) * time.Second), Value: float64(k)}
				s.Sources[i] = pipeline.SourceHTTP
			}
			next += size
			n -= size
			e.live.DeliverStored(s)
		}
	}
	// A first round loads the Gate's decisions and the topics.
	feed(datapoints)
	subs.await(b, next)

	obs := max(1, b.N/subscribers)
	b.ReportAllocs()
	b.ResetTimer()
	cpu := processCPU()
	// At most 800 observations a subscriber in flight: under mochi's and
	// the writers' per-client queue (1024), so none is dropped.
	for sent := 0; sent < obs; {
		n := min(800, obs-sent)
		feed(n)
		sent += n
		subs.await(b, next)
	}
	b.StopTimer()
	deliveries := float64(obs * subscribers)
	b.ReportMetric(float64(processCPU()-cpu)/deliveries, "cpu-ns/delivery")
	for _, m := range []string{"bdp_mqtt_live_dropped_total", "bdp_mqtt_messages_dropped_total", "bdp_mqtt_inflight_dropped_total"} {
		if v := e.metric(m); v != 0 {
			b.Fatalf("%s = %v: the benchmark must deliver everything", m, v)
		}
	}
}

// processCPU is this process's user and system CPU time so far, in ns.
func processCPU() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// liveSubscribersEnv, when set, makes the test binary run
// runLiveSubscribers instead of the tests: "addr user filter n".
const liveSubscribersEnv = "BDP_TEST_LIVE_SUBSCRIBERS"

// liveSubscribers is the child process of startLiveSubscribers.
type liveSubscribers struct {
	stdin io.Writer
	out   *bufio.Reader
}

// startLiveSubscribers starts n minimal QoS 1 subscribers (MQTT 3.1.1,
// password "pw") in a child process and returns once all are subscribed.
func startLiveSubscribers(tb testing.TB, addr, user, filter string, n int) *liveSubscribers {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s %s %s %d", liveSubscribersEnv, addr, user, filter, n))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = stdin.Close(); _ = cmd.Wait() })
	s := &liveSubscribers{stdin: stdin, out: bufio.NewReader(stdout)}
	if line, err := s.out.ReadString('\n'); err != nil || line != "ready\n" {
		tb.Fatalf("live subscribers: %q, %v", line, err)
	}
	return s
}

// await waits until every subscriber has received total messages.
func (s *liveSubscribers) await(tb testing.TB, total int) {
	tb.Helper()
	if _, err := fmt.Fprintln(s.stdin, total); err != nil {
		tb.Fatal(err)
	}
	if line, err := s.out.ReadString('\n'); err != nil || line != "ok\n" {
		tb.Fatalf("live subscribers: %q, %v", line, err)
	}
}

// runLiveSubscribers is the child's side: it connects, subscribes, says
// "ready", then for each total read from stdin answers "ok" once every
// subscriber has received that many messages (or "timeout" after 30 s).
func runLiveSubscribers(spec string) int {
	var addr, user, filter string
	var n int
	if _, err := fmt.Sscan(spec, &addr, &user, &filter, &n); err != nil {
		fmt.Fprintln(os.Stderr, "live subscribers:", err)
		return 2
	}
	counts := make([]atomic.Int64, n)
	var wg sync.WaitGroup
	for i := range n {
		conn, err := rawSubscriber(addr, fmt.Sprintf("bench-sub-%d", i), user, filter)
		if err != nil {
			fmt.Fprintln(os.Stderr, "live subscribers:", err)
			return 1
		}
		wg.Add(1)
		go func() { defer wg.Done(); _ = countPublishes(conn, &counts[i]) }()
	}
	fmt.Println("ready")
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		total, _ := strconv.ParseInt(strings.TrimSpace(in.Text()), 10, 64)
		deadline := time.Now().Add(30 * time.Second)
		for i := 0; i < n; {
			if counts[i].Load() >= total {
				i++
				continue
			}
			if time.Now().After(deadline) {
				fmt.Println("timeout")
				return 1
			}
			time.Sleep(100 * time.Microsecond)
		}
		fmt.Println("ok")
	}
	return 0
}

// rawSubscriber connects (MQTT 3.1.1, clean session, password "pw") and
// subscribes to filter at QoS 1, returning after the SUBACK.
func rawSubscriber(addr, clientID, user, filter string) (net.Conn, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	str := func(b []byte, s string) []byte { return append(binary.BigEndian.AppendUint16(b, uint16(len(s))), s...) }
	body := str(str(str([]byte{0, 4, 'M', 'Q', 'T', 'T', 4, 0xC2, 0, 0}, clientID), user), "pw")
	connect := append(appendRemaining([]byte{0x10}, len(body)), body...)
	sub := str([]byte{0, 1}, filter)
	sub = append(sub, 1)
	subscribe := append(appendRemaining([]byte{0x82}, len(sub)), sub...)
	if _, err := c.Write(append(connect, subscribe...)); err != nil {
		c.Close()
		return nil, err
	}
	var acks [4 + 5]byte // CONNACK, SUBACK
	if _, err := io.ReadFull(c, acks[:]); err != nil || acks[0] != 0x20 || acks[3] != 0 || acks[4] != 0x90 || acks[8] > 2 {
		c.Close()
		return nil, fmt.Errorf("subscribe %s: % x %v", clientID, acks, err)
	}
	return c, nil
}

// countPublishes reads PUBLISHes until the connection ends, counting each
// and acknowledging each (the PUBACKs of what one read brought go out in
// one write).
func countPublishes(c net.Conn, count *atomic.Int64) error {
	r := bufio.NewReaderSize(c, 64<<10)
	w := bufio.NewWriterSize(c, 16<<10)
	var buf []byte
	for {
		header, err := r.ReadByte()
		if err != nil {
			return err
		}
		n, err := binary.ReadUvarint(r)
		if err != nil {
			return err
		}
		buf = append(buf[:0], make([]byte, n)...)
		if _, err := io.ReadFull(r, buf); err != nil {
			return err
		}
		if header>>4 != 3 {
			continue
		}
		if len(buf) < 2 || header>>1&3 != 1 {
			return errors.New("not a QoS 1 PUBLISH")
		}
		id := buf[2+int(binary.BigEndian.Uint16(buf)):]
		_, _ = w.Write([]byte{0x40, 2, id[0], id[1]})
		count.Add(1)
		if r.Buffered() == 0 {
			if err := w.Flush(); err != nil {
				return err
			}
		}
	}
}
