package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/openbdp/bdp/codec"
)

// createMQTTUser makes an MQTT user of project through the API.
func createMQTTUser(t *testing.T, s *server, projectID int64, as func(*http.Request), username, rights string) {
	t.Helper()
	status, body := s.request("POST", fmt.Sprintf("/v2/project/%d/mqttuser", projectID), as,
		fmt.Sprintf(`{"username":%q,"password":"mqtt-password-1","rights":%q}`, username, rights))
	if status != 201 {
		t.Fatalf("MQTT user %s: %d %s", username, status, body)
	}
}

// mqttAddr is the embedded broker's address from addresses.json.
func mqttAddr(t *testing.T, s *server) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(s.dataDir, "addresses.json"))
	if err != nil {
		t.Fatal(err)
	}
	var addrs map[string]string
	if err := json.Unmarshal(b, &addrs); err != nil || addrs["mqtt"] == "" {
		t.Fatalf("addresses.json: %s (%v)", b, err)
	}
	return "tcp://" + addrs["mqtt"]
}

func mqttConnect(t *testing.T, s *server, clientID, username string, clean bool) paho.Client {
	t.Helper()
	c := paho.NewClient(paho.NewClientOptions().AddBroker(mqttAddr(t, s)).SetClientID(clientID).
		SetUsername(username).SetPassword("mqtt-password-1").SetAutoReconnect(false).SetCleanSession(clean).
		SetProtocolVersion(4).SetOrderMatters(false))
	if tok := c.Connect(); !tok.WaitTimeout(15*time.Second) || tok.Error() != nil {
		t.Fatalf("connect %s: %v", username, tok.Error())
	}
	return c
}

// bdp serve publishes every stored observation live: an HTTP upload's and
// the outputs its virtual datapoint calculates from it (the actors engine
// writes them through the pipeline like any source).
func TestServeLiveDataAfterUploadAndVirtualDatapoint(t *testing.T) {
	s := startServe(t, newDataDir(t))
	pid, admin := vdpProject(t, s)
	createMQTTUser(t, s, pid, admin, "live-reader", "read")
	c := mqttConnect(t, s, "live-reader-1", "live-reader", true)
	defer c.Disconnect(0)
	got := make(chan string, 100)
	if tok := c.Subscribe(codec.ProjectTopicPrefix(pid)+"#", 1, func(_ paho.Client, m paho.Message) {
		got <- m.Topic() + " " + string(m.Payload())
	}); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatalf("subscribe: %v", tok.Error())
	}
	at := time.Date(2026, 8, 3, 6, 0, 0, 0, time.UTC)
	var up strings.Builder
	up.WriteString(`{"temp":[`)
	for i := range 3 {
		if i > 0 {
			up.WriteByte(',')
		}
		fmt.Fprintf(&up, `{"time":%q,"value":%d}`, at.Add(time.Duration(i)*time.Minute).Format(time.RFC3339), 3*(i+1))
	}
	up.WriteString(`]}`)
	if status, body := s.request("POST", fmt.Sprintf("/v2/project/%d/timeseries", pid), admin, up.String()); status != 200 {
		t.Fatalf("upload: %d %s", status, body)
	}
	want := map[string]bool{}
	for i, v := range []float64{3, 6, 9} {
		want[codec.DatapointTopic(pid, "temp")+" "+string(codec.AppendObservationJSON(nil, at.Add(time.Duration(i)*time.Minute), v))] = true
	}
	// avg3, the mean of the newest three: 3, 4.5, 6.
	for i, v := range []float64{3, 4.5, 6} {
		want[codec.DatapointTopic(pid, "avg3")+" "+string(codec.AppendObservationJSON(nil, at.Add(time.Duration(i)*time.Minute), v))] = true
	}
	seen := map[string]bool{}
	for deadline := time.After(20 * time.Second); len(seen) < len(want); {
		select {
		case m := <-got:
			if !want[m] {
				t.Errorf("unexpected message %s", m)
			}
			seen[m] = true
		case <-deadline:
			t.Fatalf("received %v, want %v", seen, want)
		}
	}
	if status, body := s.request("GET", "/metrics", nil, ""); status != 200 || !containsAll(string(body),
		"bdp_mqtt_live_published_total 6", "bdp_mqtt_live_dropped_total 0") {
		t.Errorf("/metrics: %s", grepLines(string(body), "bdp_mqtt_live"))
	}
	if err := s.stop(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
}

// kill -9 of bdp serve while gateways publish QoS 1 arrays: every
// observation acknowledged by a PUBACK is stored after the restart.
func TestServeMQTTIngestionKillDashNineLosesNoAcknowledged(t *testing.T) {
	dir := newDataDir(t)
	s := startServe(t, dir)
	pid, admin := vdpProject(t, s)
	createMQTTUser(t, s, pid, admin, "gateway", "write")
	const publishers, perMessage = 4, 50
	at := time.Date(2026, 9, 1, 0, 0, 0, 0, time.UTC)
	var acked atomic.Int64
	var mu sync.Mutex
	ackedTimes := map[string][]time.Time{} // datapoint → acknowledged times
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for p := range publishers {
		c := mqttConnect(t, s, fmt.Sprintf("gw-%d", p), "gateway", true)
		dp := fmt.Sprintf("gw-%d", p)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Disconnect(0)
			type sent struct {
				tok   paho.Token
				times []time.Time
			}
			window := make(chan sent, 32) // up to 32 messages in flight
			done := make(chan struct{})
			go func() {
				defer close(done)
				for m := range window {
					if m.tok.WaitTimeout(30*time.Second) && m.tok.Error() == nil {
						acked.Add(int64(len(m.times)))
						mu.Lock()
						ackedTimes[dp] = append(ackedTimes[dp], m.times...)
						mu.Unlock()
					}
				}
			}()
			defer func() { close(window); <-done }()
			for m := 0; ; m++ {
				select {
				case <-stop:
					return
				default:
				}
				if !c.IsConnectionOpen() {
					return
				}
				var b strings.Builder
				times := make([]time.Time, perMessage)
				b.WriteByte('[')
				for i := range perMessage {
					times[i] = at.Add(time.Duration(m*perMessage+i) * time.Second)
					if i > 0 {
						b.WriteByte(',')
					}
					b.Write(codec.AppendObservationJSON(nil, times[i], float64(i)))
				}
				b.WriteByte(']')
				window <- sent{c.Publish(codec.DatapointTopic(pid, dp), 1, false, b.String()), times}
			}
		}()
	}
	// Let ingestion run, then kill in the middle of it.
	for deadline := time.Now().Add(30 * time.Second); acked.Load() < 20_000 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	if err := s.stop(syscall.SIGKILL); err == nil {
		t.Fatal("kill -9 must end bdp serve with an error")
	}
	close(stop)
	wg.Wait()
	if acked.Load() == 0 {
		t.Fatal("nothing was acknowledged before the kill")
	}
	s = startServe(t, dir)
	var total int
	for p := range publishers {
		dp := fmt.Sprintf("gw-%d", p)
		stored := storedTimes(t, s, pid, admin, dp)
		for _, tm := range ackedTimes[dp] {
			if !stored[tm.Format(time.RFC3339)] {
				t.Fatalf("%s at %s was acknowledged but is not stored (%d of %d acknowledged observations stored)",
					dp, tm.Format(time.RFC3339), len(stored), len(ackedTimes[dp]))
			}
		}
		total += len(ackedTimes[dp])
	}
	t.Logf("%d acknowledged observations, all stored after kill -9", total)
	if err := s.stop(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
}

// storedTimes lists the stored times of a datapoint through the export.
func storedTimes(t *testing.T, s *server, pid int64, as func(*http.Request), dp string) map[string]bool {
	t.Helper()
	status, body := s.request("GET", fmt.Sprintf("/v2/datapoint/timeseries?project_id=%d&dataPointID=%s&start=2026-09-01T00:00:00Z&end=2027-01-01T00:00:00Z", pid, dp), as, "")
	if status != 200 {
		t.Fatalf("export %s: %d %.300s", dp, status, body)
	}
	var got struct {
		Data []struct {
			Time string `json:"time"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	out := make(map[string]bool, len(got.Data))
	for _, d := range got.Data {
		out[d.Time] = true
	}
	return out
}
