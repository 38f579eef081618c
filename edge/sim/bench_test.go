package sim

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/openbdp/bdp/edge"
)

// BenchmarkWriteRoundTrip: write requests one at a time through a broker to
// the simulator and its response back: what the simulator and one broker
// hop each way add to an acked setpoint write. Reports p50 and p99 in µs:
// go test ./edge/sim -run XXX -bench WriteRoundTrip -count 3
func BenchmarkWriteRoundTrip(b *testing.B) {
	broker := startBroker(b)
	p := startPlatform(b, broker)
	startSim(b, broker, p, map[string]*float64{"sp": num(20)})
	took := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		v := 15 + float64(i%10)
		r := edge.Request{Reference: uuid(b), Operation: edge.OpWrite, DataPointID: "sp", Value: &v, Priority: 13}
		payload, err := json.Marshal(r)
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		if resp := p.send(payload, r.Reference); resp.Status != edge.StatusOK {
			b.Fatalf("%+v", resp)
		}
		took = append(took, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds()), "p50_µs")
	b.ReportMetric(float64(took[len(took)*99/100].Microseconds()), "p99_µs")
}
