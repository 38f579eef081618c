package bench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"slices"
	"strings"
	"testing"
	"time"
)

// The hand-made CONNECT's length field follows MQTT's variable-length
// encoding (spec 2.2.3 examples).
func TestRemainingLength(t *testing.T) {
	for _, c := range []struct {
		n    int
		want []byte
	}{{0, []byte{0}}, {127, []byte{0x7f}}, {128, []byte{0x80, 0x01}}, {16383, []byte{0xff, 0x7f}}, {16384, []byte{0x80, 0x80, 0x01}}} {
		if got := remainingLength(c.n); !slices.Equal(got, c.want) {
			t.Errorf("remainingLength(%d) = % x, want % x", c.n, got, c.want)
		}
	}
}

// A percentile is the upper bound of the bucket holding it, so the
// figures never flatter the broker.
func TestLatencyPercentiles(t *testing.T) {
	var l latencies
	for us := int64(1); us <= 1000; us++ {
		l.add(us * 100) // 0.1 ms .. 100 ms
	}
	l.add(5 * 60 * 1_000_000) // beyond the last bucket: counted there
	for _, c := range []struct{ p, want float64 }{{0.5, 50.11}, {0.99, 99.11}, {1, 60_100}} {
		if got := l.percentile(c.p); got != c.want {
			t.Errorf("p%v = %v ms, want %v", c.p*100, got, c.want)
		}
	}
}

// An upload body groups each datapoint's observations under one key (a
// repeated key would lose all but the last), with times distinct per
// datapoint, and a live message's value reads back.
func TestLiveBody(t *testing.T) {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var body map[string][]struct {
		Time  time.Time
		Value int64
	}
	if err := json.Unmarshal(liveBody(995, 12, 10, base, 4242), &body); err != nil {
		t.Fatal(err)
	}
	n := 0
	for dp, points := range body {
		for i, p := range points {
			if p.Value != 4242 || (i > 0 && !p.Time.After(points[i-1].Time)) {
				t.Errorf("%s: %+v", dp, points)
			}
			n++
		}
	}
	if n != 12 || len(body) != 10 || len(body["live-0005"]) != 2 {
		t.Errorf("%d observations over %d datapoints: %v", n, len(body), body)
	}
	if v, ok := liveValue([]byte(`{"time":"2026-01-01T00:00:00Z","value":1.234e+06}`)); !ok || v != 1234000 {
		t.Errorf("liveValue = %d, %v", v, ok)
	}
}

// The raw subscriber reads the SUBACK, hands over each PUBLISH's payload
// and acknowledges QoS 1 with its packet id; a refused SUBACK is an error.
func TestReadPublishes(t *testing.T) {
	publish := func(qos byte, id uint16, topic, payload string) []byte {
		body := append([]byte{byte(len(topic) >> 8), byte(len(topic))}, topic...)
		if qos > 0 {
			body = append(body, byte(id>>8), byte(id))
		}
		body = append(body, payload...)
		return append(append([]byte{0x30 | qos<<1}, remainingLength(len(body))...), body...)
	}
	long := strings.Repeat("x", 300) // a two-byte remaining length
	in := append([]byte{0x90, 3, 0, 1, 1}, publish(1, 0x1234, "project/1/datapoint/a", `{"value":1}`)...)
	in = append(in, publish(0, 0, "project/1/datapoint/b", long)...)
	subscribed := make(chan error, 1)
	var acks bytes.Buffer
	var got []string
	err := readPublishes(bufio.NewReader(bytes.NewReader(in)), &acks, subscribed, func(p []byte) { got = append(got, string(p)) })
	if err != io.EOF || <-subscribed != nil {
		t.Fatalf("err %v", err)
	}
	if !slices.Equal(got, []string{`{"value":1}`, long}) || !bytes.Equal(acks.Bytes(), []byte{0x40, 2, 0x12, 0x34}) {
		t.Errorf("received %q, acknowledged % x", got, acks.Bytes())
	}
	if readPublishes(bufio.NewReader(bytes.NewReader([]byte{0x90, 3, 0, 1, 0x80})), io.Discard, subscribed, nil); <-subscribed == nil {
		t.Error("a refused subscription passed")
	}
}
