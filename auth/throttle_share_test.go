package auth

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openbdp/bdp/clock"
	"github.com/openbdp/bdp/store"
	"github.com/openbdp/bdp/store/pgcluster"
)

// The database of the sharing tests starts with the first of them, not
// for every run of this package, whose other tests need none.
var testDB struct {
	once    sync.Once
	cluster *pgcluster.Cluster
	stop    func()
	err     error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if testDB.stop != nil {
		testDB.stop()
	}
	os.Exit(code)
}

// testDatabase returns the URL of a new database of the test cluster.
func testDatabase(t *testing.T) string {
	t.Helper()
	testDB.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		testDB.cluster, testDB.stop, testDB.err = pgcluster.StartForTests(ctx)
	})
	if testDB.err != nil {
		t.Fatalf("start PostgreSQL for tests: %v", testDB.err)
	}
	return testDB.cluster.TestDatabase(t)
}

// shareNode is one process of a cluster: a throttle sharing its failures
// through a store of its own (a pool, a LISTEN connection) on the common
// database.
type shareNode struct {
	th    *Throttle
	share *Share
}

// newShareNodes starts n nodes on url, on one clock, with cfg, and waits
// until each is listening; sharing false leaves the throttles without
// hooks (a node that does not publish, though it listens).
func newShareNodes(t *testing.T, url string, n int, cfg ThrottleConfig, clk *clock.Fake, sharing bool) []shareNode {
	t.Helper()
	nodes := make([]shareNode, n)
	for i := range nodes {
		st, err := store.Open(context.Background(), url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(st.Close)
		c := cfg
		c.Now = clk.Now
		share := NewShare(st, nil)
		if sharing {
			share.Hook(&c)
		}
		th, err := NewThrottle(c)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(share.Start(context.Background(), th)) // before st.Close: cleanups run last first
		nodes[i] = shareNode{th: th, share: share}
	}
	for i, nd := range nodes {
		select {
		case <-nd.share.Listening():
		case <-time.After(10 * time.Second):
			t.Fatalf("node %d never listened", i)
		}
	}
	return nodes
}

// waitFor polls cond until it holds, failing the test after 10 s: the
// notices travel through PostgreSQL, so their arrival is awaited, not
// timed.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func newShareClock() *clock.Fake { return clock.NewFake(time.Date(2026, 11, 24, 8, 0, 0, 0, time.UTC)) }

// Failures split over two nodes reach the limit on both: the node that
// saw fewer refuses as well, for the account key (emails in any case, an
// MQTT key with its NUL) and for the address key (an IPv6 /64).
func TestShareHoldsTheLimitsAcrossNodes(t *testing.T) {
	url := testDatabase(t)
	addrOf := func(i int) netip.Addr { return netip.AddrFrom4([4]byte{10, 0, 0, byte(i)}) }
	v6 := func(i int) netip.Addr { return netip.MustParseAddr(fmt.Sprintf("2001:db8:0:7::%x", i)) }
	tests := []struct {
		name    string
		cfg     ThrottleConfig
		attempt func(i int) (string, netip.Addr) // the i-th failure's, on either node
		probe   func() (string, netip.Addr)      // a fresh attempt the limit must stop
		scope   string
		nA, nB  int // failures on A and on B
	}{
		{"account", ThrottleConfig{AccountFailures: 4, AddressFailures: 1000},
			func(i int) (string, netip.Addr) { return []string{"Ada@acme.test", "ada@ACME.test"}[i%2], addrOf(i) },
			func() (string, netip.Addr) { return "ada@acme.test", addrOf(200) }, ScopeAccount, 3, 1},
		{"MQTT account", ThrottleConfig{AccountFailures: 4, AddressFailures: 1000},
			func(i int) (string, netip.Addr) { return "mqtt\x00Edge-7", addrOf(i) },
			func() (string, netip.Addr) { return "mqtt\x00edge-7", addrOf(200) }, ScopeAccount, 1, 3},
		{"address /64", ThrottleConfig{AccountFailures: 1000, AddressFailures: 4},
			func(i int) (string, netip.Addr) { return fmt.Sprintf("u%d@acme.test", i), v6(i + 1) },
			func() (string, netip.Addr) { return "new@acme.test", v6(0xabcd) }, ScopeAddress, 3, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nodes := newShareNodes(t, url, 2, tt.cfg, newShareClock(), true)
			a, b := nodes[0], nodes[1]
			for i := range tt.nA + tt.nB {
				nd := a
				if i >= tt.nA {
					nd = b
				}
				account, addr := tt.attempt(i)
				fail(t, nd.th, account, addr)
			}
			waitFor(t, "the failures to cross", func() bool {
				return a.share.Stats().Remote == uint64(tt.nB) && b.share.Stats().Remote == uint64(tt.nA)
			})
			account, addr := tt.probe()
			for i, nd := range nodes {
				if r := throttled(t, nd.th.Check(account, addr)); r.Scope != tt.scope {
					t.Fatalf("node %d refuses for its %s, want %s", i, r.Scope, tt.scope)
				}
				if _, err := nd.th.Begin(context.Background(), account, addr); err == nil {
					t.Fatalf("node %d admits a verification beyond the limit", i)
				}
			}
		})
	}
}

// A node's own notices come back to it through the database; it skips
// them, or each local failure would count twice.
func TestShareDoesNotCountItsOwnNoticesTwice(t *testing.T) {
	nodes := newShareNodes(t, testDatabase(t), 2, ThrottleConfig{AccountFailures: 4}, newShareClock(), true)
	a, b := nodes[0], nodes[1]
	fail(t, a.th, "ada@acme.test", loopback)
	fail(t, a.th, "ada@acme.test", loopback)
	waitFor(t, "node A's notices to come back to it", func() bool { return a.share.Stats().Own == 2 })
	// Two failures counted, not four: two more are admitted, on either node.
	fail(t, a.th, "ada@acme.test", loopback)
	waitFor(t, "node B to count A's three failures", func() bool { return b.share.Stats().Remote == 3 })
	fail(t, b.th, "ada@acme.test", loopback)
	waitFor(t, "node A to count B's failure", func() bool { return a.share.Stats().Remote == 1 })
	for i, nd := range nodes {
		throttled(t, nd.th.Check("ada@acme.test", loopback))
		if s := nd.share.Stats(); s.Published != s.Own || s.Dropped+s.Failed+s.Malformed != 0 {
			t.Fatalf("node %d: %+v", i, s)
		}
	}
}

// A successful login clears its account's failures on every node, as on
// one; the address's count stays.
func TestShareSuccessClearsTheAccountOnEveryNode(t *testing.T) {
	nodes := newShareNodes(t, testDatabase(t), 2, ThrottleConfig{AccountFailures: 4, AddressFailures: 6}, newShareClock(), true)
	a, b := nodes[0], nodes[1]
	for range 3 {
		fail(t, a.th, "ada@acme.test", loopback)
	}
	done(t, a.th, "ada@acme.test", true)
	waitFor(t, "node B to hear of the failures and the success", func() bool { return b.share.Stats().Remote == 4 })
	for range 3 {
		fail(t, b.th, "ada@acme.test", loopback) // with A's three not cleared, the second is refused
	}
	if r := throttled(t, b.th.Check("bob@acme.test", loopback)); r.Scope != ScopeAddress {
		t.Fatalf("refusal for the %s, want the address's sixth failure", r.Scope)
	}
}

// Without the hooks a node publishes nothing: a node counting what
// arrives hears only a marker published after the silent node's failures
// (notices arrive in the order they were sent).
func TestShareOffPublishesNothing(t *testing.T) {
	url := testDatabase(t)
	clk := newShareClock()
	silent := newShareNodes(t, url, 1, ThrottleConfig{AccountFailures: 3}, clk, false)[0]
	others := newShareNodes(t, url, 2, ThrottleConfig{AccountFailures: 3}, clk, true)
	listener, marker := others[0], others[1]
	for range 3 {
		fail(t, silent.th, "ada@acme.test", loopback)
	}
	throttled(t, silent.th.Check("ada@acme.test", loopback))
	fail(t, marker.th, "marker@acme.test", loopback)
	waitFor(t, "the marker", func() bool { return listener.share.Stats().Remote > 0 })
	if s := listener.share.Stats(); s.Remote != 1 {
		t.Fatalf("the listener heard %d notices, want the marker's alone", s.Remote)
	}
	if err := listener.th.Check("ada@acme.test", loopback); err != nil {
		t.Fatalf("the silent node's failures arrived: %v", err)
	}
	if s := silent.share.Stats(); s.Published+s.Dropped+s.Failed != 0 {
		t.Fatalf("the silent node published: %+v", s)
	}
}

// A login never waits for the database: with the publisher stuck, the
// queue fills and the notices beyond it are dropped and counted.
func TestShareNeverBlocksALogin(t *testing.T) {
	bus := &stuckBus{publishing: make(chan struct{}, 1)}
	share := newShare(bus, nil, 2)
	cfg := ThrottleConfig{AccountFailures: 1000}
	share.Hook(&cfg)
	th, err := NewThrottle(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer share.Start(context.Background(), th)()
	fail(t, th, "ada@acme.test", loopback)
	<-bus.publishing // the publisher holds the first, stuck
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for range 10 {
			fail(t, th, "ada@acme.test", loopback)
		}
	}()
	select {
	case <-finished:
	case <-time.After(10 * time.Second):
		t.Fatal("logins wait for the publisher")
	}
	if s := share.Stats(); s.Dropped != 8 {
		t.Fatalf("dropped %d, want 8 (2 queued)", s.Dropped)
	}
}

// stuckBus never finishes a publication before its context ends, and
// hears nothing.
type stuckBus struct{ publishing chan struct{} }

func (b *stuckBus) PublishLoginFailure(ctx context.Context, _ string) error {
	select {
	case b.publishing <- struct{}{}:
	default: // told already; after the stop, the publisher may take one more
	}
	<-ctx.Done()
	return ctx.Err()
}

func (b *stuckBus) ListenLoginFailures(ctx context.Context, listening func(bool), _ func(string)) {
	listening(false)
	<-ctx.Done()
}

// Notices keep every key as counted through the database's text, and
// stay within the store's bound in the worst case (an account of control
// characters, each escaped to six bytes).
func TestNoticeEncoding(t *testing.T) {
	tests := []notice{
		{Process: "p", Account: "ada@acme.test", Addr: netip.MustParseAddr("10.0.0.1")},
		{Process: "p", Account: "mqtt\x00edge-7", Addr: AddressKey(netip.MustParseAddr("2001:db8:1:2:3::4"))},
		{Process: "p", Account: "é<&>\u2028", Reset: true},
		{Process: strings.Repeat("p", 16), Account: AccountKey(strings.Repeat("\x01", 1000)),
			Addr: netip.MustParseAddr("ffff:ffff:ffff:ffff::")},
	}
	for _, n := range tests {
		payload, err := encodeNotice(n)
		if err != nil {
			t.Fatal(err)
		}
		if len(payload) > store.MaxLoginFailurePayload || strings.ContainsRune(payload, 0) {
			t.Fatalf("payload of %d bytes, with NUL: %v", len(payload), strings.ContainsRune(payload, 0))
		}
		got, err := decodeNotice(payload)
		if err != nil || got != n {
			t.Fatalf("%q decodes to %+v, %v; want %+v", payload, got, err, n)
		}
	}
}
