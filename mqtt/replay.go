package mqtt

import (
	"cmp"
	"slices"
	"sync"
	"time"

	mochi "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"
)

// What a kept session finds when its client returns, and what it may
// send in it, on the embedded broker. mochi keeps one map of packet ids
// per client for both directions and orders its in-flight messages by
// the low 16 bits of their creation second, so
//   - a client that returns to a session in which messages waited got
//     them in map order (2, 3, 4, 5, 1: a last-value consumer ended on a
//     stale value): sessionHook sends them again oldest first;
//   - a SUBSCRIBE or UNSUBSCRIBE whose packet id the broker was using
//     for a message to the client was refused with 0x91 (packet
//     identifier in use; to an MQTT 3.1.1 client 0x80, failure), though
//     the ids of the two directions are separate spaces (MQTT 5 2.2.1):
//     sessionHook hands mochi a SUBSCRIBE under id 0, which the broker
//     never gives a message (mochi's NextPacketID starts at 1), an
//     UNSUBSCRIBE (checked before any hook but the packet's reading, when
//     0 is refused as missing) under an id no message is using, and
//     answers either under the client's own id.

// sessionHook is the embedded broker's hook for the two.
type sessionHook struct {
	mochi.HookBase
	now func() time.Time

	mu sync.Mutex
	// asked: the packet id a connection's SUBSCRIBE or UNSUBSCRIBE came
	// with, while mochi handles it under another. A client's packets are
	// read and answered one at a time, so one is enough.
	asked map[*mochi.Client]uint16
	// replays: a returning connection's messages from its session,
	// oldest first, while mochi resends them.
	replays map[*mochi.Client][]packets.Packet
}

func newSessionHook(now func() time.Time) *sessionHook {
	return &sessionHook{now: now, asked: map[*mochi.Client]uint16{}, replays: map[*mochi.Client][]packets.Packet{}}
}

func (h *sessionHook) ID() string { return "bdp-sessions" }

func (h *sessionHook) Provides(b byte) bool {
	switch b {
	case mochi.OnSubscribe, mochi.OnPacketRead, mochi.OnPacketEncode, mochi.OnDisconnect:
		return true
	}
	return false
}

// OnSubscribe moves a SUBSCRIBE to packet id 0, out of the way of the
// ids of messages to the client.
func (h *sessionHook) OnSubscribe(cl *mochi.Client, pk packets.Packet) packets.Packet {
	h.ask(cl, pk.PacketID)
	pk.PacketID = 0
	return pk
}

// OnPacketRead moves an UNSUBSCRIBE whose packet id a message to the
// client uses to one none uses, searched from the top: mochi gives
// messages ids upwards from 1, and at most maxInflight are in flight.
func (h *sessionHook) OnPacketRead(cl *mochi.Client, pk packets.Packet) (packets.Packet, error) {
	if pk.FixedHeader.Type != packets.Unsubscribe {
		return pk, nil
	}
	if _, inUse := cl.State.Inflight.Get(pk.PacketID); !inUse {
		return pk, nil
	}
	for id := uint16(1<<16 - 1); id > 0; id-- {
		if _, inUse := cl.State.Inflight.Get(id); !inUse {
			h.ask(cl, pk.PacketID)
			pk.PacketID = id
			break
		}
	}
	return pk, nil
}

// ask records the packet id of a connection's SUBSCRIBE or UNSUBSCRIBE
// that mochi handles under another.
func (h *sessionHook) ask(cl *mochi.Client, id uint16) {
	h.mu.Lock()
	h.asked[cl] = id
	h.mu.Unlock()
}

// OnPacketEncode answers a SUBSCRIBE or UNSUBSCRIBE under the client's
// id, and puts a returning session's messages in the order they were
// sent: mochi resends them (DUP) one by one in its order, each of which
// is replaced by the next oldest.
func (h *sessionHook) OnPacketEncode(cl *mochi.Client, pk packets.Packet) packets.Packet {
	switch t := pk.FixedHeader.Type; {
	case t == packets.Suback || t == packets.Unsuback:
		h.mu.Lock()
		if id, ok := h.asked[cl]; ok {
			pk.PacketID = id
			delete(h.asked, cl)
		}
		h.mu.Unlock()
	case t == packets.Publish && pk.FixedHeader.Dup:
		pk = h.replay(cl, pk)
	}
	return pk
}

// replay is the message to send instead of mochi's resend pk: the
// oldest of the session's messages not yet resent. The first resend
// takes them all from the client's in-flight messages; messages that
// join them meanwhile (live out) are newer, so the ones mochi resends
// are the oldest.
func (h *sessionHook) replay(cl *mochi.Client, pk packets.Packet) packets.Packet {
	h.mu.Lock()
	defer h.mu.Unlock()
	queue, ok := h.replays[cl]
	if !ok {
		queue = inSentOrder(cl.State.Inflight.GetAll(false))
	}
	if len(queue) == 0 {
		h.replays[cl] = queue
		return pk
	}
	next := queue[0]
	h.replays[cl] = queue[1:]
	next.FixedHeader.Dup = true
	// What mochi's WritePacket set on pk before the hook, for this one.
	next.ProtocolVersion, next.Mods = pk.ProtocolVersion, pk.Mods
	if next.Expiry > 0 {
		next.Properties.MessageExpiryInterval = uint32(max(next.Expiry-h.now().Unix(), 1))
	}
	return next
}

func (h *sessionHook) OnDisconnect(cl *mochi.Client, _ error, _ bool) {
	h.mu.Lock()
	delete(h.asked, cl)
	delete(h.replays, cl)
	h.mu.Unlock()
}

// inSentOrder returns the messages (PUBLISH) among a client's in-flight
// packets in the order they were sent: by creation second, then by
// packet id. mochi gives packet ids in increasing order, wrapping after
// 65535; the oldest id is the one after the widest gap between the ids
// in flight (at most maxInflight of 65535 are).
func inSentOrder(inflight []packets.Packet) []packets.Packet {
	msgs := slices.DeleteFunc(inflight, func(pk packets.Packet) bool { return pk.FixedHeader.Type != packets.Publish })
	if len(msgs) == 0 {
		return msgs
	}
	ids := make([]int, len(msgs))
	for i, pk := range msgs {
		ids[i] = int(pk.PacketID)
	}
	slices.Sort(ids)
	oldest, widest := ids[0], ids[0]+1<<16-ids[len(ids)-1]
	for i := 1; i < len(ids); i++ {
		if gap := ids[i] - ids[i-1]; gap > widest {
			oldest, widest = ids[i], gap
		}
	}
	age := func(pk packets.Packet) int { return (int(pk.PacketID) - oldest + 1<<16) % (1 << 16) }
	slices.SortFunc(msgs, func(a, b packets.Packet) int {
		return cmp.Or(cmp.Compare(a.Created, b.Created), cmp.Compare(age(a), age(b)))
	})
	return msgs
}
