package mqtt

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openbdp/bdp/codec"
	"github.com/openbdp/bdp/mqtt/mosquittotest"
	"github.com/openbdp/bdp/store"
)

func TestExternalDynsecBatchAnswersInOrder(t *testing.T) {
	f := newExternalFixture(t)
	ctx := context.Background()
	answers, err := f.ext.ds.Do(ctx,
		dsCreateRole("r1"),
		// Not marked as bdp's (dynsecManaged): no sync deletes them.
		DynsecCommand{"command": "createClient", "username": "c1", "password": "password-1"},
		DynsecCommand{"command": "createClient", "username": "c1", "password": "password-2"}, // a second time: refused
		dsAddRoleACL("r1", dynsecACL{"subscribePattern", "x/#"}),
		dsGetRole("no-such-role"))
	if err != nil {
		t.Fatal(err)
	}
	var errs []string
	for _, a := range answers {
		if a.Err() == nil {
			errs = append(errs, "")
		} else {
			errs = append(errs, a.Error)
		}
	}
	want := []string{"", "", dynsecClientExists, "", dynsecRoleNotFound}
	if strings.Join(errs, "|") != strings.Join(want, "|") {
		t.Fatalf("answers %q, want %q", errs, want)
	}
	if err := f.ext.ds.Run(ctx, dsDeleteClient("no-such-client")); !dynsecIs(err, dynsecClientNotFound) {
		t.Fatalf("delete of an unknown client: %v", err)
	}
	// More commands than one message takes: every one answered, in order.
	var many []DynsecCommand
	for i := range dynsecBatch + 10 {
		many = append(many, dsCreateRole(fmt.Sprintf("many-%d", i)))
	}
	answers, err = f.ext.ds.Do(ctx, many...)
	if err != nil || len(answers) != len(many) {
		t.Fatalf("%d answers to %d commands: %v", len(answers), len(many), err)
	}
	for i, a := range answers {
		if a.Command != "createRole" || a.Err() != nil {
			t.Fatalf("answer %d: %+v", i, a)
		}
	}
	if _, err := f.connect(t, "c1", "password-1"); err != nil {
		t.Fatalf("the client made through the plugin: %v", err)
	}
	if _, err := f.connect(t, "c1", "password-2"); err == nil {
		t.Fatal("the refused second createClient's password works")
	}
}

func TestExternalUsersAuthAndACL(t *testing.T) {
	f := newExternalFixture(t)
	pid, admin := f.company(t, "acme")
	other, otherAdmin := f.company(t, "other")
	f.mqttUser(t, store.MQTTUser{ProjectID: pid, Username: "reader", Rights: store.MQTTRead, CreatedBy: admin}, "reader-pw-1")
	f.mqttUser(t, store.MQTTUser{ProjectID: pid, Username: "writer", Rights: store.MQTTWrite, CreatedBy: admin}, "writer-pw-1")
	f.mqttUser(t, store.MQTTUser{ProjectID: other, Username: "stranger", Rights: store.MQTTWrite, CreatedBy: otherAdmin}, "stranger-pw")

	for _, c := range []struct{ user, password string }{
		{"reader", "wrong-password"}, {"reader", ""}, {"nobody", "reader-pw-1"}, {mosquittotest.AdminUser, "reader-pw-1"},
	} {
		if _, err := f.connect(t, c.user, c.password); err == nil {
			t.Errorf("%s with password %q: connected", c.user, c.password)
		}
	}
	reader := f.mustConnect(t, "reader", "reader-pw-1")
	writer := f.mustConnect(t, "writer", "writer-pw-1")
	stranger := f.mustConnect(t, "stranger", "stranger-pw")

	own := fmt.Sprintf("project/%d/#", pid)
	for _, c := range []struct {
		client *mqttClient
		filter string
		want   bool
	}{
		{reader, own, true},
		{reader, fmt.Sprintf("project/%d/#", other), false},
		{reader, "project/+/datapoint/#", false},
		{reader, "#", false},
		{reader, fmt.Sprintf("edge/%d/#", pid), false},
		{writer, own, true},
		{stranger, fmt.Sprintf("project/%d/#", other), true},
		{stranger, own, false},
	} {
		if got := c.client.subscribe(t, c.filter); got != c.want {
			t.Errorf("subscribe %s: granted %v, want %v", c.filter, got, c.want)
		}
	}

	// The write user publishes; bdp ingests it (stored, then acknowledged)
	// and the read user receives it from the broker.
	topic := codec.DatapointTopic(pid, "hall/temp")
	writer.publish(t, topic, `[{"time":"2026-01-02T03:04:05Z","value":21.5},{"time":"2026-01-02T03:04:06Z","value":22}]`)
	eventually(t, "the write user's publish stored", func() bool { return f.stored(t, pid, "hall/temp") == 2 })
	eventually(t, "the read user receives the write user's publish", func() bool { return len(reader.received(topic)) == 1 })
	// The read user may not publish: nothing of it is stored.
	reader.publish(t, topic, `{"time":"2026-01-02T03:04:07Z","value":99}`)
	// Nor may the other project's user publish into this project.
	stranger.publish(t, codec.DatapointTopic(pid, "intruder"), `{"time":"2026-01-02T03:04:07Z","value":99}`)
	writer.publish(t, codec.DatapointTopic(pid, "marker"), `{"time":"2026-01-02T03:04:07Z","value":1}`)
	eventually(t, "the marker stored", func() bool { return f.stored(t, pid, "marker") == 1 })
	if n := f.stored(t, pid, "hall/temp"); n != 2 {
		t.Errorf("the read user's publish was stored: %d observations", n)
	}
	if n := f.stored(t, pid, "intruder"); n != 0 {
		t.Errorf("another project's user published into this one: %d stored", n)
	}

	// Live data of an upload through the Sink: the project's subscribers get
	// it, the other project's do not.
	live := codec.DatapointTopic(pid, "up%load")
	f.ingest(t, pid, "up%load")
	if err := f.ext.Publish(live, []byte(`{"time":"2026-01-02T03:04:08Z","value":1}`), 1); err != nil {
		t.Fatal(err)
	}
	eventually(t, "live data reaches the read user", func() bool { return len(reader.received(live)) == 1 })
	if ts := stranger.topics(); len(ts) != 0 {
		t.Errorf("the other project's user received %v", ts)
	}
	// bdp's own live data is not ingested again (it would loop). A marker
	// published after it is stored once the broker has handed on both, in
	// the order it got them.
	writer.publish(t, codec.DatapointTopic(pid, "marker"), `{"time":"2026-01-02T03:04:08Z","value":2}`)
	eventually(t, "the second marker stored", func() bool { return f.stored(t, pid, "marker") == 2 })
	if n := f.stored(t, pid, "up%load"); n != 1 {
		t.Errorf("live data was ingested back: %d observations of up%%load", n)
	}

	// Rights changed without a new password (PUT): the broker follows the
	// notice, changing the client's roles, which closes its sessions
	// (Mosquitto does so whenever a client's roles change); connected
	// again, the read user made a write user may publish, and made a read
	// user again it may not.
	readerRow, err := f.store.MQTTUserByUsername(context.Background(), "reader")
	if err != nil {
		t.Fatal(err)
	}
	setRights := func(rights string) {
		if _, err := f.store.UpdateMQTTUser(context.Background(), pid, readerRow.ID, nil, &rights, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	setRights(store.MQTTWrite)
	reader.waitLost(t, 2*time.Second, "rights changed")
	promoted := f.mustConnect(t, "reader", "reader-pw-1")
	promoted.publish(t, codec.DatapointTopic(pid, "promoted"), `{"time":"2026-01-02T03:04:09Z","value":1}`)
	eventually(t, "the promoted user's publish stored", func() bool { return f.stored(t, pid, "promoted") == 1 })
	setRights(store.MQTTRead)
	promoted.waitLost(t, 2*time.Second, "rights changed back")
	demoted := f.mustConnect(t, "reader", "reader-pw-1")
	demoted.publish(t, codec.DatapointTopic(pid, "demoted"), `{"time":"2026-01-02T03:04:10Z","value":1}`)
	writer.publish(t, codec.DatapointTopic(pid, "marker2"), `{"time":"2026-01-02T03:04:10Z","value":1}`)
	eventually(t, "the second marker stored", func() bool { return f.stored(t, pid, "marker2") == 1 })
	if n := f.stored(t, pid, "demoted"); n != 0 {
		t.Errorf("a user made read-only again published: %d observations stored", n)
	}
}

func TestExternalTagAuthFiltersWhatAReadUserReceives(t *testing.T) {
	f := newExternalFixture(t)
	ctx := context.Background()
	pid, admin := f.company(t, "acme")
	p, err := f.store.Project(ctx, pid)
	if err != nil {
		t.Fatal(err)
	}
	limited, err := f.store.CreateUser(ctx, store.NewUser{CompanyID: p.CompanyID, FirstName: "L", LastName: "U", Email: "l@acme.test", PasswordHash: "h"})
	if err != nil {
		t.Fatal(err)
	}
	role, err := f.store.CreateProjectRole(ctx, store.ProjectRole{Name: "rooms", ProjectID: pid, AuthedEndpoints: []int32{1},
		AuthedTags: []store.TagAuth{{Key: "name", Value: "room*", Read: true, Write: true}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.store.AssignProjectRole(ctx, role.ID, limited.ID); err != nil {
		t.Fatal(err)
	}
	f.ingest(t, pid, "room1", "hall1")
	f.mqttUser(t, store.MQTTUser{ProjectID: pid, Username: "rooms-reader", Rights: store.MQTTRead, CreatedBy: limited.ID}, "rooms-reader-pw")
	f.mqttUser(t, store.MQTTUser{ProjectID: pid, Username: "rooms-writer", Rights: store.MQTTWrite, CreatedBy: limited.ID}, "rooms-writer-pw")
	f.mqttUser(t, store.MQTTUser{ProjectID: pid, Username: "all-reader", Rights: store.MQTTRead, CreatedBy: admin}, "all-reader-pw")
	rooms := f.mustConnect(t, "rooms-reader", "rooms-reader-pw")
	all := f.mustConnect(t, "all-reader", "all-reader-pw")
	for _, c := range []*mqttClient{rooms, all} {
		if !c.subscribe(t, fmt.Sprintf("project/%d/#", pid)) {
			t.Fatal("subscribe to the own project refused")
		}
	}
	publish := func(id string) {
		if err := f.ext.Publish(codec.DatapointTopic(pid, id), []byte(`{"time":"2026-01-02T03:04:05Z","value":1}`), 1); err != nil {
			t.Fatal(err)
		}
	}
	// hall1 first: the broker delivers in order, so had the limited
	// reader been sent hall1, it would have it before room1.
	publish("hall1")
	publish("room1")
	eventually(t, "the unlimited reader gets both", func() bool { return len(all.topics()) == 2 })
	eventually(t, "the limited reader gets room1", func() bool { return len(rooms.received(codec.DatapointTopic(pid, "room1"))) == 1 })
	if got := rooms.topics(); len(got) != 1 || got[0] != codec.DatapointTopic(pid, "room1") {
		t.Fatalf("the TagAuth-limited reader received %v, want only room1", got)
	}

	// A new datapoint its creator may read: listed once live data shows it.
	f.ingest(t, pid, "room2")
	publish("room2")
	eventually(t, "a new readable datapoint reaches the limited reader", func() bool {
		publish("room2")
		return len(rooms.received(codec.DatapointTopic(pid, "room2"))) > 0
	})

	// The write user may publish only what its creator may write.
	writer := f.mustConnect(t, "rooms-writer", "rooms-writer-pw")
	writer.publish(t, codec.DatapointTopic(pid, "hall1"), `{"time":"2026-01-02T03:04:09Z","value":5}`)
	writer.publish(t, codec.DatapointTopic(pid, "room1"), `{"time":"2026-01-02T03:04:09Z","value":5}`)
	eventually(t, "a writable datapoint stored", func() bool { return f.stored(t, pid, "room1") == 2 })
	if n := f.stored(t, pid, "hall1"); n != 1 {
		t.Errorf("hall1, outside the creator's TagAuths, has %d observations after the write user's publish", n)
	}

	// The creator loses the grant: so does the MQTT user, at once.
	if err := f.store.UnassignProjectRole(ctx, role.ID, limited.ID); err != nil {
		t.Fatal(err)
	}
	before := len(rooms.received(codec.DatapointTopic(pid, "room1")))
	time.Sleep(300 * time.Millisecond) // the notice and the sync
	publish("room1")
	eventually(t, "the unlimited reader still gets room1", func() bool { return len(all.received(codec.DatapointTopic(pid, "room1"))) == 2 })
	time.Sleep(100 * time.Millisecond)
	if n := len(rooms.received(codec.DatapointTopic(pid, "room1"))); n != before {
		t.Errorf("after its creator lost the TagAuth the reader still received room1 (%d messages, %d before)", n, before)
	}
}

func TestExternalExpiryDeleteAndEdgeRotation(t *testing.T) {
	f := newExternalFixture(t)
	ctx := context.Background()
	pid, admin := f.company(t, "acme")

	// Expiry: a 2-s user's session closes within 1 s of valid_until.
	until := time.Now().Add(2 * time.Second)
	f.mqttUser(t, store.MQTTUser{ProjectID: pid, Username: "brief", Rights: store.MQTTRead, CreatedBy: admin, ValidUntil: &until}, "brief-pw-1")
	brief := f.mustConnect(t, "brief", "brief-pw-1")
	brief.waitLost(t, time.Until(until)+time.Second, "expiry")
	if late := time.Since(until); late < -50*time.Millisecond {
		t.Errorf("the session closed %s before valid_until", -late)
	}
	if _, err := f.connect(t, "brief", "brief-pw-1"); err == nil {
		t.Error("an expired user connects")
	}

	// Deleting a user closes its session.
	gone := f.mqttUser(t, store.MQTTUser{ProjectID: pid, Username: "gone", Rights: store.MQTTRead, CreatedBy: admin}, "gone-pw-1")
	goneClient := f.mustConnect(t, "gone", "gone-pw-1")
	if err := f.store.DeleteMQTTUser(ctx, pid, gone.ID); err != nil {
		t.Fatal(err)
	}
	goneClient.waitLost(t, 2*time.Second, "delete")
	if _, err := f.connect(t, "gone", "gone-pw-1"); err == nil {
		t.Error("a deleted user connects")
	}
	// Its roles go too: its own, and its creator's in the project, which
	// no user holds any more.
	eventually(t, "the deleted users' roles removed", func() bool {
		answers, err := f.ext.ds.Do(ctx, dsListRoles())
		if err != nil || answers[0].Err() != nil {
			t.Fatalf("list roles: %v %v", err, answers)
		}
		var got struct{ Roles []string }
		if err := json.Unmarshal(answers[0].Data, &got); err != nil {
			t.Fatal(err)
		}
		return !slices.Contains(got.Roles, roleOf(gone.ID)) && !slices.Contains(got.Roles, reachRole(admin, pid, false))
	})

	// Edge credentials: edge/{p}/# only; a rotation closes the old session
	// and refuses the old password.
	edge := f.mqttUser(t, store.MQTTUser{ProjectID: pid, Edge: true}, "edge-pw-1")
	old := f.mustConnect(t, edge.Username, "edge-pw-1")
	if !old.subscribe(t, fmt.Sprintf("edge/%d/#", pid)) {
		t.Error("edge credentials may not subscribe to their tree")
	}
	if old.subscribe(t, fmt.Sprintf("project/%d/#", pid)) {
		t.Error("edge credentials may subscribe to the project's live data")
	}
	f.mqttUser(t, store.MQTTUser{ProjectID: pid, Edge: true}, "edge-pw-2")
	old.waitLost(t, 2*time.Second, "edge rotation")
	if _, err := f.connect(t, edge.Username, "edge-pw-1"); err == nil {
		t.Error("the old edge password still works")
	}
	f.mustConnect(t, edge.Username, "edge-pw-2")
}
