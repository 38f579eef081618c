package pipeline

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openbdp/bdp/codec/relay"
)

// committed is a batch of parts, the requests of one batch, as the
// batcher has it after their commit: its keys sorted by sortKeys, a row
// id for every datapoint but the forgotten ones (ForgetProject raced:
// row id 0). The row ids fall as datapoints first arrive, so that row-id
// order is never arrival order. The parts are copied: sortKeys truncates
// their times.
func committed(forgotten []string, parts ...[]Observation) ([]*writeRequest, []rowKey, *Batcher) {
	b := keysOnlyBatcher()
	batch := make([]*writeRequest, len(parts))
	for i, p := range parts {
		batch[i] = &writeRequest{obs: slices.Clone(p)}
		for _, o := range p {
			if k := (dpKey{o.ProjectID, o.DataPointID}); b.ids[k] == 0 && !slices.Contains(forgotten, o.DataPointID) {
				b.ids[k] = 1_000_000 - int64(len(b.ids))
			}
		}
	}
	return batch, b.inputs.sortKeys(batch), b
}

// deliveries renders what collectors got, one line per delivery.
func deliveries(cs ...*collector) string {
	var lines []string
	for i, c := range cs {
		for _, d := range c.got {
			var obs []string
			for _, o := range d {
				obs = append(obs, fmt.Sprintf("%d/%s@%s=%g", o.ProjectID, o.DataPointID, o.Time.UTC().Format(time.RFC3339Nano), o.Value))
			}
			lines = append(lines, fmt.Sprintf("c%d: %s", i, strings.Join(obs, " ")))
		}
	}
	return strings.Join(lines, "\n")
}

// What goes through the relay (relayBatches, the wire format,
// DeliverRelayed) reaches subscribers exactly as route hands it to them:
// the same runs, in the same order, every subscriber its own slice.
func TestRelayDeliversWhatRouteDelivers(t *testing.T) {
	t0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(project int64, dp string, ns int64, v float64) Observation {
		return Observation{ProjectID: project, DataPointID: dp, Time: t0.Add(time.Duration(ns)), Value: v}
	}
	s := int64(time.Second)
	type sub struct {
		project int64
		dp      string
		c       int // collector
	}
	cases := []struct {
		name      string
		subs      []sub
		forgotten []string
		parts     [][]Observation
	}{
		{"arrival order across datapoints", []sub{{1, "x", 0}, {1, "y", 0}, {1, "z", 0}}, nil,
			[][]Observation{{at(1, "y", 1*s, 1), at(1, "x", 2*s, 2)}, {at(1, "z", 3*s, 3), at(1, "y", 4*s, 4)}}},
		{"time order within a datapoint, repeated times kept", []sub{{1, "a", 0}}, nil,
			[][]Observation{{at(1, "a", 3*s, 3), at(1, "a", 1*s, 1)}, {at(1, "a", 1*s+400, 9), at(1, "a", 2*s, 2)}}},
		{"two subscribers of one datapoint own their slices", []sub{{1, "a", 0}, {1, "a", 1}, {1, "b", 1}}, nil,
			[][]Observation{{at(1, "a", 1*s, 1), at(1, "b", 1*s, 2), at(1, "a", 2*s, 3)}}},
		{"unsubscribed datapoints are left out", []sub{{1, "w", 0}}, nil,
			[][]Observation{{at(1, "u", 1*s, 1), at(1, "w", 1*s, 2), at(1, "v", 1*s, 3)}}},
		{"projects apart", []sub{{1, "a", 0}, {1, "b", 0}, {2, "a", 1}, {2, "c", 1}}, nil,
			[][]Observation{{at(2, "c", 1*s, 1), at(1, "b", 1*s, 2)}, {at(2, "a", 1*s, 3), at(1, "a", 1*s, 4), at(2, "c", 2*s, 5)}}},
		{"a forgotten datapoint, one run per observation", []sub{{1, "gone", 0}, {1, "kept", 0}}, []string{"gone"},
			[][]Observation{{at(1, "gone", 2*s, 1), at(1, "kept", 1*s, 2), at(1, "gone", 1*s, 3)}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			routed, relayed := NewRouter(), NewRouter()
			var want, got []*collector
			for _, s := range c.subs {
				for len(want) <= s.c {
					want, got = append(want, &collector{}), append(got, &collector{})
				}
				routed.Subscribe(s.project, s.dp, want[s.c])
				relayed.Subscribe(s.project, s.dp, got[s.c])
			}
			batch, keys, _ := committed(c.forgotten, c.parts...)
			routed.route(batch, keys, &runScratch{})

			batch, keys, b := committed(c.forgotten, c.parts...)
			for _, rb := range b.inputs.relayBatches(batch, keys) {
				data, err := relay.Marshal(rb)
				if err != nil {
					t.Fatal(err)
				}
				back, err := relay.Unmarshal(data)
				if err != nil {
					t.Fatal(err)
				}
				relayed.DeliverRelayed(back)
			}
			if w, g := deliveries(want...), deliveries(got...); w != g {
				t.Fatalf("relayed:\n%s\nrouted:\n%s", g, w)
			}
		})
	}
}

// relayBatches cuts a batch into one relay batch per project, in the
// order of the projects' first runs, with every datapoint's run, whether
// subscribed here or not.
func TestRelayBatchesPerProject(t *testing.T) {
	t0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(project int64, dp string, sec int) Observation {
		return Observation{ProjectID: project, DataPointID: dp, Time: t0.Add(time.Duration(sec) * time.Second), Value: float64(sec)}
	}
	batch, keys, b := committed(nil,
		[]Observation{at(3, "p", 5), at(1, "q", 1), at(3, "p", 1)},
		[]Observation{at(2, "r", 1), at(1, "s", 1), at(1, "q", 0)})
	var got []string
	for _, rb := range b.inputs.relayBatches(batch, keys) {
		for _, r := range rb.Runs {
			got = append(got, fmt.Sprintf("%d/%s%v", rb.ProjectID, r.DataPointID, r.Values))
		}
	}
	want := []string{"3/p[1 5]", "1/q[0 1]", "1/s[1]", "2/r[1]"}
	if !slices.Equal(got, want) {
		t.Fatalf("relay batches %v, want %v", got, want)
	}
}
