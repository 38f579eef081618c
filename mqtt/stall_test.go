package mqtt

import (
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	pahov3 "github.com/eclipse/paho.mqtt.golang"

	"github.com/openbdp/bdp/codec"
	"github.com/openbdp/bdp/pipeline"
)

// stuckConn is a client connection that stops reading once paused, with
// a small receive buffer, so the broker's writes to it soon block.
type stuckConn struct {
	net.Conn
	paused  chan struct{}
	release chan struct{}
}

func (c *stuckConn) Read(p []byte) (int, error) {
	select {
	case <-c.paused:
		<-c.release
		return 0, net.ErrClosed
	default:
		return c.Conn.Read(p)
	}
}

// A subscriber that stops reading does not hold up live data for the
// others: mochi writes a client's packets under the lock that also gives
// out its packet ids, so a write blocked on a full socket would block
// every publish to it, live data for everyone, for as long as the client
// keeps its connection alive. A write that does not finish within the
// broker's write timeout closes the connection instead.
func TestLiveSurvivesAStuckSubscriber(t *testing.T) {
	e := newLiveEnv(t, liveEnvConfig{embedded: true})
	e.account("reader", e.p1, e.adminA, false)
	e.account("stuck", e.p1, e.adminA, false)
	healthy := e.subscribe("reader", codec.ProjectTopicPrefix(e.p1)+"#")

	stuck := &stuckConn{paused: make(chan struct{}), release: make(chan struct{})}
	t.Cleanup(func() { close(stuck.release) })
	opts := pahov3.NewClientOptions().AddBroker("tcp://" + e.addr).SetClientID("stuck-sub").
		SetUsername("stuck").SetPassword("pw").SetAutoReconnect(false).
		SetKeepAlive(30 * time.Second).SetPingTimeout(time.Hour).
		SetCustomOpenConnectionFn(func(u *url.URL, _ pahov3.ClientOptions) (net.Conn, error) {
			c, err := net.Dial("tcp", u.Host)
			if err != nil {
				return nil, err
			}
			_ = c.(*net.TCPConn).SetReadBuffer(4096)
			stuck.Conn = c
			return stuck, nil
		})
	sc := pahov3.NewClient(opts)
	if tok := sc.Connect(); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		t.Fatalf("connect: %v", tok.Error())
	}
	if tok := sc.Subscribe(codec.ProjectTopicPrefix(e.p1)+"#", 1, func(pahov3.Client, pahov3.Message) {}); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		t.Fatalf("subscribe: %v", tok.Error())
	}
	close(stuck.paused) // from now on it reads nothing

	// About 7 MB of live data for it (long dataPointIDs), under mochi's
	// limit of unacknowledged messages per client.
	long := strings.Repeat("x", 500)
	const n = 12_000
	obs := make([]pipeline.Observation, n)
	for i := range obs {
		obs[i] = obsAt(e.p1, long, i, float64(i))
	}
	start := time.Now()
	e.upload(obs...)
	// The write to the stuck client times out (clientWriteTimeout), its
	// connection closes, and live data flows on, well before mochi's
	// keepalive deadline (45 s).
	for e.metric("bdp_mqtt_live_published_total") < n {
		if time.Since(start) > 3*clientWriteTimeout {
			t.Fatalf("live data stalled behind a subscriber that stopped reading: %v of %d published in %v",
				e.metric("bdp_mqtt_live_published_total"), n, time.Since(start))
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("published after %v", time.Since(start))
	// A burst after the stall may overflow the healthy client's own queue
	// (counted drops, best effort); what comes next reaches it.
	for len(healthy.collect(0)) > 0 {
	}
	e.upload(obsAt(e.p1, "marker", 0, 1))
	if got := healthy.collect(1); len(got) != 1 || got[0].topic != codec.DatapointTopic(e.p1, "marker") {
		t.Fatalf("after the stuck subscriber, the healthy one got %v", got)
	}
}
