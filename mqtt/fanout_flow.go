package mqtt

import (
	"slices"

	mochi "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"
)

// Flow control on live out's fast path. An MQTT 5 client may tell how
// many QoS 1 messages may be unacknowledged to it at once (its receive
// maximum); the broker must hold the rest back. mochi's own holding back
// sends what it held in no particular order and loses count of its quota
// (its publish delivered a few dozen messages to a client with a receive
// maximum of 3, then nothing), so the fast path does it itself: while the
// limit is reached, or messages are held already, a message waits in the
// client's writer, in order, without a packet id; each acknowledgement
// (mochi's OnQosComplete) releases what now fits. The held messages count
// against the writer's queue. When the client goes, they join its
// messages in flight, so a kept session gets them on its return.

// heldMessage is a message waiting for the client's receive maximum:
// its in-flight record and its encoding, packet ids still to be given.
type heldMessage struct {
	pk   packets.Packet
	pkt  []byte
	idAt int
}

// A connection taking up a kept session gets the session's messages
// first, oldest first (sessionHook), then what was stored meanwhile,
// then live data, or a last-value consumer ends on a stale value. From
// mochi's OnSessionEstablish on, the fast path delivers to the new
// connection, not to the old one (whose messages in flight mochi copies
// to the new one before it lists it, and whose later ones were lost),
// and not to the new one's in-flight messages either (mochi replaces
// them by the copy): its writer waits, QoS 1 messages held without a
// packet id, until the session is established (after mochi's resend).

// establishing gives a connection that takes up its client id's session
// a waiting writer. A connection of the same client id that never got
// its session established (its CONNACK failed, which mochi tells no
// hook) is forgotten.
func (f *fanout) establishing(cl *mochi.Client) {
	w := f.newWriter(cl)
	w.waiting.Store(true)
	f.mu.Lock()
	stale := f.joining[cl.ID]
	f.joining[cl.ID] = cl
	f.writers[cl] = w
	f.mu.Unlock()
	if stale != nil {
		f.forget(stale)
	}
}

// established lets the writer of a connection whose session is
// established write, held messages first.
func (f *fanout) established(cl *mochi.Client) {
	f.mu.Lock()
	if f.joining[cl.ID] == cl {
		delete(f.joining, cl.ID)
	}
	w := f.writers[cl]
	f.mu.Unlock()
	if w == nil {
		return
	}
	w.flow.Lock()
	w.waiting.Store(false)
	w.flow.Unlock()
	f.sendHeld(w, cl)
	f.start(w)
}

// joiner is the connection taking up a client id's session, if one is.
func (f *fanout) joiner(clientID string) *mochi.Client {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.joining[clientID]
}

// receiveLimit is how many messages may be unacknowledged to cl: its
// receive maximum (MQTT 5), else the broker's in-flight limit.
func receiveLimit(cl *mochi.Client) int {
	if rm := int(cl.Properties.Props.ReceiveMaximum); cl.Properties.ProtocolVersion >= 5 && rm > 0 {
		return min(rm, maxInflight)
	}
	return maxInflight
}

// deliverLimited sends pk to a client with a receive maximum, or holds
// it back.
func (f *fanout) deliverLimited(w *liveWriter, cl *mochi.Client, pk packets.Packet, pkt []byte, idAt int) {
	w.flow.Lock()
	defer w.flow.Unlock()
	if !w.waiting.Load() && len(w.held) == 0 && cl.State.Inflight.Len() < w.limit {
		if f.take(cl, &pk, w.limit) {
			pkt[idAt], pkt[idAt+1] = byte(pk.PacketID>>8), byte(pk.PacketID)
			f.write(w, pkt)
		}
		return
	}
	w.held = append(w.held, heldMessage{pk: pk, pkt: slices.Clone(pkt), idAt: idAt})
	w.queued.Add(1)
}

// release sends what an acknowledgement of cl made room for.
func (f *fanout) release(cl *mochi.Client) {
	if receiveLimit(cl) == maxInflight {
		return // nothing is ever held for it
	}
	f.mu.Lock()
	w := f.writers[cl]
	f.mu.Unlock()
	if w != nil && f.sendHeld(w, cl) {
		f.start(w)
	}
}

// sendHeld sends what w holds as far as cl's limit allows; false if it
// sent nothing.
func (f *fanout) sendHeld(w *liveWriter, cl *mochi.Client) bool {
	w.flow.Lock()
	defer w.flow.Unlock()
	sent := false
	for !w.waiting.Load() && len(w.held) > 0 && cl.State.Inflight.Len() < w.limit {
		m := w.held[0]
		w.held[0] = heldMessage{}
		w.held = w.held[1:]
		w.queued.Add(-1)
		if f.take(cl, &m.pk, w.limit) {
			m.pkt[m.idAt], m.pkt[m.idAt+1] = byte(m.pk.PacketID>>8), byte(m.pk.PacketID)
			w.add(m.pkt, 0)
			sent = true
		}
	}
	return sent
}

// forget drops the writer of a connection that ended; what it held back
// joins the client's messages in flight, for its session.
func (f *fanout) forget(cl *mochi.Client) {
	f.mu.Lock()
	w := f.writers[cl]
	delete(f.writers, cl)
	if f.joining[cl.ID] == cl {
		delete(f.joining, cl.ID)
	}
	f.mu.Unlock()
	if w == nil {
		return
	}
	w.flow.Lock()
	held := w.held
	w.held = nil
	w.flow.Unlock()
	for _, m := range held {
		f.take(cl, &m.pk, maxInflight)
	}
}

// fanoutHook tells the fast path of acknowledgements, of connections
// taking up their session and of connections that ended.
type fanoutHook struct {
	mochi.HookBase
	f *fanout
}

func (h *fanoutHook) ID() string { return "bdp-live-fanout" }

func (h *fanoutHook) Provides(b byte) bool {
	switch b {
	case mochi.OnQosComplete, mochi.OnDisconnect, mochi.OnSessionEstablish, mochi.OnSessionEstablished:
		return true
	}
	return false
}

func (h *fanoutHook) OnSessionEstablish(cl *mochi.Client, _ packets.Packet) { h.f.establishing(cl) }

func (h *fanoutHook) OnSessionEstablished(cl *mochi.Client, _ packets.Packet) { h.f.established(cl) }

func (h *fanoutHook) OnQosComplete(cl *mochi.Client, _ packets.Packet) { h.f.release(cl) }

func (h *fanoutHook) OnDisconnect(cl *mochi.Client, _ error, _ bool) { h.f.forget(cl) }
