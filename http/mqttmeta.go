package http

import (
	"net"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"
)

// GET /v2/meta/mqtt tells clients where the MQTT broker listens, so that a
// browser page (the UI's live values) finds the WebSocket listener without
// being configured. api.md leaves the broker address unshown (6); the
// ports are no secret (the MQTT users' credentials are), so the route
// needs no credentials, like the endpoint catalog.

// mqttListenersAnswer is the answer of GET /v2/meta/mqtt.
type mqttListenersAnswer struct {
	Broker    string         `json:"broker" doc:"embedded (bdp's own broker, listed below) or external (BDP_MQTT_EXTERNAL: Mosquitto's listeners, which bdp does not know, are not listed)"`
	Listeners []mqttListener `json:"listeners" doc:"the embedded broker's listeners, TCP first"`
}

// mqttListener is one listener of the embedded broker.
type mqttListener struct {
	Key       string `json:"key" doc:"the addresses.json key: mqtt, mqtt_ws, mqtt_tls or mqtt_wss"`
	Transport string `json:"transport" doc:"tcp, websocket, tls or websocket_tls"`
	Port      int    `json:"port"`
	URL       string `json:"url" doc:"mqtt://, ws://, mqtts:// or wss:// with the host name this request was addressed to and the listener's port (a WebSocket listener takes any path)"`
}

// mqttTransports maps addresses.json keys to transport and URL scheme, in
// the order they are listed.
var mqttTransports = []struct{ key, transport, scheme string }{
	{"mqtt", "tcp", "mqtt"},
	{"mqtt_ws", "websocket", "ws"},
	{"mqtt_tls", "tls", "mqtts"},
	{"mqtt_wss", "websocket_tls", "wss"},
}

func (s *Server) mqttMeta(c *fiber.Ctx, _ *call) (any, error) {
	return mqttListenersFor(s.cfg.MQTTListeners, c.Hostname()), nil
}

// mqttListenersFor lists the listeners of addrs (addresses.json keys to
// host:port) with URLs on host, the host (and maybe port) the client
// addressed. No addresses means an external broker.
func mqttListenersFor(addrs map[string]string, host string) mqttListenersAnswer {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	} else {
		host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	}
	if host == "" {
		host = "localhost"
	}
	out := mqttListenersAnswer{Broker: "external", Listeners: []mqttListener{}}
	if len(addrs) == 0 {
		return out
	}
	out.Broker = "embedded"
	for _, tr := range mqttTransports {
		addr, ok := addrs[tr.key]
		if !ok {
			continue
		}
		_, p, err := net.SplitHostPort(addr)
		port, perr := strconv.Atoi(p)
		if err != nil || perr != nil || port <= 0 {
			continue
		}
		url := tr.scheme + "://" + net.JoinHostPort(host, p)
		if tr.transport == "websocket" || tr.transport == "websocket_tls" {
			url += "/mqtt"
		}
		out.Listeners = append(out.Listeners, mqttListener{Key: tr.key, Transport: tr.transport, Port: port, URL: url})
	}
	return out
}
