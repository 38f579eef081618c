package store

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/openbdp/bdp/fault"
)

func TestVDPLifecycle(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	co, u, _, err := s.CreateCompany(ctx, Company{Name: "acme"}, NewUser{FirstName: "A", LastName: "B", Email: "a@acme.test", PasswordHash: "h"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, _, err := s.CreateProject(ctx, u.ID, Project{CompanyID: co.ID, Name: "p"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := json.RawMessage(`{"pins":{"P1":{"dataPointID":"a"}},"parameters":{"formula":"P1;"}}`)
	v, err := s.CreateVDP(ctx, VDP{ProjectID: p.ID, DataPointID: "v1", Type: "formula", Config: cfg},
		StatusChange{Code: StatusCreated, Message: "created by a@acme.test"}, StatusChange{Code: StatusReadyToStart, Message: "configuration valid"})
	if err != nil {
		t.Fatal(err)
	}
	if v.StatusCode != StatusReadyToStart || len(v.Logs) != 2 || v.Logs[0].StatusText != "Created" || v.Logs[1].StatusCode != 102 {
		t.Fatalf("after create: %+v", v)
	}
	if _, err := s.CreateVDP(ctx, VDP{ProjectID: p.ID, DataPointID: "v1", Type: "formula", Config: cfg},
		StatusChange{Code: StatusCreated, Message: ""}); !fault.Is(err, fault.Conflict) {
		t.Fatalf("duplicate: %v", err)
	}
	// Only allowed moves happen.
	if _, err := s.ChangeVDPStatus(ctx, p.ID, "v1", StatusChange{Code: StatusStopping, Message: "x"}, StatusRunning); !fault.Is(err, fault.Conflict) {
		t.Fatalf("stop of a datapoint that is not running: %v", err)
	}
	if _, err := s.ChangeVDPStatus(ctx, p.ID, "v1", StatusChange{Code: StatusStarting, Message: "started by a"}, StatusReadyToStart, StatusStopped); err != nil {
		t.Fatal(err)
	}
	// A run records where its calculation began; a resume finds it there,
	// and status changes that name none keep it.
	began := time.Date(2026, 8, 3, 6, 0, 0, 123456000, time.UTC)
	if _, err := s.ChangeVDPStatus(ctx, p.ID, "v1", StatusChange{Code: StatusRunning, Message: "", CatchUpFrom: began}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		resuming, err := s.MarkResuming(ctx, "resuming")
		if err != nil || len(resuming) != 1 || resuming[0].DataPointID != "v1" || !resuming[0].CatchUpFrom.Equal(began) {
			t.Fatalf("resuming: %+v %v", resuming, err)
		}
		if _, err := s.ChangeVDPStatus(ctx, p.ID, "v1", StatusChange{Code: StatusRunning, Message: "resumed"}, StatusStarting); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.DeleteVDP(ctx, p.ID, "v1", "delete", false); !fault.Is(err, fault.Conflict) {
		t.Fatalf("delete while running: %v", err)
	}
	v, err = s.UpdateVDPDescription(ctx, p.ID, "v1", "new text")
	if err != nil || v.StatusCode != StatusRunning || v.Description != "new text" {
		t.Fatalf("description update: %+v %v", v, err)
	}
	list, total, err := s.ListVDPs(ctx, p.ID, "V1", nil, 1, 10)
	if err != nil || total != 1 || list[0].Status != "Running" {
		t.Fatalf("list: %+v %d %v", list, total, err)
	}
	code := StatusStopped
	if _, total, _ := s.ListVDPs(ctx, p.ID, "", &code, 1, 10); total != 0 {
		t.Fatalf("filter by status: %d", total)
	}
	if _, err := s.ChangeVDPStatus(ctx, p.ID, "v1", StatusChange{Code: StatusStopped, Message: ""}); err != nil {
		t.Fatal(err)
	}
	v, err = s.DeleteVDP(ctx, p.ID, "v1", "deleted by a", false)
	if err != nil || v.StatusCode != StatusDeleting {
		t.Fatalf("delete: %+v %v", v, err)
	}
	if _, err := s.VDP(ctx, p.ID, "v1"); !fault.Is(err, fault.NotFound) {
		t.Fatalf("after delete: %v", err)
	}
}
