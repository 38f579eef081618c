package mqtt

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openbdp/bdp/store"
)

// A refused publish is logged without its payload: mochi logs the packet
// of a publish an MQTT 3.1.1 client may not make, and a building's data
// (up to the packet size limit) has no place in the log.
func TestRefusedPublishLogsNoPayload(t *testing.T) {
	log := &lockedBuffer{}
	e := newBrokerEnv(t, brokerEnvConfig{log: log})
	e.user("reader", "reader-password", store.MQTTRead)
	c, err := connect3(t, "tcp://"+e.addr, "reader-v3", "reader", "reader-password")
	if err != nil {
		t.Fatal(err)
	}
	secret := "payload-secret-" + strings.Repeat("x", 4096)
	c.Publish("project/"+itoa(e.p)+"/datapoint/room", 1, false, secret).WaitTimeout(5 * time.Second)
	waitUntil(t, func() bool { return strings.Contains(log.String(), "error processing packet") })
	out := log.String()
	if strings.Contains(out, "payload-secret") {
		t.Fatalf("the log holds the payload:\n%.600s", out)
	}
	if !strings.Contains(out, "payload_bytes="+itoa(int64(len(secret)))) {
		t.Errorf("the log line does not summarise the packet:\n%.600s", out)
	}
}

// lockedBuffer is a log written by the broker's goroutines, read by the
// test.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
