package mqtt

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openbdp/bdp/codec"
	"github.com/openbdp/bdp/pipeline"
	"github.com/openbdp/bdp/store"
)

// After an upload, a subscriber of the project gets every stored
// observation on its datapoint's topic as {"time","value"}, in time order
// per datapoint, and nothing of another project.
func TestLiveAfterUpload(t *testing.T) {
	e := newLiveEnv(t, liveEnvConfig{})
	e.account("reader", e.p1, e.adminA, false)
	sub := e.subscribe("reader", codec.ProjectTopicPrefix(e.p1)+"#")
	e.upload(obsAt(e.p1, "dp-a", 3, 3.5), obsAt(e.p1, "dp-a", 1, 1), obsAt(e.p2, "dp-a", 1, 9), obsAt(e.p1, "dp-a", 2, -2e-7))
	got := sub.collect(3)
	topic := codec.DatapointTopic(e.p1, "dp-a")
	want := []received{{topic, payloadOf(1, 1)}, {topic, payloadOf(2, -2e-7)}, {topic, payloadOf(3, 3.5)}}
	if !slices.Equal(got, want) {
		t.Fatalf("received\n%swant\n%s", lines(got), lines(want))
	}
	if n := e.metric("bdp_mqtt_live_published_total"); n != 4 {
		t.Errorf("published %v, want 4 (both projects)", n)
	}
}

// A dataPointID holding a byte MQTT gives a meaning is percent-encoded in
// its topic; NUL, which no stored dataPointID holds (decisions.md 4), has
// its encoding too.
func TestLiveTopicEscaping(t *testing.T) {
	e := newLiveEnv(t, liveEnvConfig{})
	e.account("reader", e.p1, e.adminA, false)
	sub := e.subscribe("reader", codec.ProjectTopicPrefix(e.p1)+"#")
	cases := []struct{ id, level string }{
		{"50%", "50%25"},
		{"floor/1", "floor%2F1"},
		{"a+b", "a%2Bb"},
		{"#3", "%233"},
		{"plain", "plain"},
	}
	for i, c := range cases {
		e.upload(obsAt(e.p1, c.id, i, float64(i)))
		got := sub.collect(1)
		want := codec.ProjectTopicPrefix(e.p1) + "datapoint/" + c.level
		if len(got) != 1 || got[0].topic != want || got[0].payload != payloadOf(i, float64(i)) {
			t.Errorf("%q: received %v, want one message on %s", c.id, got, want)
		}
	}
	if codec.ValidateDataPointID("a\x00b") == nil {
		t.Error("a dataPointID with NUL was accepted")
	}
	if got := codec.DatapointTopic(e.p1, "a\x00b"); !strings.HasSuffix(got, "/datapoint/a%00b") {
		t.Errorf("NUL encodes as %q", got)
	}
	// A subscription to one escaped topic gets that datapoint only.
	one := e.subscribe("reader", codec.DatapointTopic(e.p1, "floor/1"))
	e.upload(obsAt(e.p1, "floor/1", 9, 9), obsAt(e.p1, "floor", 9, 9))
	if got := one.collect(1); len(got) != 1 || got[0].topic != codec.DatapointTopic(e.p1, "floor/1") {
		t.Errorf("subscriber of floor/1 got %v", got)
	}
}

// An MQTT user receives only what its creator may read now: the creator's
// TagAuths filter, and losing them (withdrawn role, removed tag, deleted
// user) stops delivery at once, through PostgreSQL's notices.
func TestLiveTagAuthFiltering(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name     string
		withdraw func(e *liveEnv) error
	}{
		{"role unassigned", func(e *liveEnv) error { return e.st.UnassignProjectRole(ctx, e.taggedRole.ID, e.tagged) }},
		{"creator deleted", func(e *liveEnv) error { _, err := e.st.DeleteUser(ctx, e.tagged); return err }},
		{"role's TagAuth changed", func(e *liveEnv) error {
			r := e.taggedRole
			r.AuthedTags = []store.TagAuth{{Key: "name", Value: "office*", Read: true}}
			_, err := e.st.UpdateProjectRole(ctx, r)
			return err
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			forBrokers(t, func(t *testing.T, broker liveEnvConfig) { testTagAuthWithdrawn(t, broker, c.withdraw) })
		})
	}
}

// testTagAuthWithdrawn: the rooms reach the reader until withdraw takes
// its creator's grant, then nothing.
func testTagAuthWithdrawn(t *testing.T, broker liveEnvConfig, withdraw func(e *liveEnv) error) {
	e := newLiveEnv(t, broker)
	acct := e.account("reader", e.p1, e.tagged, false)
	sub := e.subscribe("reader", codec.ProjectTopicPrefix(e.p1)+"#")
	e.upload(obsAt(e.p1, "room-1", 1, 1), obsAt(e.p1, "office-1", 1, 2), obsAt(e.p1, "room-2", 1, 3))
	got := topics(sub.collect(2))
	want := []string{codec.DatapointTopic(e.p1, "room-1"), codec.DatapointTopic(e.p1, "room-2")}
	if slices.Sort(got); !slices.Equal(got, want) {
		t.Fatalf("received %v, want only the rooms %v", got, want)
	}
	if err := withdraw(e); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the gate to follow the change", func() bool { return !e.gate.Allowed(acct, e.p1, "room-1", false) })
	e.upload(obsAt(e.p1, "room-1", 2, 1))
	if got := sub.collect(0); len(got) != 0 {
		t.Fatalf("after the grant went, received %v", got)
	}
}

// A tag given to a datapoint opens it to a TagAuth on that tag at once.
func TestLiveFollowsTagChanges(t *testing.T) {
	forBrokers(t, func(t *testing.T, broker liveEnvConfig) {
		ctx := context.Background()
		e := newLiveEnv(t, broker)
		r := e.taggedRole
		r.AuthedTags = append(r.AuthedTags, store.TagAuth{Key: "zone", Value: "north", Read: true})
		if _, err := e.st.UpdateProjectRole(ctx, r); err != nil {
			t.Fatal(err)
		}
		acct := e.account("reader", e.p1, e.tagged, false)
		sub := e.subscribe("reader", codec.ProjectTopicPrefix(e.p1)+"#")
		e.upload(obsAt(e.p1, "office-1", 1, 1))
		if got := sub.collect(0); len(got) != 0 {
			t.Fatalf("untagged office received: %v", got)
		}
		if _, err := e.st.SetSystemTags(ctx, e.p1, "office-1", []store.DatapointTag{{Key: "zone", Value: "north"}}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the gate to see the tag", func() bool { return e.gate.Allowed(acct, e.p1, "office-1", false) })
		e.upload(obsAt(e.p1, "office-1", 2, 2))
		if got := sub.collect(1); len(got) != 1 || got[0].topic != codec.DatapointTopic(e.p1, "office-1") {
			t.Fatalf("tagged office: received %v", got)
		}
	})
}

// Every subscriber gets its own project's data only: another project of
// the company, another company, and an account whose creator belongs to
// another company than its project (which the API never makes) get none.
func TestLiveIsolation(t *testing.T) {
	forBrokers(t, func(t *testing.T, broker liveEnvConfig) {
		e := newLiveEnv(t, broker)
		e.account("p1", e.p1, e.adminA, false)
		e.account("p2", e.p2, e.adminA, false)
		e.account("q", e.q, e.adminB, false)
		e.account("q-by-a", e.q, e.adminA, false)
		subs := map[string]*subscriber{}
		for name, p := range map[string]int64{"p1": e.p1, "p2": e.p2, "q": e.q, "q-by-a": e.q} {
			subs[name] = e.subscribe(name, codec.ProjectTopicPrefix(p)+"#")
		}
		e.upload(obsAt(e.p1, "x", 1, 1), obsAt(e.p2, "x", 1, 2), obsAt(e.q, "x", 1, 3))
		want := map[string][]received{
			"p1":     {{codec.DatapointTopic(e.p1, "x"), payloadOf(1, 1)}},
			"p2":     {{codec.DatapointTopic(e.p2, "x"), payloadOf(1, 2)}},
			"q":      {{codec.DatapointTopic(e.q, "x"), payloadOf(1, 3)}},
			"q-by-a": nil,
		}
		for name, s := range subs {
			if got := s.collect(len(want[name])); !slices.Equal(got, want[name]) {
				t.Errorf("%s received %v, want %v", name, got, want[name])
			}
		}
	})
}

// When the live queue is full, stored batches are dropped and counted,
// and the upload does not wait for live delivery.
func TestLiveDropsWhenQueueFull(t *testing.T) {
	release, entered := make(chan struct{}), make(chan struct{})
	e := newLiveEnv(t, liveEnvConfig{liveQueue: 10, publisher: func(s *mochiServer) Publisher {
		return &stalledPublisher{Publisher: inlinePublisher{s}, release: release, entered: entered}
	}})
	var once sync.Once
	unstall := func() { once.Do(func() { close(release) }) }
	t.Cleanup(unstall) // before the env's cleanup, which joins the publisher
	e.account("reader", e.p1, e.adminA, false)
	sub := e.subscribe("reader", codec.ProjectTopicPrefix(e.p1)+"#")
	batch := func(first int) []pipeline.Observation {
		var obs []pipeline.Observation
		for i := range 8 {
			obs = append(obs, obsAt(e.p1, "dp", first+i, float64(first+i)))
		}
		return obs
	}
	start := time.Now()
	e.upload(batch(0)...) // taken by the stalled publisher
	select {
	case <-entered:
	case <-time.After(5 * time.Second):
		t.Fatal("the first batch was not taken")
	}
	e.upload(batch(100)...) // queued: 8 of 10
	e.upload(batch(200)...) // does not fit: dropped
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("uploads took %v while live delivery stalled", d)
	}
	waitFor(t, "the drop to be counted", func() bool { return e.metric("bdp_mqtt_live_dropped_total") == 8 })
	if q := e.metric("bdp_mqtt_live_queue_observations"); q != 8 {
		t.Errorf("queue gauge %v, want 8", q)
	}
	unstall()
	got := sub.collect(16)
	if len(got) != 16 || got[0].payload != payloadOf(0, 0) || got[15].payload != payloadOf(107, 107) {
		t.Errorf("received %d messages, want the first two batches:\n%s", len(got), lines(got))
	}
	if n := e.count(`SELECT count(*) FROM observations`); n != 24 {
		t.Errorf("%d rows stored, want all 24: storage does not depend on live delivery", n)
	}
}

// stalledPublisher waits for release before its first publish.
type stalledPublisher struct {
	Publisher
	release, entered chan struct{}
	once             sync.Once
}

func (p *stalledPublisher) Publish(topic string, payload []byte, qos byte) error {
	p.once.Do(func() { close(p.entered) })
	<-p.release
	return p.Publisher.Publish(topic, payload, qos)
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// forBrokers runs a test against the bare mochi server with the test's
// auth hook and against the platform's embedded broker.
func forBrokers(t *testing.T, test func(t *testing.T, broker liveEnvConfig)) {
	t.Run("mochi", func(t *testing.T) { test(t, liveEnvConfig{}) })
	t.Run("embedded", func(t *testing.T) { test(t, liveEnvConfig{embedded: true}) })
}

// A creator who sees the project through a company role only gives its
// MQTT user every datapoint, and nothing once the role is taken away.
func TestLiveCompanyRoleRemoved(t *testing.T) {
	forBrokers(t, func(t *testing.T, broker liveEnvConfig) {
		ctx := context.Background()
		e := newLiveEnv(t, broker)
		admin, err := e.st.User(ctx, e.adminA)
		if err != nil {
			t.Fatal(err)
		}
		viewer, err := e.st.CreateUser(ctx, store.NewUser{CompanyID: admin.CompanyID, FirstName: "V", LastName: "Iewer",
			Email: "viewer@a.test", PasswordHash: "h"})
		if err != nil {
			t.Fatal(err)
		}
		role, err := e.st.CreateCompanyRole(ctx, store.CompanyRole{Name: "viewers", CompanyID: admin.CompanyID})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.st.AssignCompanyRole(ctx, role.ID, viewer.ID); err != nil {
			t.Fatal(err)
		}
		acct := e.account("reader", e.p1, viewer.ID, false)
		sub := e.subscribe("reader", codec.ProjectTopicPrefix(e.p1)+"#")
		e.upload(obsAt(e.p1, "office-1", 1, 1))
		if got := sub.collect(1); len(got) != 1 {
			t.Fatalf("under a company role received %v, want office-1", got)
		}
		if err := e.st.UnassignCompanyRole(ctx, role.ID, viewer.ID); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the gate to follow", func() bool { return !e.gate.Allowed(acct, e.p1, "office-1", false) })
		e.upload(obsAt(e.p1, "office-1", 2, 2))
		if got := sub.collect(0); len(got) != 0 {
			t.Fatalf("after the company role went, received %v", got)
		}
	})
}
