package main

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/openbdp/bdp/codec"
)

// Live data reaches the standard clients people use, on the embedded
// broker and on Mosquitto alike: Eclipse paho.golang (MQTT 5, subscribed
// without a subscription identifier, gets none: the property with value
// 0 is a protocol error) and Debian's mosquitto_sub (MQTT 3.1.1 and 5)
// with a kept session, which gets what was stored while it was away
// oldest first, though its SUBSCRIBE on return uses a packet id of a
// message the broker has in flight to it.
func TestServeMQTTThirdPartyClients(t *testing.T) {
	for _, mode := range []struct {
		name     string
		external bool
	}{{"embedded", false}, {"external", true}} {
		t.Run(mode.name, func(t *testing.T) {
			p := newMQTTPlatform(t, mode.external)
			s := p.start()
			p.createProject(s)
			p.mqttUser(s, "rd", "rd-password-1", "read")
			u, err := url.Parse(p.url)
			if err != nil {
				t.Fatal(err)
			}
			upload := func(dp string, first int, values ...string) {
				t.Helper()
				var obs []string
				for i, v := range values {
					obs = append(obs, fmt.Sprintf(`{"time":"2026-03-02T00:00:%02dZ","value":%s}`, first+i, v))
				}
				if status, body := s.request("POST", fmt.Sprintf("/v2/project/%d/timeseries", p.project), extAdmin,
					fmt.Sprintf(`{%q:[%s]}`, dp, strings.Join(obs, ","))); status != 200 {
					t.Fatalf("upload: %d %s", status, body)
				}
			}

			t.Run("paho.golang MQTT 5", func(t *testing.T) {
				got := pahoSubscriber(t, u.Host, "rd", "rd-password-1", codec.DatapointTopic(p.project, "paho"))
				upload("paho", 0, "1", "2", "3")
				for i := 1; i <= 3; i++ {
					select {
					case m := <-got:
						if want := fmt.Sprintf(`{"time":"2026-03-02T00:00:%02dZ","value":%d}`, i-1, i); string(m.Payload) != want {
							t.Fatalf("received %s, want %s", m.Payload, want)
						}
						if si := m.Properties.SubscriptionIdentifier; si != nil {
							t.Fatalf("a subscription without an identifier got the subscription identifier %d", *si)
						}
					case <-time.After(10 * time.Second):
						t.Fatalf("observation %d did not arrive", i)
					}
				}
			})

			for _, version := range []string{"mqttv311", "mqttv5"} {
				t.Run("mosquitto_sub "+version+" kept session", func(t *testing.T) {
					dp := "sub-" + version
					sub := func(args ...string) (string, error) {
						t.Helper()
						ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
						defer cancel()
						cmd := exec.CommandContext(ctx, "mosquitto_sub", append([]string{"-h", u.Hostname(), "-p", u.Port(),
							"-u", "rd", "-P", "rd-password-1", "-V", version, "-i", "keeper-" + version, "-c", "-q", "1",
							"-t", codec.DatapointTopic(p.project, dp)}, args...)...)
						out, err := cmd.CombinedOutput()
						return string(out), err
					}
					if out, err := sub("-E"); err != nil { // subscribes, and leaves its session
						t.Fatalf("mosquitto_sub: %v\n%s", err, out)
					}
					// 20 values: mochi's order was a map's, 5 of them came in
					// order now and then.
					var seq []string
					for i := 1; i <= 20; i++ {
						seq = append(seq, strconv.Itoa(i))
					}
					upload(dp, 0, seq...)
					out, err := sub("-C", "20", "-W", "20")
					if err != nil || values(out) != strings.Join(seq, "\n") {
						t.Fatalf("mosquitto_sub returning to its session: %v\n%s\nwant the values 1 to 20 in order", err, out)
					}
				})
			}
		})
	}
}

// values is the value of each JSON payload mosquitto_sub printed, a line
// each.
func values(out string) string {
	var vs []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		_, v, ok := strings.Cut(line, `"value":`)
		if !ok {
			return out
		}
		vs = append(vs, strings.TrimSuffix(v, "}"))
	}
	return strings.Join(vs, "\n")
}

// pahoSubscriber connects an Eclipse paho.golang MQTT 5 client and
// subscribes it to topic at QoS 1 without a subscription identifier; what
// arrives is handed on.
func pahoSubscriber(t *testing.T, addr, username, password, topic string) chan *paho.Publish {
	t.Helper()
	got := make(chan *paho.Publish, 100)
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c := paho.NewClient(paho.ClientConfig{Conn: conn, OnPublishReceived: []func(paho.PublishReceived) (bool, error){
		func(p paho.PublishReceived) (bool, error) { got <- p.Packet; return true, nil }}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if ack, err := c.Connect(ctx, &paho.Connect{ClientID: "paho-" + username, CleanStart: true, KeepAlive: 30,
		Username: username, UsernameFlag: true, Password: []byte(password), PasswordFlag: true}); err != nil || ack.ReasonCode != 0 {
		t.Fatalf("connect (MQTT 5): %v %+v", err, ack)
	}
	t.Cleanup(func() { _ = c.Disconnect(&paho.Disconnect{}) })
	if ack, err := c.Subscribe(ctx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: topic, QoS: 1}}}); err != nil ||
		len(ack.Reasons) != 1 || ack.Reasons[0] != 1 {
		t.Fatalf("subscribe: %v %+v", err, ack)
	}
	return got
}
