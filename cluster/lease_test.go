package cluster

import (
	"context"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"

	"github.com/openbdp/bdp/cluster/etcdtest"
	"github.com/openbdp/bdp/store/storetest"
)

// cutProxy forwards TCP connections to target until it is cut: then it
// closes every connection and closes new ones at once, as a pulled cable
// between a node and etcd would, while the other nodes reach etcd.
type cutProxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	cut   bool
	conns map[net.Conn]bool
}

func startCutProxy(t *testing.T, target string) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, target: target, conns: map[net.Conn]bool{}}
	t.Cleanup(func() { ln.Close(); p.setCut(true) })
	go p.serve()
	return p
}

func (p *cutProxy) addr() string { return p.ln.Addr().String() }

func (p *cutProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.forward(c)
	}
}

func (p *cutProxy) forward(c net.Conn) {
	up, err := net.Dial("tcp", p.target)
	if err != nil || !p.track(c, up) {
		c.Close()
		if up != nil {
			up.Close()
		}
		return
	}
	go func() { _, _ = io.Copy(up, c); up.Close() }()
	_, _ = io.Copy(c, up)
	c.Close()
}

// track registers a forwarded pair; false when the proxy is cut.
func (p *cutProxy) track(conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut {
		return false
	}
	for _, c := range conns {
		p.conns[c] = true
	}
	return true
}

func (p *cutProxy) setCut(cut bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = cut
	if cut {
		for c := range p.conns {
			c.Close()
		}
		clear(p.conns)
	}
}

// A member cut off from etcd stops what it runs before the others take
// it over: no virtual datapoint ever runs on two members. The others
// run its share once its registration expires. Cut off that long, it is
// dropped; started again, it takes its share back.
func TestANodeCutOffFromEtcdStopsBeforeTheOthersTakeOver(t *testing.T) {
	st, _ := storetest.Open(t, testPG)
	tenant := storetest.NewTenant(t, st, "cl")
	etcd := etcdtest.Start(t)
	proxy := startCutProxy(t, etcd.Endpoint)
	a := startNode(t, st, etcd.Endpoint, "a")
	b := startNode(t, st, proxy.addr(), "b")
	nodes := []*testNode{a, b}
	waitFor(t, 20*time.Second, "both members see two members", seeMembers(nodes, 2))
	vdps := createVDPs(t, st, tenant.Project.ID, 16)
	for _, v := range vdps {
		start(t, st, a, v)
	}
	onB := func() int { return len(b.engine.RunningKeys()) }
	if onB() == 0 {
		t.Fatal("the hash placed none of 16 datapoints on b")
	}

	// Watch every datapoint while b is cut off and the others take over.
	var (
		mu      sync.Mutex
		doubled []string
	)
	watching := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for {
			for _, v := range vdps {
				if on := runsOn(key(v), nodes...); len(on) > 1 {
					mu.Lock()
					doubled = append(doubled, v.DataPointID+" on "+strings.Join(on, "+"))
					mu.Unlock()
				}
			}
			select {
			case <-watching:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	proxy.setCut(true)
	cut := time.Now()
	waitFor(t, 5*time.Second, "b stops what it ran", func() bool { return onB() == 0 })
	stopped := time.Since(cut)
	if !b.member.CutOff() {
		t.Fatal("b stopped its datapoints without counting itself cut off")
	}
	waitFor(t, 20*time.Second, "a runs every datapoint", func() bool { return len(a.engine.RunningKeys()) == len(vdps) })
	tookOver := time.Since(cut)
	close(watching)
	<-watched
	if len(doubled) > 0 {
		t.Fatalf("ran on two members at once: %v", doubled[:min(len(doubled), 5)])
	}
	t.Logf("b stopped %s after the cut, a ran everything after %s", stopped, tookOver)
	if stopped > 2*time.Second {
		t.Errorf("b stopped %s after the cut: the others may take over from 2 s on", stopped)
	}

	// Cut off past its registration, b is dropped for good (protoactor's
	// member does not rejoin): it ends, and a new process takes its place.
	select {
	case <-b.member.Dropped():
	case <-time.After(10 * time.Second):
		t.Fatal("b not dropped 10 s after the cut")
	}
	b.stop()
	proxy.setCut(false)
	b = startNode(t, st, proxy.addr(), "b")
	nodes = []*testNode{a, b}
	waitFor(t, 30*time.Second, "the new b takes its share back, each datapoint on one member", func() bool {
		if onB() == 0 {
			return false
		}
		for _, v := range vdps {
			if len(runsOn(key(v), nodes...)) != 1 {
				return false
			}
		}
		return true
	})
}

// A member whose first topology is slow to arrive (a loaded machine) is
// joining, not missing from the members: it is not dropped while its
// lease is renewed, and it is once it was in its view and then is not.
func TestAJoiningMemberIsNotDroppedBeforeItsFirstTopology(t *testing.T) {
	etcd := etcdtest.Start(t)
	self := &cluster.Member{Host: "127.0.0.1", Port: 1, Id: "self", Kinds: []string{placementKind}}
	system := actor.NewActorSystem()
	system.ProcessRegistry.Address = self.Address()
	m := &Member{cfg: Config{Etcd: []string{etcd.Endpoint}}, system: system,
		log: slog.New(slog.NewTextHandler(io.Discard, nil)), owners: cluster.NewRendezvous(), changed: make(chan struct{}, 1)}
	ctx, stop := context.WithCancel(context.Background())
	if err := m.startLease(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stop(); m.loops.Wait() })

	select {
	case <-m.Dropped():
		t.Fatal("dropped before its first topology arrived")
	case <-time.After(droppedAfter + time.Second):
	}

	m.setTopology([]*cluster.Member{self})
	time.Sleep(2 * leaseCheck)
	m.setTopology(nil)
	select {
	case <-m.Dropped():
	case <-time.After(droppedAfter + time.Second):
		t.Fatal("not dropped although missing from its members past its registration")
	}
}
