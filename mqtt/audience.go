package mqtt

import (
	"sync/atomic"

	mochi "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"
)

// Audience is a broker that sees every subscription that could receive a
// message: the embedded one. Live asks it before encoding a datapoint's
// observations and publishes nothing to a topic no subscription matches.
// An external broker is not one: other nodes' subscribers are invisible
// to bdp, so everything is published there.
type Audience interface {
	// SubscriptionsVersion changes after every change of the broker's
	// subscriptions, so an answer of Subscribed holds until it changes.
	// A subscription added is counted before the client is told (SUBACK).
	SubscriptionsVersion() uint64
	// Subscribed tells whether a subscription matches topic: of a
	// connected client, of a session kept for a client that is away
	// (QoS 1 messages wait for its return), or the platform's own.
	Subscribed(topic string) bool
}

var _ Audience = (*Embedded)(nil)

// SubscriptionsVersion is the Audience's version of the subscriptions.
func (e *Embedded) SubscriptionsVersion() uint64 { return e.audience.version.Load() }

// Subscribed walks mochi's topic index for topic: the same walk a
// publish takes, done once per datapoint and version by Live.
func (e *Embedded) Subscribed(topic string) bool {
	subs := e.server.Topics.Subscribers(topic)
	return len(subs.Subscriptions) > 0 || len(subs.InlineSubscriptions) > 0 || len(subs.Shared) > 0
}

// audienceHook versions the subscriptions of mochi's topic index. mochi
// calls OnSubscribed after adding to the index (and before the SUBACK),
// OnUnsubscribed after removing (UNSUBSCRIBE, a clean session's end, a
// takeover with a clean start), and OnSessionEstablished after a takeover
// has inherited a session's subscriptions: a version read before a walk
// of the index is always older than a change the walk missed.
type audienceHook struct {
	mochi.HookBase
	server  *mochi.Server
	version atomic.Uint64
}

func (h *audienceHook) ID() string { return "bdp-audience" }

func (h *audienceHook) Provides(b byte) bool {
	switch b {
	case mochi.OnSubscribed, mochi.OnUnsubscribed, mochi.OnSessionEstablished, mochi.OnClientExpired:
		return true
	}
	return false
}

func (h *audienceHook) OnSubscribed(*mochi.Client, packets.Packet, []byte) { h.version.Add(1) }

func (h *audienceHook) OnUnsubscribed(*mochi.Client, packets.Packet) { h.version.Add(1) }

func (h *audienceHook) OnSessionEstablished(*mochi.Client, packets.Packet) { h.version.Add(1) }

// OnClientExpired ends the subscriptions of a session that expired while
// its client was away: mochi forgets the client but leaves its
// subscriptions in the topic index, where they would match (and cost a
// publish for nobody) forever. A connection that has taken the session's
// client id since keeps its own.
func (h *audienceHook) OnClientExpired(cl *mochi.Client) {
	if cur, ok := h.server.Clients.Get(cl.ID); ok && cur != cl {
		return
	}
	h.server.UnsubscribeClient(cl) // calls OnUnsubscribed
}
