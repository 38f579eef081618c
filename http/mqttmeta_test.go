package http

import (
	"reflect"
	"testing"
)

func TestMQTTListenersFor(t *testing.T) {
	embedded := map[string]string{"mqtt": "127.0.0.1:1883", "mqtt_ws": "0.0.0.0:9001", "mqtt_wss": "[::]:8443"}
	for _, tc := range []struct {
		name  string
		addrs map[string]string
		host  string
		want  mqttListenersAnswer
	}{
		{"external broker", nil, "bdp.example:8080", mqttListenersAnswer{Broker: "external", Listeners: []mqttListener{}}},
		{"embedded, on the host asked", embedded, "bdp.example:8080", mqttListenersAnswer{Broker: "embedded", Listeners: []mqttListener{
			{Key: "mqtt", Transport: "tcp", Port: 1883, URL: "mqtt://bdp.example:1883"},
			{Key: "mqtt_ws", Transport: "websocket", Port: 9001, URL: "ws://bdp.example:9001/mqtt"},
			{Key: "mqtt_wss", Transport: "websocket_tls", Port: 8443, URL: "wss://bdp.example:8443/mqtt"},
		}}},
		{"an IPv6 host without port", map[string]string{"mqtt_ws": "[::1]:41000"}, "[::1]", mqttListenersAnswer{Broker: "embedded", Listeners: []mqttListener{
			{Key: "mqtt_ws", Transport: "websocket", Port: 41000, URL: "ws://[::1]:41000/mqtt"},
		}}},
		{"no host", map[string]string{"mqtt": "127.0.0.1:1883", "mqtt_ws": "bad"}, "", mqttListenersAnswer{Broker: "embedded", Listeners: []mqttListener{
			{Key: "mqtt", Transport: "tcp", Port: 1883, URL: "mqtt://localhost:1883"},
		}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := mqttListenersFor(tc.addrs, tc.host); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}
