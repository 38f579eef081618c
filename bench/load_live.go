package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"sync"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/openbdp/bdp/codec"
)

// LiveCounter counts the live messages of a load's datapoints at an MQTT
// broker (the deployment's external Mosquitto, or a node's embedded
// broker), as an integrator's subscriber receives them: QoS 1 on
// project/<id>/#, with a read MQTT user the harness creates through the
// API.
type LiveCounter struct {
	load   *Load
	client paho.Client

	mu   sync.Mutex
	seen map[string][]uint64 // datapoint -> the rounds received, a bit each
}

// SubscribeLive connects the counter to the broker at url (tcp://host:port).
func (l *Load) SubscribeLive(ctx context.Context, url string) (*LiveCounter, error) {
	user, password, err := l.createMQTTUser(ctx, "read")
	if err != nil {
		return nil, fmt.Errorf("live: %w", err)
	}
	c := &LiveCounter{load: l, seen: map[string][]uint64{}}
	prefix := codec.ProjectTopicPrefix(l.opts.ProjectID) + "datapoint/"
	opts := paho.NewClientOptions().AddBroker(url).SetClientID(user).SetUsername(user).SetPassword(password).
		SetCleanSession(true).SetAutoReconnect(true).SetConnectTimeout(10 * time.Second).SetOrderMatters(false)
	c.client = paho.NewClient(opts)
	if err := wait(ctx, c.client.Connect()); err != nil {
		return nil, fmt.Errorf("live: connect: %w", err)
	}
	err = wait(ctx, c.client.Subscribe(prefix+"#", 1, func(_ paho.Client, m paho.Message) {
		var p struct {
			Time time.Time `json:"time"`
		}
		if json.Unmarshal(m.Payload(), &p) != nil {
			return
		}
		r, ok := l.roundAt(p.Time)
		if !ok {
			return
		}
		dp := strings.TrimPrefix(m.Topic(), prefix)
		c.mu.Lock()
		bits := c.seen[dp]
		for len(bits) <= r/64 {
			bits = append(bits, 0)
		}
		bits[r/64] |= 1 << (r % 64)
		c.seen[dp] = bits
		c.mu.Unlock()
	}))
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("live: subscribe: %w", err)
	}
	return c, nil
}

// roundAt is the round whose time t is, if it is one.
func (l *Load) roundAt(t time.Time) (int, bool) {
	d := t.Sub(l.start)
	if d < 0 || d%time.Minute != 0 {
		return 0, false
	}
	return int(d / time.Minute), true
}

func (c *LiveCounter) received(dp string, r int) bool {
	bits := c.seen[dp]
	return r/64 < len(bits) && bits[r/64]&(1<<(r%64)) != 0
}

// Ratio is what was received live of what was stored for the rounds
// [from, to): every source's observation and every running datapoint's
// output (the stopped ones' up to their stop; none where it has none). It
// waits up to within for stragglers.
func (c *LiveCounter) Ratio(from, to int, within time.Duration) float64 {
	l := c.load
	l.mu.Lock()
	stopped := maps.Clone(l.stopped)
	l.mu.Unlock()
	var want []stored
	for s := range l.opts.Sources {
		for r := from; r < to; r++ {
			want = append(want, stored{l.source(s), r})
		}
	}
	for i := range l.opts.VDPs {
		end := to
		if r, ok := stopped[i]; ok {
			end = min(end, r)
		}
		for r := from; r < end; r++ {
			if _, ok := l.expected(i, r); ok {
				want = append(want, stored{l.output(i), r})
			}
		}
	}
	return c.receivedOf(want, within)
}

// StoredRatio is what was received live of what the deployment stored
// for the rounds [from, to), read back: where outputs are missing, Ratio
// counts them as not received, this leaves them out. It waits up to
// within for stragglers.
func (c *LiveCounter) StoredRatio(ctx context.Context, from, to int, within time.Duration) (float64, error) {
	l := c.load
	var names []string
	for s := range l.opts.Sources {
		names = append(names, l.source(s))
	}
	for i := range l.opts.VDPs {
		names = append(names, l.output(i))
	}
	var want []stored
	for _, name := range names {
		pts, err := l.series(ctx, name)
		if err != nil {
			return 0, fmt.Errorf("live: %w", err)
		}
		for _, p := range pts {
			if r, ok := l.roundAt(p.Time); ok && r >= from && r < to {
				want = append(want, stored{name, r})
			}
		}
	}
	return c.receivedOf(want, within), nil
}

// stored is a datapoint's observation or output at a round.
type stored struct {
	name  string
	round int
}

// receivedOf is the share of want received, waiting up to within for
// the rest.
func (c *LiveCounter) receivedOf(want []stored, within time.Duration) float64 {
	if len(want) == 0 {
		return 1
	}
	count := func() int {
		c.mu.Lock()
		defer c.mu.Unlock()
		n := 0
		for _, w := range want {
			if c.received(w.name, w.round) {
				n++
			}
		}
		return n
	}
	got := count()
	for deadline := time.Now().Add(within); got < len(want) && time.Now().Before(deadline); got = count() {
		time.Sleep(100 * time.Millisecond)
	}
	return float64(got) / float64(len(want))
}

// Close disconnects the counter.
func (c *LiveCounter) Close() { c.client.Disconnect(100) }
