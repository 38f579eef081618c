// Package cluster runs bdp on several nodes: membership from etcd through
// protoactor's cluster (its etcd provider; nothing home-made), placement
// of each virtual datapoint on one member by rendezvous hashing of its
// identity over the members (protoactor's Rendezvous, the hash its
// disthash identity lookup places grains with), the commands one node
// sends the owner of a datapoint (Runner, protobuf over protoactor's
// remote), and the reconciler that runs on each member what it owns.
//
// One node (no BDP_CLUSTER_ETCD) uses none of it.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/cluster/clusterproviders/etcd"
	"github.com/asynkron/protoactor-go/cluster/identitylookup/disthash"
	"github.com/asynkron/protoactor-go/eventstream"
	"github.com/asynkron/protoactor-go/remote"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// Config is a node's cluster configuration.
type Config struct {
	Etcd   []string // etcd endpoints, host:port; required
	Name   string   // the cluster's name, its members' key prefix in etcd; default "bdp"
	NodeID string   // this node's name, unique in the cluster; required
	// Host and Port are where the node's remote (gRPC) listens for the
	// other members; Port 0 picks a free port. AdvertisedHost, when set,
	// is the address the others dial instead of Host.
	Host           string
	Port           int
	AdvertisedHost string
	// CommandTimeout bounds a command to another member (a start reads
	// the datapoint's history first); default 60 s.
	CommandTimeout time.Duration
}

// DefaultName is the cluster name unless configured.
const DefaultName = "bdp"

// Validate fills in defaults and refuses what cannot work, before
// anything starts.
func (c *Config) Validate() error {
	if len(c.Etcd) == 0 {
		return errors.New("cluster: at least one etcd endpoint is required")
	}
	if c.NodeID == "" {
		return errors.New("cluster: a node id (BDP_NODE_ID) is required")
	}
	if c.Name == "" {
		c.Name = DefaultName
	}
	if c.Host == "" {
		c.Host = "127.0.0.1"
	}
	if c.Port < 0 || c.Port > 65535 {
		return fmt.Errorf("cluster: port %d out of range", c.Port)
	}
	if c.AdvertisedHost != "" && c.Port == 0 {
		// The others would dial port 0: the port that remote picks is
		// known only once it listens.
		return errors.New("cluster: an advertised host needs a fixed port, not 0")
	}
	if c.CommandTimeout <= 0 {
		c.CommandTimeout = time.Minute
	}
	return nil
}

// placementKind is the cluster kind every bdp member registers: the
// rendezvous hash places over the members that have it.
const placementKind = "bdp"

// Member is this node's membership of the cluster.
type Member struct {
	cfg     Config
	system  *actor.ActorSystem
	cluster *cluster.Cluster
	log     *slog.Logger
	events  *eventstream.Subscription

	mu      sync.Mutex
	owners  *cluster.Rendezvous
	members []*cluster.Member // the current topology, by address
	changed chan struct{}     // a token when the topology changed since it was last taken

	moves // what the reconciler moved

	lease     *lease             // this member's own (lease.go)
	stopLease context.CancelFunc // ends the lease's goroutines
	loops     sync.WaitGroup     // the lease's goroutines
}

// Join starts the node's remote and joins the cluster in etcd. The
// members' topology arrives asynchronously: Changes tells when it moves.
func Join(system *actor.ActorSystem, cfg Config, log *slog.Logger) (m *Member, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	provider, err := etcd.NewWithConfig("/"+cfg.Name, clientv3.Config{Endpoints: cfg.Etcd, DialTimeout: 5 * time.Second,
		Logger: zap.NewNop()})
	if err != nil {
		return nil, fmt.Errorf("cluster: etcd client: %w", err)
	}
	opts := []remote.ConfigOption{}
	if cfg.AdvertisedHost != "" {
		opts = append(opts, remote.WithAdvertisedHost(cfg.AdvertisedHost+":"+strconv.Itoa(cfg.Port)))
	}
	kind := cluster.NewKind(placementKind, actor.PropsFromFunc(func(actor.Context) {}))
	c := cluster.New(system, cluster.Configure(cfg.Name, provider, disthash.New(),
		remote.Configure(cfg.Host, cfg.Port, opts...), cluster.WithKinds(kind)))
	m = &Member{cfg: cfg, system: system, cluster: c, log: log, owners: cluster.NewRendezvous(), changed: make(chan struct{}, 1)}
	m.events = system.EventStream.Subscribe(func(evt any) {
		if t, ok := evt.(*cluster.ClusterTopology); ok {
			m.setTopology(t.Members)
		}
	})
	// protoactor's StartMember panics when etcd cannot be reached.
	defer func() {
		if r := recover(); r != nil {
			system.EventStream.Unsubscribe(m.events)
			err = fmt.Errorf("cluster: join through etcd %v: %v", cfg.Etcd, r)
		}
	}()
	c.StartMember()
	leaseCtx, stopLease := context.WithCancel(context.Background())
	m.stopLease = stopLease
	if err := m.startLease(leaseCtx); err != nil {
		stopLease()
		return nil, fmt.Errorf("cluster: etcd client: %w", err)
	}
	log.Info("joined the cluster", slog.String("cluster", cfg.Name), slog.String("node", cfg.NodeID),
		slog.String("address", system.Address()))
	return m, nil
}

func (m *Member) setTopology(members []*cluster.Member) {
	members = slices.Clone(members)
	slices.SortFunc(members, func(a, b *cluster.Member) int { return strings.Compare(a.Address(), b.Address()) })
	m.mu.Lock()
	m.owners.UpdateMembers(members)
	m.members = members
	m.mu.Unlock()
	m.log.Info("cluster topology", slog.Int("members", len(members)))
	m.notify()
}

// notify tells Changes that what this member owns may have changed.
func (m *Member) notify() {
	select {
	case m.changed <- struct{}{}:
	default: // one token stands for every change not yet taken
	}
}

// Changes receives a token when the topology has changed.
func (m *Member) Changes() <-chan struct{} { return m.changed }

// Address is this member's remote address.
func (m *Member) Address() string { return m.system.Address() }

// NodeID is this node's configured name.
func (m *Member) NodeID() string { return m.cfg.NodeID }

// Owner answers the address of the member that owns an identity, and
// whether that is this one. With no topology yet (just joined), or cut
// off from etcd (lease.go), it owns nothing: an empty address.
func (m *Member) Owner(identity string) (address string, self bool) {
	if m.CutOff() {
		return "", false
	}
	m.mu.Lock()
	address = m.owners.GetByClusterIdentity(&cluster.ClusterIdentity{Kind: placementKind, Identity: identity})
	m.mu.Unlock()
	return address, address != "" && address == m.system.Address()
}

// Members lists the addresses of the current members, sorted.
func (m *Member) Members() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]string, len(m.members))
	for i, mm := range m.members {
		out[i] = mm.Address()
	}
	return out
}

// Leave takes this member out of the cluster: its etcd registration
// first, so that the other members take over what it owns, then its
// remote. The actor system itself goes on (the engine stops its actors
// afterwards).
func (m *Member) Leave(ctx context.Context) {
	m.system.EventStream.Unsubscribe(m.events)
	m.stopLease()
	m.loops.Wait()
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := m.cluster.Config.ClusterProvider.Shutdown(true); err != nil {
			m.log.Warn("leave the cluster", slog.Any("error", err))
		}
		m.cluster.Gossip.Shutdown()
		m.cluster.Remote.Shutdown(true)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		m.log.Warn("leave the cluster: not done by the deadline")
	}
}
