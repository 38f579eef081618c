package main

import "testing"

// The embedded broker's WebSocket listener (the browser UI's live values)
// is on by default, beside the TCP listener.
func TestConfigWebSocketListener(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		want string
	}{
		{"default", nil, "127.0.0.1:9001"},
		{"auto beside a chosen TCP address", map[string]string{"BDP_MQTT_ADDR": "0.0.0.0:1884"}, "0.0.0.0:9001"},
		{"auto beside a free TCP port", map[string]string{"BDP_MQTT_ADDR": "127.0.0.1:0"}, "127.0.0.1:0"},
		{"explicit auto", map[string]string{"BDP_MQTT_WS_ADDR": "auto", "BDP_MQTT_ADDR": "[::1]:0"}, "[::1]:0"},
		{"given", map[string]string{"BDP_MQTT_WS_ADDR": "127.0.0.1:8083"}, "127.0.0.1:8083"},
		{"off", map[string]string{"BDP_MQTT_WS_ADDR": "off"}, ""},
		{"external broker", map[string]string{"BDP_MQTT_EXTERNAL": "tcp://127.0.0.1:1883", "BDP_MQTT_ADMIN_USER": "admin",
			"BDP_MQTT_ADMIN_PASSWORD": "secret-password"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := loadConfig(envOf(tc.env))
			if err != nil {
				t.Fatal(err)
			}
			if c.MQTTWSAddr != tc.want {
				t.Errorf("MQTTWSAddr %q, want %q", c.MQTTWSAddr, tc.want)
			}
		})
	}
}
