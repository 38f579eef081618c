package pipeline

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// collector records what it is handed, and appends to each slice it gets
// to show that its slices are its own.
type collector struct{ got [][]Observation }

func (c *collector) Deliver(obs []Observation) {
	c.got = append(c.got, obs)
	_ = append(obs, Observation{DataPointID: "scribble"})
	for i := range obs {
		obs[i].Value += 1000 // the subscriber may change its slice
	}
}

func TestRouterGroupsABatchPerDatapoint(t *testing.T) {
	t0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(dp string, sec int, v float64) Observation {
		return Observation{ProjectID: 1, DataPointID: dp, Time: t0.Add(time.Duration(sec) * time.Second), Value: v}
	}
	r := NewRouter()
	a1, a2, b, other := &collector{}, &collector{}, &collector{}, &collector{}
	r.Subscribe(1, "a", a1)
	r.Subscribe(1, "a", a2)
	r.Subscribe(1, "b", b)
	endOther := r.Subscribe(2, "a", other) // same name, another project
	endOther()
	endOther() // twice is harmless

	parts := [][]Observation{
		{at("a", 3, 3), at("x", 1, 0), at("b", 1, 1)},
		{at("a", 1, 1), at("b", 2, 2)},
		{},
		{at("a", 2, 2), {ProjectID: 2, DataPointID: "a", Time: t0, Value: 9}},
	}
	r.route(parts...)
	values := func(c *collector) [][]float64 {
		var out [][]float64
		for _, d := range c.got {
			var vs []float64
			for _, o := range d {
				vs = append(vs, o.Value)
			}
			out = append(out, vs)
		}
		return out
	}
	// a1 and a2 each see a's three observations once, in time order; each
	// added 1000 to its own copy only.
	for name, c := range map[string]*collector{"a1": a1, "a2": a2} {
		if got := values(c); len(got) != 1 || !slices.Equal(got[0], []float64{1001, 1002, 1003}) {
			t.Errorf("%s got %v, want one delivery of a at 1, 2, 3", name, got)
		}
	}
	if got := values(b); len(got) != 1 || !slices.Equal(got[0], []float64{1001, 1002}) {
		t.Errorf("b got %v, want one delivery of 1, 2", got)
	}
	if len(other.got) != 0 {
		t.Errorf("an ended subscription got %v", other.got)
	}
	if parts[0][0].Value != 3 {
		t.Errorf("the batch itself was changed: %v", parts[0][0])
	}

	// The scratch is reset between batches: the next one routes afresh.
	r.route([]Observation{at("b", 5, 5)})
	if got := values(b); len(got) != 2 || !slices.Equal(got[1], []float64{1005}) {
		t.Errorf("b's second delivery: %v", got)
	}
	if len(a1.got) != 1 {
		t.Errorf("a1 got a delivery without observations of a: %v", a1.got)
	}
}

// A large batch, then small ones: each is grouped right whatever the
// scratch held before.
func TestRouterAfterALargeBatch(t *testing.T) {
	r := NewRouter()
	c := &collector{}
	r.Subscribe(1, "dp7", c)
	var big []Observation
	for i := range 10_000 {
		big = append(big, Observation{ProjectID: 1, DataPointID: fmt.Sprintf("dp%d", i%5000), Time: time.Unix(int64(i), 0)})
	}
	r.route(big)
	r.route([]Observation{{ProjectID: 1, DataPointID: "dp7", Time: time.Unix(99_999, 0)}})
	if len(c.got) != 2 || len(c.got[0]) != 2 || len(c.got[1]) != 1 {
		t.Fatalf("deliveries %d (%v)", len(c.got), c.got)
	}
}
