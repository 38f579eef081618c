package store

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/openbdp/bdp/fault"
)

func TestOwnerOfKey(t *testing.T) {
	for _, tc := range []struct {
		key  string
		want FileOwner
		ok   bool
	}{
		{"company/7/0b6c", FileOwner{FileSpaceCompany, 7}, true},
		{"project/123/x/y", FileOwner{FileSpaceProject, 123}, true},
		{"project/123", FileOwner{}, false},
		{"project//x", FileOwner{}, false},
		{"project/07/x", FileOwner{}, false},
		{"project/+7/x", FileOwner{}, false},
		{"project/-7/x", FileOwner{}, false},
		{"project/99999999999999999999/x", FileOwner{}, false},
		{"project/abc/x", FileOwner{}, false},
		{"user/7/x", FileOwner{}, false},
		{"company", FileOwner{}, false},
	} {
		got, ok := ownerOfKey(tc.key)
		if got != tc.want || ok != tc.ok {
			t.Errorf("ownerOfKey(%q) = %v, %v; want %v, %v", tc.key, got, ok, tc.want, tc.ok)
		}
	}
}

// age sets when a reservation was made, as a crashed process left it.
func age(t *testing.T, s *Store, r Reservation, ago time.Duration) {
	t.Helper()
	if _, err := s.pool.Exec(context.Background(), `UPDATE file_reservations SET created_at = now() - $2::interval WHERE id = $1`,
		r.ID, fmt.Sprintf("%d seconds", int(ago.Seconds()))); err != nil {
		t.Fatal(err)
	}
}

func TestReleaseStaleReservations(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	co, p, _ := companyWithProject(t, s, "acme")
	upload(t, s, FileSpaceProject, p, "kept", 100, false)
	crashed, err := s.ReserveUpload(ctx, FileSpaceProject, p, "crashed", 1000, false)
	if err != nil {
		t.Fatal(err)
	}
	crashedReplace, err := s.ReserveUpload(ctx, FileSpaceProject, p, "kept", 150, true)
	if err != nil {
		t.Fatal(err)
	}
	crashedCompany, err := s.ReserveUpload(ctx, FileSpaceCompany, co, "c", 7, false)
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := s.ReserveUpload(ctx, FileSpaceProject, p, "fresh", 10, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []Reservation{crashed, crashedReplace, crashedCompany} {
		age(t, s, r, time.Hour)
	}
	wantQuota(t, s, FileSpaceProject, p, 3, 100+1000+50+10)

	released, err := s.ReleaseStaleReservations(ctx, time.Now().Add(-time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, r := range released {
		keys = append(keys, r.ObjectKey)
	}
	want := []string{crashed.ObjectKey, crashedReplace.ObjectKey, crashedCompany.ObjectKey}
	slices.Sort(keys)
	slices.Sort(want)
	if !slices.Equal(keys, want) {
		t.Fatalf("released %v, want the keys of the three stale reservations %v", keys, want)
	}
	// The file stays at its size, the fresh upload keeps its hold.
	wantQuota(t, s, FileSpaceProject, p, 2, 100+10)
	wantQuota(t, s, FileSpaceCompany, co, 0, 0)
	if _, _, err := s.CommitUpload(ctx, crashed); !fault.Is(err, fault.NotFound) {
		t.Fatalf("commit of a released stale reservation: %v", err)
	}
	if _, _, err := s.CommitUpload(ctx, fresh); err != nil {
		t.Fatalf("commit of the fresh upload: %v", err)
	}
	// The path of the crashed upload is free again.
	upload(t, s, FileSpaceProject, p, "crashed", 5, false)
	wantQuota(t, s, FileSpaceProject, p, 3, 115)
	if again, err := s.ReleaseStaleReservations(ctx, time.Now().Add(-time.Minute)); err != nil || len(again) != 0 {
		t.Fatalf("second release: %v, %v; want nothing", again, err)
	}
}

func TestRecountFileUsage(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	co, p, _ := companyWithProject(t, s, "acme")
	upload(t, s, FileSpaceProject, p, "a", 100, false)
	upload(t, s, FileSpaceProject, p, "b", 20, false)
	upload(t, s, FileSpaceCompany, co, "c", 5, false)
	if _, err := s.ReserveUpload(ctx, FileSpaceProject, p, "pending", 30, false); err != nil {
		t.Fatal(err)
	}
	if fixed, err := s.RecountFileUsage(ctx); err != nil || len(fixed) != 0 {
		t.Fatalf("recount of a consistent store: %v, %v; want no correction", fixed, err)
	}
	// What a crash or a lost object leaves: counts that no longer match.
	if _, err := s.pool.Exec(ctx, `UPDATE file_usage SET files = 9, space_bytes = 999 WHERE space = 'project' AND owner_id = $1`, p); err != nil {
		t.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, `DELETE FROM file_usage WHERE space = 'company' AND owner_id = $1`, co); err != nil {
		t.Fatal(err)
	}
	fixed, err := s.RecountFileUsage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []UsageCorrection{
		{FileOwner{FileSpaceCompany, co}, QuotaUsage{}, QuotaUsage{Files: 1, SpaceBytes: 5}},
		{FileOwner{FileSpaceProject, p}, QuotaUsage{Files: 9, SpaceBytes: 999}, QuotaUsage{Files: 3, SpaceBytes: 150}},
	}
	if !slices.Equal(fixed, want) {
		t.Fatalf("corrections %+v, want %+v", fixed, want)
	}
	wantQuota(t, s, FileSpaceProject, p, 3, 150)
	wantQuota(t, s, FileSpaceCompany, co, 1, 5)
}

func TestObjectInventory(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	co, p, _ := companyWithProject(t, s, "acme")
	_, gone, _ := companyWithProject(t, s, "gone")
	kept, _ := upload(t, s, FileSpaceProject, p, "kept", 100, false)
	lost, _ := upload(t, s, FileSpaceProject, p, "lost", 40, false)
	lostCompany, _ := upload(t, s, FileSpaceCompany, co, "lost", 3, false)
	pending, err := s.ReserveUpload(ctx, FileSpaceProject, p, "pending", 10, false)
	if err != nil {
		t.Fatal(err)
	}
	goneFile, _ := upload(t, s, FileSpaceProject, gone, "x", 1, false)
	if _, err := s.DeleteProject(ctx, gone); err != nil {
		t.Fatal(err)
	}
	cutoff := time.Now().Add(time.Minute) // every row and listed object is older
	old := cutoff.Add(-time.Hour)
	orphan := FileOwner{FileSpaceProject, p}.ObjectPrefix() + "orphan"
	fresh := FileOwner{FileSpaceProject, p}.ObjectPrefix() + "fresh-orphan"
	odd := "project/not-a-number/x"

	inv, err := s.NewObjectInventory(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer inv.Close()
	for _, o := range []struct {
		key string
		at  time.Time
	}{
		{kept.ObjectKey, old}, {pending.ObjectKey, old}, {orphan, old}, {odd, old},
		{goneFile.ObjectKey, old}, {fresh, cutoff.Add(time.Second)}, {orphan, old}, // listed twice
	} {
		if err := inv.Add(ctx, o.key, o.at); err != nil {
			t.Fatal(err)
		}
	}
	if inv.Listed() != 7 {
		t.Fatalf("listed %d", inv.Listed())
	}
	owners, err := inv.GoneOwners(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(owners, []FileOwner{{FileSpaceProject, gone}}) {
		t.Fatalf("gone owners %v, want project %d", owners, gone)
	}
	var orphans []string
	if err := inv.Orphans(ctx, cutoff, func(key string) error { orphans = append(orphans, key); return nil }); err != nil {
		t.Fatal(err)
	}
	if want := []string{orphan, odd}; !slices.Equal(orphans, want) {
		t.Fatalf("orphans %v, want %v (not the fresh one, the live ones or the gone owner's)", orphans, want)
	}
	// A file committed after the inventory began: the listing may have
	// passed its key before its object was stored.
	late, _ := upload(t, s, FileSpaceProject, p, "late", 5, false)
	if n, err := inv.FilesWithoutObject(ctx, cutoff); err != nil || n != 2 {
		t.Fatalf("files without object: %d, %v; want 2 (not the file committed after the inventory began)", n, err)
	}
	// A row written after the cut-off is never removed, whatever the listing says.
	if n, err := inv.FilesWithoutObject(ctx, old); err != nil || n != 0 {
		t.Fatalf("files without object before %v: %d, %v; want 0", old, n, err)
	}
	var removed []string
	n, err := inv.RemoveFilesWithoutObject(ctx, cutoff, func(f File) { removed = append(removed, f.ObjectKey) })
	if err != nil || n != 2 {
		t.Fatalf("removed %d, %v; want 2", n, err)
	}
	if want := []string{lostCompany.ObjectKey, lost.ObjectKey}; !slices.Equal(removed, want) {
		t.Fatalf("removed %v, want %v", removed, want)
	}
	if _, err := s.GetFile(ctx, FileSpaceProject, p, "lost"); !fault.Is(err, fault.NotFound) {
		t.Fatalf("lost file still there: %v", err)
	}
	wantQuota(t, s, FileSpaceProject, p, 3, 115) // kept, late and the pending upload
	for key, want := range map[string]bool{pending.ObjectKey: true, kept.ObjectKey: false, orphan: false} {
		if got, err := s.Reserved(ctx, key); err != nil || got != want {
			t.Fatalf("Reserved(%s): %v, %v; want %v", key, got, err, want)
		}
	}
	wantQuota(t, s, FileSpaceCompany, co, 0, 0)

	// The inventory's table is per session and gone after Close: a second
	// inventory starts empty.
	inv.Close()
	inv2, err := s.NewObjectInventory(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer inv2.Close()
	if n, err := inv2.FilesWithoutObject(ctx, cutoff); err != nil || n != 2 {
		t.Fatalf("files without object in an empty inventory: %d, %v; want 2 (kept, late)", n, err)
	}
	if _, err := s.GetFile(ctx, FileSpaceProject, late.OwnerID, late.Path); err != nil {
		t.Fatal(err)
	}

	exists, err := s.FileOwnerExists(ctx, FileOwner{FileSpaceProject, gone})
	if err != nil || exists {
		t.Fatalf("deleted project exists: %v, %v", exists, err)
	}
	exists, err = s.FileOwnerExists(ctx, FileOwner{FileSpaceCompany, co})
	if err != nil || !exists {
		t.Fatalf("company exists: %v, %v", exists, err)
	}
}

// With several processes on one database, a reservation is stale when
// its process is dead, whenever it was made; one without an incarnation
// (before migration 00019, or a tool's) when it is older than the cut-off.
func TestReleaseStaleReservationsOfDeadIncarnations(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	_, p, _ := companyWithProject(t, s, "acme")
	alive := startIncarnation(t, s, time.Hour)
	gone := startIncarnation(t, s, time.Hour)
	cases := []struct {
		name     string
		inc      *Incarnation
		old      bool
		released bool
	}{
		{"live process, recent", alive, false, false},
		{"live process, before the cut-off", alive, true, false},
		{"dead process, recent", gone, false, true},
		{"dead process, before the cut-off", gone, true, true},
		{"no incarnation, recent", nil, false, false},
		{"no incarnation, before the cut-off", nil, true, true},
	}
	var want []string
	for _, tc := range cases {
		r, err := s.ReserveUploadAs(ctx, tc.inc, FileSpaceProject, p, tc.name, 10, false)
		if err != nil {
			t.Fatal(err)
		}
		if tc.inc != nil && r.Incarnation != tc.inc.ID() {
			t.Fatalf("%s: reservation of incarnation %d, want %d", tc.name, r.Incarnation, tc.inc.ID())
		}
		if tc.old {
			age(t, s, r, time.Hour)
		}
		if tc.released {
			want = append(want, tc.name)
		}
	}
	gone.Close()
	waitFor(t, "dead", dead(s, gone.ID()))

	released, err := s.ReleaseStaleReservations(ctx, time.Now().Add(-time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, r := range released {
		paths = append(paths, r.Path)
	}
	if !slices.Equal(paths, want) {
		t.Fatalf("released %q, want %q", paths, want)
	}
	if released[0].Incarnation != gone.ID() || released[2].Incarnation != 0 {
		t.Fatalf("released %+v: want the incarnations they were made by", released)
	}
	if n, err := s.LiveReservations(ctx); err != nil || n != 2 {
		t.Fatalf("live reservations: %d, %v; want the live process's 2", n, err)
	}
	wantQuota(t, s, FileSpaceProject, p, 3, 30)
}
