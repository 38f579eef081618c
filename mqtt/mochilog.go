package mqtt

import (
	"context"
	"log/slog"
	"strings"

	"github.com/mochi-mqtt/server/v2/packets"
)

// mochiLog is the handler of mochi's own log. It drops records below min
// (mochi logs every connection and hook at info) and writes a packet
// mochi attaches to a record (a refused publish is logged with its
// packet) as a summary: its payload is a building's data, and as large as
// the packet size limit, which has no place in a log line; its topic is
// clipped for the same reason.
type mochiLog struct {
	slog.Handler
	min slog.Level
}

func (h mochiLog) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.Handler.Enabled(ctx, l)
}

func (h mochiLog) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(summarisePacket(a))
		return true
	})
	return h.Handler.Handle(ctx, out)
}

func (h mochiLog) WithAttrs(as []slog.Attr) slog.Handler {
	clean := make([]slog.Attr, len(as))
	for i, a := range as {
		clean[i] = summarisePacket(a)
	}
	return mochiLog{Handler: h.Handler.WithAttrs(clean), min: h.min}
}

func (h mochiLog) WithGroup(name string) slog.Handler {
	return mochiLog{Handler: h.Handler.WithGroup(name), min: h.min}
}

// maxLoggedTopic bounds a topic in a log line (a topic may be 64 KiB).
const maxLoggedTopic = 128

// summarisePacket replaces a packet by its type, id, QoS, topic and
// payload size; any other attribute is returned as it is.
func summarisePacket(a slog.Attr) slog.Attr {
	var pk packets.Packet
	switch v := a.Value.Any().(type) {
	case packets.Packet:
		pk = v
	case *packets.Packet:
		if v == nil {
			return a
		}
		pk = *v
	default:
		return a
	}
	topic := pk.TopicName
	if len(topic) > maxLoggedTopic {
		topic = strings.ToValidUTF8(topic[:maxLoggedTopic], "") + "…"
	}
	return slog.Group(a.Key,
		slog.String("type", packets.PacketNames[pk.FixedHeader.Type]),
		slog.Int("id", int(pk.PacketID)),
		slog.Int("qos", int(pk.FixedHeader.Qos)),
		slog.String("topic", topic),
		slog.Int("payload_bytes", len(pk.Payload)))
}
