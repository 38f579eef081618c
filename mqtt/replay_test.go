package mqtt

import (
	"slices"
	"testing"

	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/openbdp/bdp/codec"
	"github.com/openbdp/bdp/pipeline"
)

// A kept session whose client was away while values were stored gets
// them again oldest first when it returns (mochi sent them in map order:
// 2, 3, 4, 5, 1, and a last-value consumer ended on a stale value), and
// unsubscribing and subscribing again in it succeed though the packet
// ids of the UNSUBSCRIBE and the SUBSCRIBE are ones the broker uses for
// messages in flight (the two directions' ids are separate spaces; mochi
// answered 0x91, 0x80 to an MQTT 3.1.1 client).
func TestKeptSessionReplaysInOrder(t *testing.T) {
	e := newLiveEnv(t, liveEnvConfig{embedded: true})
	e.account("reader", e.p1, e.adminA, false)
	filter := codec.ProjectTopicPrefix(e.p1) + "#"
	const stored = 10 // one batch, one second: mochi's order is the map's
	published := 0.0
	for _, tc := range []struct {
		name       string
		receiveMax uint16 // 0: MQTT 3.1.1
	}{{"MQTT 3.1.1", 0}, {"MQTT 5", 100}} {
		t.Run(tc.name, func(t *testing.T) {
			clientID, dp := "keeper"+tc.name[5:], "dp"+tc.name[5:]
			c, _ := dialRawVersion(t, e.addr, clientID, "reader", false, tc.receiveMax)
			c.subscribe(t, filter, 1)
			c.close()
			var obs []pipeline.Observation
			for sec := range stored {
				obs = append(obs, obsAt(e.p1, dp, sec, float64(sec)))
			}
			e.upload(obs...)
			published += stored
			e.waitLive(t, published, 0)

			c, present := dialRawVersion(t, e.addr, clientID, "reader", false, tc.receiveMax)
			if !present {
				t.Fatal("the kept session is not present")
			}
			var got []rawPublish
			for range stored {
				got = append(got, c.next(t)) // none acknowledged: all stay in flight
			}
			for sec, p := range got {
				if p.payload != payloadOf(sec, float64(sec)) || !p.dup {
					var payloads []string
					for _, p := range got {
						payloads = append(payloads, p.payload)
					}
					t.Fatalf("the session's messages came as %v, want the %d observations oldest first, DUP", payloads, stored)
				}
			}
			// Packet ids 1 and 2, as two of the messages in flight.
			c.unsubscribe(t, filter, 2)
			c.subscribe(t, filter, 1)
			for _, p := range got {
				c.puback(t, p.id)
			}
			e.upload(obsAt(e.p1, dp, stored, stored))
			published++
			if p := c.next(t); p.payload != payloadOf(stored, stored) || p.dup {
				t.Fatalf("after the session's messages: %+v, want observation %d", p, stored)
			}
		})
	}
}

// The order of a session's messages survives the wrap of packet ids
// after 65535 and messages of several seconds.
func TestInSentOrder(t *testing.T) {
	for _, tc := range []struct {
		name string
		ids  []uint16 // in the order sent
		secs []int64  // their creation seconds
	}{
		{"one second", []uint16{1, 2, 3, 4, 5}, []int64{7, 7, 7, 7, 7}},
		{"ids wrapped", []uint16{65534, 65535, 1, 2}, []int64{7, 7, 7, 7}},
		{"ids wrapped, gaps", []uint16{65000, 65100, 3, 90}, []int64{7, 7, 7, 7}},
		{"taken over, ids anew", []uint16{40000, 40001, 1, 2}, []int64{7, 7, 9, 9}},
		{"taken over, ids anew, lower", []uint16{20000, 20001, 1, 2}, []int64{7, 7, 9, 9}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var inflight []packets.Packet
			for i := len(tc.ids) - 1; i >= 0; i-- { // any order: mochi's is a map's
				inflight = append(inflight, packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Publish, Qos: 1},
					PacketID: tc.ids[i], Created: tc.secs[i]})
			}
			inflight = append(inflight, packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Pubrec}, PacketID: 9})
			var got []uint16
			for _, pk := range inSentOrder(inflight) {
				got = append(got, pk.PacketID)
			}
			if !slices.Equal(got, tc.ids) {
				t.Fatalf("order %v, want %v", got, tc.ids)
			}
		})
	}
}
