package main

import (
	"strings"
	"testing"
)

// BDP_MQTT_EXTERNAL needs the admin pair, and the pair needs it.
func TestConfigExternalMQTTBroker(t *testing.T) {
	for _, c := range []struct {
		name string
		env  map[string]string
		bad  []string // variables the error names; none: accepted
	}{
		{"all three", map[string]string{"BDP_MQTT_EXTERNAL": "tcp://mosquitto:1883", "BDP_MQTT_ADMIN_USER": "admin", "BDP_MQTT_ADMIN_PASSWORD": "pw"}, nil},
		{"mqtt scheme", map[string]string{"BDP_MQTT_EXTERNAL": "mqtt://10.0.0.1:1883", "BDP_MQTT_ADMIN_USER": "admin", "BDP_MQTT_ADMIN_PASSWORD": "pw"}, nil},
		{"none", map[string]string{}, nil},
		{"no admin pair", map[string]string{"BDP_MQTT_EXTERNAL": "tcp://mosquitto:1883"}, []string{"BDP_MQTT_ADMIN_USER", "BDP_MQTT_ADMIN_PASSWORD"}},
		{"no password", map[string]string{"BDP_MQTT_EXTERNAL": "tcp://mosquitto:1883", "BDP_MQTT_ADMIN_USER": "admin"}, []string{"BDP_MQTT_ADMIN_PASSWORD"}},
		{"not a URL", map[string]string{"BDP_MQTT_EXTERNAL": "mosquitto:1883", "BDP_MQTT_ADMIN_USER": "admin", "BDP_MQTT_ADMIN_PASSWORD": "pw"}, []string{"BDP_MQTT_EXTERNAL"}},
		{"TLS", map[string]string{"BDP_MQTT_EXTERNAL": "ssl://mosquitto:8883", "BDP_MQTT_ADMIN_USER": "admin", "BDP_MQTT_ADMIN_PASSWORD": "pw"}, []string{"BDP_MQTT_EXTERNAL"}},
		{"no port", map[string]string{"BDP_MQTT_EXTERNAL": "tcp://mosquitto", "BDP_MQTT_ADMIN_USER": "admin", "BDP_MQTT_ADMIN_PASSWORD": "pw"}, []string{"BDP_MQTT_EXTERNAL"}},
		{"port 0", map[string]string{"BDP_MQTT_EXTERNAL": "tcp://mosquitto:0", "BDP_MQTT_ADMIN_USER": "admin", "BDP_MQTT_ADMIN_PASSWORD": "pw"}, []string{"BDP_MQTT_EXTERNAL"}},
		{"pair without broker", map[string]string{"BDP_MQTT_ADMIN_USER": "admin", "BDP_MQTT_ADMIN_PASSWORD": "pw"}, []string{"BDP_MQTT_ADMIN_USER", "BDP_MQTT_ADMIN_PASSWORD"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := loadConfig(envOf(c.env))
			if len(c.bad) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				if cfg.MQTTExternal != c.env["BDP_MQTT_EXTERNAL"] || cfg.MQTTAdminUser != c.env["BDP_MQTT_ADMIN_USER"] ||
					cfg.MQTTAdminPassword != c.env["BDP_MQTT_ADMIN_PASSWORD"] {
					t.Fatalf("%+v", cfg)
				}
				return
			}
			if err == nil {
				t.Fatal("accepted")
			}
			for _, name := range c.bad {
				if !strings.Contains(err.Error(), name+"=") {
					t.Errorf("the error does not name %s: %v", name, err)
				}
			}
			if strings.Contains(err.Error(), `"pw"`) {
				t.Errorf("the error repeats the admin password: %v", err)
			}
		})
	}
}
