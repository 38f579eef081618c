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
	seen map[string]map[time.Time]bool // datapoint -> times received
}

// SubscribeLive connects the counter to the broker at url (tcp://host:port).
func (l *Load) SubscribeLive(ctx context.Context, url string) (*LiveCounter, error) {
	user, password := fmt.Sprintf("load-live-%d", time.Now().UnixNano()), "load-live-password-12"
	body := fmt.Sprintf(`{"username":%q,"password":%q,"rights":"read","validity":7200}`, user, password)
	if err := l.do(ctx, "POST", fmt.Sprintf("/v2/project/%d/mqttuser", l.opts.ProjectID), body, nil); err != nil {
		return nil, fmt.Errorf("live: create the MQTT user: %w", err)
	}
	c := &LiveCounter{load: l, seen: map[string]map[time.Time]bool{}}
	prefix := codec.ProjectTopicPrefix(l.opts.ProjectID) + "datapoint/"
	opts := paho.NewClientOptions().AddBroker(url).SetClientID(user).SetUsername(user).SetPassword(password).
		SetCleanSession(true).SetAutoReconnect(true).SetConnectTimeout(10 * time.Second).SetOrderMatters(false)
	c.client = paho.NewClient(opts)
	if err := wait(ctx, c.client.Connect()); err != nil {
		return nil, fmt.Errorf("live: connect: %w", err)
	}
	err := wait(ctx, c.client.Subscribe(prefix+"#", 1, func(_ paho.Client, m paho.Message) {
		var p struct {
			Time time.Time `json:"time"`
		}
		if json.Unmarshal(m.Payload(), &p) != nil {
			return
		}
		dp := strings.TrimPrefix(m.Topic(), prefix)
		c.mu.Lock()
		if c.seen[dp] == nil {
			c.seen[dp] = map[time.Time]bool{}
		}
		c.seen[dp][p.Time.UTC()] = true
		c.mu.Unlock()
	}))
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("live: subscribe: %w", err)
	}
	return c, nil
}

// Ratio is what was received live of what was stored for the rounds
// [from, to): every source's observation and every running datapoint's
// output (the stopped ones' up to their stop). It waits up to within for
// stragglers.
func (c *LiveCounter) Ratio(from, to int, within time.Duration) float64 {
	l := c.load
	l.mu.Lock()
	stopped := maps.Clone(l.stopped)
	l.mu.Unlock()
	expected := 0
	var names []string
	var ends []int
	for s := range l.opts.Sources {
		names, ends = append(names, l.source(s)), append(ends, to)
	}
	for i := range l.opts.VDPs {
		end := to
		if r, ok := stopped[i]; ok {
			end = min(end, r)
		}
		names, ends = append(names, l.output(i)), append(ends, end)
	}
	for i := range names {
		expected += max(0, ends[i]-from)
	}
	if expected == 0 {
		return 1
	}
	count := func() int {
		c.mu.Lock()
		defer c.mu.Unlock()
		n := 0
		for i, name := range names {
			for r := from; r < ends[i]; r++ {
				if c.seen[name][l.roundTime(r)] {
					n++
				}
			}
		}
		return n
	}
	got := count()
	for deadline := time.Now().Add(within); got < expected && time.Now().Before(deadline); got = count() {
		time.Sleep(100 * time.Millisecond)
	}
	return float64(got) / float64(expected)
}

// Close disconnects the counter.
func (c *LiveCounter) Close() { c.client.Disconnect(100) }
