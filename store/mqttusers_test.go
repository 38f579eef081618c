package store

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/openbdp/bdp/fault"
)

func inOneHour() *time.Time {
	t := time.Now().Add(time.Hour)
	return &t
}

func TestMQTTUserCreateReadUpdate(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	_, pid, uid := companyWithProject(t, s, "acme")
	_, other, otherUID := companyWithProject(t, s, "other")

	u, err := s.CreateMQTTUser(ctx, MQTTUser{ProjectID: pid, Username: "gw", PasswordHash: "h1", Rights: MQTTRead,
		Description: "gateway", ValidUntil: inOneHour(), CreatedBy: uid})
	if err != nil {
		t.Fatal(err)
	}
	if u.ID <= 0 || u.ProjectID != pid || u.CompanyID == 0 || u.Username != "gw" || u.PasswordHash != "h1" ||
		u.Rights != MQTTRead || u.Description != "gateway" || u.ValidUntil == nil || u.CreatedBy != uid || u.Edge || u.CreatedAt.IsZero() {
		t.Fatalf("created %+v", u)
	}
	// The username is one namespace for the whole platform.
	if _, err := s.CreateMQTTUser(ctx, MQTTUser{ProjectID: other, Username: "gw", PasswordHash: "h", Rights: MQTTWrite,
		ValidUntil: inOneHour(), CreatedBy: otherUID}); !fault.Is(err, fault.Conflict) {
		t.Fatalf("duplicate username in another project: %v", err)
	}
	if _, err := s.CreateMQTTUser(ctx, MQTTUser{ProjectID: pid, Username: "x", PasswordHash: "h", Rights: "admin",
		ValidUntil: inOneHour(), CreatedBy: uid}); !fault.Is(err, fault.Invalid) {
		t.Fatalf("rights admin: %v", err)
	}
	if _, err := s.CreateMQTTUser(ctx, MQTTUser{ProjectID: pid + 1000, Username: "y", PasswordHash: "h", Rights: MQTTRead,
		ValidUntil: inOneHour(), CreatedBy: uid}); !fault.Is(err, fault.NotFound) {
		t.Fatalf("unknown project: %v", err)
	}

	byName, err := s.MQTTUserByUsername(ctx, "gw")
	if err != nil || byName.ID != u.ID || byName.CompanyID != u.CompanyID {
		t.Fatalf("by username: %+v %v", byName, err)
	}
	if _, err := s.MQTTUser(ctx, other, u.ID); !fault.Is(err, fault.NotFound) {
		t.Fatalf("read through another project: %v", err)
	}

	hash, rights, later := "h2", MQTTWrite, time.Now().Add(2*time.Hour).Truncate(time.Microsecond)
	up, err := s.UpdateMQTTUser(ctx, pid, u.ID, &hash, &rights, nil, &later)
	if err != nil {
		t.Fatal(err)
	}
	if up.PasswordHash != "h2" || up.Rights != MQTTWrite || up.Description != "gateway" || !up.ValidUntil.Equal(later) {
		t.Fatalf("updated %+v", up)
	}
	if _, err := s.UpdateMQTTUser(ctx, other, u.ID, &hash, nil, nil, nil); !fault.Is(err, fault.NotFound) {
		t.Fatalf("update through another project: %v", err)
	}
	if err := s.DeleteMQTTUser(ctx, other, u.ID); !fault.Is(err, fault.NotFound) {
		t.Fatalf("delete through another project: %v", err)
	}
	if err := s.DeleteMQTTUser(ctx, pid, u.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.MQTTUserByUsername(ctx, "gw"); !fault.Is(err, fault.NotFound) {
		t.Fatalf("deleted user still found: %v", err)
	}
	if err := s.DeleteMQTTUser(ctx, pid, u.ID); !fault.Is(err, fault.NotFound) {
		t.Fatalf("second delete: %v", err)
	}
}

// Rows past valid_until are absent to every read and write before they
// are deleted; DeleteExpiredMQTTUsers removes exactly them.
func TestMQTTUserExpiry(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	_, pid, uid := companyWithProject(t, s, "acme")
	if _, ok, err := s.NextMQTTUserExpiry(ctx); ok || err != nil {
		t.Fatalf("next expiry without users: %v %v", ok, err)
	}
	past := time.Now().Add(-time.Minute).Truncate(time.Microsecond)
	expired, err := s.CreateMQTTUser(ctx, MQTTUser{ProjectID: pid, Username: "old", PasswordHash: "h", Rights: MQTTRead,
		ValidUntil: &past, CreatedBy: uid})
	if err != nil {
		t.Fatal(err)
	}
	live, err := s.CreateMQTTUser(ctx, MQTTUser{ProjectID: pid, Username: "new", PasswordHash: "h", Rights: MQTTRead,
		ValidUntil: inOneHour(), CreatedBy: uid})
	if err != nil {
		t.Fatal(err)
	}
	edge, err := s.PutEdgeCredentials(ctx, pid, "edge-hash")
	if err != nil {
		t.Fatal(err)
	}

	if _, err := s.MQTTUser(ctx, pid, expired.ID); !fault.Is(err, fault.NotFound) {
		t.Fatalf("expired user by id: %v", err)
	}
	if _, err := s.MQTTUserByUsername(ctx, "old"); !fault.Is(err, fault.NotFound) {
		t.Fatalf("expired user by username: %v", err)
	}
	desc := "revived?"
	if _, err := s.UpdateMQTTUser(ctx, pid, expired.ID, nil, nil, &desc, inOneHour()); !fault.Is(err, fault.NotFound) {
		t.Fatalf("update of an expired user: %v", err)
	}
	list, err := s.MQTTUsers(ctx, pid)
	if err != nil {
		t.Fatal(err)
	}
	if ids := mqttIDs(list); !slices.Equal(ids, []int64{live.ID, edge.ID}) {
		t.Fatalf("listed %v, want the live user and the edge credentials %v", ids, []int64{live.ID, edge.ID})
	}

	next, ok, err := s.NextMQTTUserExpiry(ctx)
	if err != nil || !ok || !next.Equal(past) {
		t.Fatalf("next expiry %v %v %v, want %v", next, ok, err, past)
	}
	due, err := s.ExpiredMQTTUsers(ctx, time.Now())
	if err != nil || len(due) != 1 || due[0].ID != expired.ID || due[0].Username != "old" || due[0].PasswordHash == "" {
		t.Fatalf("expired users %+v %v, want the expired user, still stored", due, err)
	}
	gone, err := s.DeleteExpiredMQTTUsers(ctx, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(gone) != 1 || gone[0].ID != expired.ID || gone[0].Username != "old" || gone[0].CompanyID == 0 {
		t.Fatalf("deleted %+v, want the expired user", gone)
	}
	if next, ok, _ := s.NextMQTTUserExpiry(ctx); !ok || !next.Equal(*live.ValidUntil) {
		t.Fatalf("next expiry after the sweep: %v %v, want %v", next, ok, live.ValidUntil)
	}
	// A sweep at a later instant takes the live user; edge credentials never expire.
	gone, err = s.DeleteExpiredMQTTUsers(ctx, time.Now().Add(2*time.Hour))
	if err != nil || len(gone) != 1 || gone[0].ID != live.ID {
		t.Fatalf("second sweep: %+v %v", gone, err)
	}
	if _, err := s.MQTTUser(ctx, pid, edge.ID); err != nil {
		t.Fatalf("edge credentials after the sweeps: %v", err)
	}
}

// Edge credentials are one row per project; putting them again replaces
// the hash of the same row.
func TestPutEdgeCredentialsRotates(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	_, pid, _ := companyWithProject(t, s, "acme")
	first, err := s.PutEdgeCredentials(ctx, pid, "hash-1")
	if err != nil {
		t.Fatal(err)
	}
	if first.Username != EdgeUsername(pid) || !first.Edge || first.ValidUntil != nil || first.CreatedBy != 0 || first.Rights != MQTTWrite {
		t.Fatalf("edge credentials %+v", first)
	}
	second, err := s.PutEdgeCredentials(ctx, pid, "hash-2")
	if err != nil {
		t.Fatal(err)
	}
	if second.ID != first.ID || second.PasswordHash != "hash-2" {
		t.Fatalf("rotation made %+v from %+v", second, first)
	}
	got, err := s.MQTTUserByUsername(ctx, EdgeUsername(pid))
	if err != nil || got.PasswordHash != "hash-2" {
		t.Fatalf("after rotation: %+v %v", got, err)
	}
	if _, err := s.PutEdgeCredentials(ctx, pid+1000, "h"); !fault.Is(err, fault.NotFound) {
		t.Fatalf("edge credentials of an unknown project: %v", err)
	}
}

// Committed inserts, updates and deletes are told with the row id; a
// rolled-back change is not.
func TestListenMQTTUsersChanged(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	s := newTestStore(t)
	_, pid, uid := companyWithProject(t, s, "acme")
	ids := make(chan int64, 16)
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.ListenMQTTUsersChanged(ctx, func(id int64) { ids <- id })
	}()
	t.Cleanup(func() { cancel(); <-done })

	// LISTEN is in place once a notice sent now arrives.
	want := func(what string, id int64) {
		t.Helper()
		select {
		case got := <-ids:
			if got != id {
				t.Fatalf("%s: notified %d, want %d", what, got, id)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: no notification of %d", what, id)
		}
	}
	// Probe until an insert is heard: earlier probes, made before LISTEN
	// was in place or heard late, are deleted and their notices skipped
	// (they were committed before the heard one, so they come first).
	var u MQTTUser
	deadline := time.Now().Add(5 * time.Second)
	for probe := 0; u.ID == 0; probe++ {
		p, err := s.CreateMQTTUser(ctx, MQTTUser{ProjectID: pid, Username: "probe-" + strconv.Itoa(probe), PasswordHash: "h",
			Rights: MQTTRead, ValidUntil: inOneHour(), CreatedBy: uid})
		if err != nil {
			t.Fatal(err)
		}
		wait := time.After(200 * time.Millisecond)
	heard:
		for {
			select {
			case got := <-ids:
				if got == p.ID {
					u = p
					break heard
				}
			case <-wait:
				if time.Now().After(deadline) {
					t.Fatal("the listener never heard an insert")
				}
				if err := s.DeleteMQTTUser(ctx, pid, p.ID); err != nil {
					t.Fatal(err)
				}
				break heard
			}
		}
	}

	// A rolled-back insert is never told.
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO mqtt_users (project_id, username, password_hash, rights, valid_until, created_by)
		VALUES ($1, 'ghost', 'h', 'read', now() + interval '1 hour', $2)`, pid, uid); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	desc := "changed"
	if _, err := s.UpdateMQTTUser(ctx, pid, u.ID, nil, nil, &desc, nil); err != nil {
		t.Fatal(err)
	}
	want("update", u.ID) // the rollback's id would have come first
	edge, err := s.PutEdgeCredentials(ctx, pid, "h")
	if err != nil {
		t.Fatal(err)
	}
	want("edge insert", edge.ID)
	if _, err := s.PutEdgeCredentials(ctx, pid, "h2"); err != nil {
		t.Fatal(err)
	}
	want("edge rotation", edge.ID)
	if err := s.DeleteMQTTUser(ctx, pid, u.ID); err != nil {
		t.Fatal(err)
	}
	want("delete", u.ID)
	// Deleting the project takes its MQTT users along, each told.
	if _, err := s.DeleteProject(ctx, pid); err != nil {
		t.Fatal(err)
	}
	want("cascaded delete", edge.ID)
}

// A deleted project, or a deleted creator, takes its MQTT users along.
func TestMQTTUsersCascade(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	_, pid, uid := companyWithProject(t, s, "acme")
	u, err := s.CreateMQTTUser(ctx, MQTTUser{ProjectID: pid, Username: "gw", PasswordHash: "h", Rights: MQTTRead,
		ValidUntil: inOneHour(), CreatedBy: uid})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutEdgeCredentials(ctx, pid, "h"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DeleteProject(ctx, pid); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM mqtt_users`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("%d MQTT users of the deleted project remain", n)
	}
	if _, err := s.MQTTUserByUsername(ctx, u.Username); !fault.Is(err, fault.NotFound) {
		t.Fatalf("MQTT user of a deleted project: %v", err)
	}
	// The username is free again.
	_, pid2, uid2 := companyWithProject(t, s, "other")
	if _, err := s.CreateMQTTUser(ctx, MQTTUser{ProjectID: pid2, Username: "gw", PasswordHash: "h", Rights: MQTTRead,
		ValidUntil: inOneHour(), CreatedBy: uid2}); err != nil {
		t.Fatalf("reusing a freed username: %v", err)
	}
	// A deleted creator takes theirs along: nobody's access bounds them any more.
	second, err := s.CreateUser(ctx, NewUser{CompanyID: mustProject(t, s, pid2).CompanyID, FirstName: "C", LastName: "D", Email: "c@other.test", PasswordHash: "h"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateMQTTUser(ctx, MQTTUser{ProjectID: pid2, Username: "gw2", PasswordHash: "h", Rights: MQTTRead,
		ValidUntil: inOneHour(), CreatedBy: second.ID}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DeleteUser(ctx, second.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.MQTTUserByUsername(ctx, "gw2"); !fault.Is(err, fault.NotFound) {
		t.Fatalf("MQTT user of a deleted creator: %v", err)
	}
	if _, err := s.MQTTUserByUsername(ctx, "gw"); err != nil {
		t.Fatalf("another creator's MQTT user went too: %v", err)
	}
}

func mustProject(t *testing.T, s *Store, id int64) Project {
	t.Helper()
	p, err := s.Project(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func mqttIDs(us []MQTTUser) []int64 {
	ids := make([]int64, len(us))
	for i, u := range us {
		ids[i] = u.ID
	}
	return ids
}
