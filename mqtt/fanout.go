package mqtt

import (
	"encoding/binary"
	"slices"
	"sync"
	"sync/atomic"

	mochi "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"
)

// Live out's fast path on the embedded broker. A publish through mochi
// (Embedded.Publish) costs, for every subscriber of every message, a walk
// of the topic index that allocates maps, a copy of the packet, the ACL
// hook (with it the Gate's lookup), a channel send that wakes the
// client's writer goroutine, and an encoding: 6.4 µs of CPU a delivery,
// most of two cores at the 200,000 deliveries a second (the fast
// path: about 2.3 µs, BenchmarkLiveDelivery). Live
// knows which datapoint each message is for, so the fast path does each
// of those once where it can:
//   - the subscribers of a datapoint's topic are looked up once per
//     version of the subscriptions (liveRoute), not per message;
//   - a subscriber's ACL and TagAuth decision is kept while nothing it
//     depends on changed: the Gate's generation (every change of users,
//     roles and tags), the sessions' (connect, revoke, change of rights),
//     the connection, and the account's expiry, checked each time;
//   - a message is encoded once and copied to each subscriber with its
//     packet id;
//   - a subscriber's messages are written by one goroutine per burst, not
//     one wake-up each.
//
// What a QoS 1 delivery promises is kept through mochi's own client
// state: each message takes a packet id from the client (NextPacketID)
// and is recorded in its in-flight messages before it is written, so
// mochi's PUBACK handling, its resend on reconnect and a kept session
// (messages for a client that is away wait in flight) work unchanged.
//
// A route with the platform's own subscriptions goes through mochi's
// publish. MQTT 5 clients get what mochi sends them: the message expiry
// interval and their subscription identifiers as properties; no message
// larger than their maximum packet size; no topic aliases (the server
// may choose not to use them); and no more messages unacknowledged than
// their receive maximum, the rest held back in order (fanout_flow.go).

// liveRoute is how one datapoint's messages reach its subscribers, as of
// a version of the subscriptions. Only Live's goroutine uses it.
type liveRoute struct {
	topic       string
	projectID   int64
	dataPointID string
	// slow: publish through mochi, which delivers to every subscriber.
	slow      bool
	receivers []liveReceiver
	head      []byte // the PUBLISH's topic name, length first
}

// liveReceiver is one subscribing client of a route, with its cached
// decision.
type liveReceiver struct {
	clientID string
	sub      packets.Subscription
	qos      byte // the subscription's maximum: 0 or 1
	cl       *mochi.Client
	w        *liveWriter // nil while cl is closed (a kept session)
	wire     liveWire

	decided        bool
	allowed        bool
	gateGen        uint64
	sessionsGen    uint64
	validUntilNano int64 // 0: no expiry
}

// liveWire is what a client's protocol adds to a PUBLISH.
type liveWire struct {
	v5      bool
	props   []byte // MQTT 5 properties: message expiry, subscription identifiers
	ids     []int  // the subscription identifiers, for the in-flight record
	maxSize uint32 // the client's maximum packet size; 0: none
	shared  bool   // props are the expiry alone: the encoding is shared
}

// wireOf is what cl's protocol and subscription sub add to a PUBLISH, as
// mochi's publishToClient and WritePacket add them.
func (f *fanout) wireOf(cl *mochi.Client, sub packets.Subscription) liveWire {
	var w liveWire
	if cl.Properties.ProtocolVersion < 5 {
		return w
	}
	w.v5, w.maxSize = true, cl.Properties.Props.MaximumPacketSize
	w.props = f.expiryProps
	// mochi records a filter subscribed without an identifier as
	// identifier 0 (Subscription.Merge); 0 on the wire is a protocol
	// error (MQTT 5 3.3.2.3.8) for which paho-mqtt drops the connection,
	// so only the identifiers the client gave go out, as mochi's encoder
	// sends them.
	for _, id := range sub.Identifiers {
		if id > 0 {
			w.ids = append(w.ids, id)
		}
	}
	w.shared = len(w.ids) == 0
	if !w.shared {
		slices.Sort(w.ids)
		w.props = slices.Clone(f.expiryProps)
		for _, id := range w.ids {
			w.props = appendRemaining(append(w.props, 0x0B), id) // subscription identifier
		}
	}
	return w
}

// liveBatch is what the deliveries of one stored batch share: the time
// (expiry, in-flight records), and the generations a decision is valid
// for.
type liveBatch struct {
	nowNano, created     int64
	gateGen, sessionsGen uint64
}

// fanout delivers live messages to the embedded broker's clients.
type fanout struct {
	e      *Embedded
	expiry int64 // seconds a message is kept in flight (mochi's maximum message expiry)
	queue  int   // messages waiting for one client's writer at most

	// expiryProps is the message expiry interval property mochi gives its
	// publishes to MQTT 5 clients (none when there is no maximum).
	expiryProps []byte

	// Used by Live's goroutine only: the message's shared encodings, by
	// MQTT 5 and QoS, made on first use (enc.seq == seq), and the writers
	// the batch gave work.
	seq     uint64
	enc     [2][2]liveEncoding
	scratch []byte
	touched []*liveWriter

	mu      sync.Mutex
	closed  bool
	writers map[*mochi.Client]*liveWriter
	joining map[string]*mochi.Client // by client id: connections taking up a session
	running sync.WaitGroup
}

func newFanout(e *Embedded) *fanout {
	f := &fanout{e: e, expiry: e.server.Options.Capabilities.MaximumMessageExpiryInterval,
		queue: max(int(e.cfg.ClientQueue), maxInflight), writers: map[*mochi.Client]*liveWriter{},
		joining: map[string]*mochi.Client{}}
	if f.expiry > 0 {
		f.expiryProps = binary.BigEndian.AppendUint32([]byte{0x02}, uint32(f.expiry))
	}
	return f
}

// liveEncoding is one PUBLISH as encoded, packet id 0 at idAt.
type liveEncoding struct {
	seq  uint64
	pkt  []byte
	idAt int
}

// route finds the subscribers of a datapoint's topic: nil when there are
// none.
func (f *fanout) route(topic string, projectID int64, dataPointID string) *liveRoute {
	subs := f.e.server.Topics.Subscribers(topic)
	if len(subs.Subscriptions) == 0 && len(subs.InlineSubscriptions) == 0 && len(subs.Shared) == 0 {
		return nil
	}
	r := &liveRoute{topic: topic, projectID: projectID, dataPointID: dataPointID,
		slow: len(subs.InlineSubscriptions) > 0 || len(subs.Shared) > 0}
	for id, sub := range subs.Subscriptions {
		cl, ok := f.e.server.Clients.Get(id)
		if !ok {
			continue // mochi skips it too
		}
		r.receivers = append(r.receivers, liveReceiver{clientID: id, sub: sub, qos: min(sub.Qos, 1), cl: cl,
			wire: f.wireOf(cl, sub)})
	}
	if r.slow {
		r.receivers = nil
	}
	r.head = append([]byte{byte(len(topic) >> 8), byte(len(topic))}, topic...)
	return r
}

// begin starts a batch of deliveries; its time is the broker's clock,
// which decides expiry.
func (f *fanout) begin() liveBatch {
	now := f.e.cfg.Clock.Now()
	b := liveBatch{nowNano: now.UnixNano(), created: now.Unix(), sessionsGen: f.e.sessions.version.Load()}
	if g := f.e.deps.Gate; g != nil {
		b.gateGen = g.gen.Load()
	}
	return b
}

// deliver sends one message of route r to each of its subscribers the
// ACL and its creator's TagAuths let read it.
func (f *fanout) deliver(b *liveBatch, r *liveRoute, payload []byte) {
	f.seq++
	for i := range r.receivers {
		rc := &r.receivers[i]
		if !f.reaches(b, r, rc) {
			continue
		}
		pkt, idAt := f.encoding(r, rc, payload)
		if rc.wire.maxSize > 0 && len(pkt) > int(rc.wire.maxSize) {
			continue // mochi does not send it either
		}
		if rc.qos == 0 {
			if rc.w != nil && rc.w.room() {
				f.write(rc.w, pkt)
			}
			continue
		}
		f.deliverQoS1(b, r, rc, payload, pkt, idAt)
	}
}

// encoding is the message as rc gets it, packet id 0: one encoding per
// message is shared by the subscribers whose protocol adds the same, and
// copied to each writer with its own packet id.
func (f *fanout) encoding(r *liveRoute, rc *liveReceiver, payload []byte) ([]byte, int) {
	if rc.wire.v5 && !rc.wire.shared {
		pkt, idAt := appendPublish(f.scratch[:0], rc.qos, r.head, rc.wire.props, payload, true)
		f.scratch = pkt
		return pkt, idAt
	}
	v5 := 0
	if rc.wire.v5 {
		v5 = 1
	}
	e := &f.enc[v5][rc.qos]
	if e.seq != f.seq {
		e.seq = f.seq
		e.pkt, e.idAt = appendPublish(e.pkt[:0], rc.qos, r.head, rc.wire.props, payload, rc.wire.v5)
	}
	return e.pkt, e.idAt
}

// deliverQoS1 records the message in the client's in-flight messages
// under a fresh packet id, as mochi's publish does, then queues it for
// the client's writer; a client that is away finds it there when it
// returns.
func (f *fanout) deliverQoS1(b *liveBatch, r *liveRoute, rc *liveReceiver, payload, pkt []byte, idAt int) {
	if rc.w != nil && !rc.w.room() {
		atomic.AddInt64(&f.e.server.Info.MessagesDropped, 1)
		return
	}
	pk := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Publish, Qos: 1}, TopicName: r.topic,
		Payload: payload, Origin: mochi.InlineClientId, Created: b.created,
		ProtocolVersion: rc.cl.Properties.ProtocolVersion}
	pk.Properties.SubscriptionIdentifier = rc.wire.ids
	if f.expiry > 0 {
		pk.Expiry = b.created + f.expiry
	}
	switch {
	case rc.w == nil:
		f.take(rc.cl, &pk, maxInflight) // away: resent when the client returns
	case rc.w.limit < maxInflight || rc.w.waiting.Load():
		f.deliverLimited(rc.w, rc.cl, pk, pkt, idAt)
	case f.take(rc.cl, &pk, maxInflight):
		pkt[idAt], pkt[idAt+1] = byte(pk.PacketID>>8), byte(pk.PacketID)
		f.write(rc.w, pkt)
	}
}

// take gives pk a packet id of cl and records it among cl's messages in
// flight, unless limit are in flight already (counted as dropped).
func (f *fanout) take(cl *mochi.Client, pk *packets.Packet, limit int) bool {
	info := f.e.server.Info
	if cl.State.Inflight.Len() >= limit {
		atomic.AddInt64(&info.InflightDropped, 1)
		return false
	}
	id, err := cl.NextPacketID()
	if err != nil {
		atomic.AddInt64(&info.InflightDropped, 1)
		return false
	}
	pk.PacketID = uint16(id)
	if cl.State.Inflight.Set(*pk) {
		atomic.AddInt64(&info.Inflight, 1)
		cl.State.Inflight.DecreaseSendQuota()
	}
	return true
}

// reaches tells whether rc's client gets the message, on the connection
// that holds its session. A client that is away keeps it in the
// session's messages in flight, which a returning connection's session
// takes over; a decision can take a database query, during which the
// client may return, so a session found taken over meanwhile is decided
// anew for the connection that took it (its messages otherwise reached
// the old connection's in-flight messages after mochi had copied them).
func (f *fanout) reaches(b *liveBatch, r *liveRoute, rc *liveReceiver) bool {
	if !rc.cl.Closed() {
		return f.mayReceive(b, r, rc) // connected: the common case
	}
	for range 3 { // a client that returns more often meanwhile misses it
		if !f.current(rc) || !f.mayReceive(b, r, rc) {
			return false
		}
		if !rc.cl.Closed() || f.holds(rc.clientID, rc.cl) {
			return true
		}
	}
	return false
}

// holds tells whether cl, closed, still holds its client id's session.
func (f *fanout) holds(clientID string, cl *mochi.Client) bool {
	if j := f.joiner(clientID); j != nil && j != cl {
		return false
	}
	cur, ok := f.e.server.Clients.Get(clientID)
	return ok && cur == cl
}

// current makes sure rc.cl is the connection holding the client id's
// session: after a reconnect, the new one (and its decision anew).
func (f *fanout) current(rc *liveReceiver) bool {
	if !rc.cl.Closed() {
		return true
	}
	cl, ok := f.joiner(rc.clientID), true
	if cl == nil {
		if cl, ok = f.e.server.Clients.Get(rc.clientID); !ok {
			return false
		}
	}
	if cl != rc.cl {
		// Until the route is made anew (the session's establishment
		// changes the subscriptions' version), the new connection is
		// served as it is.
		rc.cl, rc.decided, rc.wire = cl, false, f.wireOf(cl, rc.sub)
	}
	if cl.Closed() {
		rc.w = nil
	} else {
		rc.w = f.writer(cl)
	}
	return true
}

// mayReceive is the broker's ACL for a delivery (authHook.OnACLCheck):
// a session of the connection, not expired, subscribed inside its tree,
// and the Gate's read decision for its creator, cached while the
// generations it was made under hold.
func (f *fanout) mayReceive(b *liveBatch, r *liveRoute, rc *liveReceiver) bool {
	if !rc.decided || rc.gateGen != b.gateGen || rc.sessionsGen != b.sessionsGen {
		if !f.decide(b, r, rc) {
			return false
		}
	}
	return rc.allowed && (rc.validUntilNano == 0 || b.nowNano < rc.validUntilNano)
}

// decide computes rc's decision; false when it could not be made (a
// database that did not answer), which is not cached.
func (f *fanout) decide(b *liveBatch, r *liveRoute, rc *liveReceiver) bool {
	a, ok := f.e.sessions.accountOf(rc.cl)
	allowed := ok && a.MaySubscribe(r.topic)
	if allowed && f.e.deps.Gate != nil {
		var err error
		if allowed, err = f.e.deps.Gate.decideFor(a, r.projectID, r.dataPointID, false); err != nil {
			return false
		}
	}
	rc.decided, rc.allowed, rc.gateGen, rc.sessionsGen = true, allowed, b.gateGen, b.sessionsGen
	rc.validUntilNano = 0
	if !a.ValidUntil.IsZero() {
		rc.validUntilNano = a.ValidUntil.UnixNano()
	}
	if rc.w == nil && !rc.cl.Closed() {
		rc.w = f.writer(rc.cl)
	}
	return true
}
