package store

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/openbdp/bdp/fault"
)

// companyWithProject makes a company with its admin and one project.
func companyWithProject(t *testing.T, s *Store, name string) (companyID, projectID, adminID int64) {
	t.Helper()
	ctx := context.Background()
	co, u, _, err := s.CreateCompany(ctx, Company{Name: name},
		NewUser{FirstName: "A", LastName: "B", Email: "a@" + name + ".test", PasswordHash: "h"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, _, err := s.CreateProject(ctx, u.ID, Project{CompanyID: co.ID, Name: "p"}, []int32{1})
	if err != nil {
		t.Fatal(err)
	}
	return co.ID, p.ID, u.ID
}

func ptr(v int64) *int64 { return &v }

func wantQuota(t *testing.T, s *Store, space FileSpace, owner int64, files, bytes int64) FileQuota {
	t.Helper()
	q, err := s.Quota(context.Background(), space, owner)
	if err != nil {
		t.Fatal(err)
	}
	if q.Used.Files != files || q.Used.SpaceBytes != bytes ||
		q.Available.Files != q.Limits.Files-files || q.Available.SpaceBytes != q.Limits.SpaceBytes-bytes {
		t.Fatalf("%s %d quota %+v, want used %d files, %d bytes", space, owner, q, files, bytes)
	}
	return q
}

func upload(t *testing.T, s *Store, space FileSpace, owner int64, path string, size int64, replace bool) (File, string) {
	t.Helper()
	ctx := context.Background()
	r, err := s.ReserveUpload(ctx, space, owner, path, size, replace)
	if err != nil {
		t.Fatalf("reserve %s %d: %v", path, size, err)
	}
	f, old, err := s.CommitUpload(ctx, r)
	if err != nil {
		t.Fatalf("commit %s: %v", path, err)
	}
	return f, old
}

func TestFileQuotaDefaultsAndOwners(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	co, p, _ := companyWithProject(t, s, "acme")
	for _, sp := range []struct {
		space FileSpace
		owner int64
	}{{FileSpaceCompany, co}, {FileSpaceProject, p}} {
		q := wantQuota(t, s, sp.space, sp.owner, 0, 0)
		if q.Limits != (Quota{Files: 1000, SpaceBytes: 1 << 30, FileSizeBytes: 100 << 20}) {
			t.Fatalf("default limits %+v", q.Limits)
		}
	}
	if _, err := s.Quota(ctx, FileSpaceProject, p+1000); !fault.Is(err, fault.NotFound) {
		t.Fatalf("quota of unknown project: %v", err)
	}
	if _, err := s.ReserveUpload(ctx, FileSpaceCompany, co+1000, "a", 1, false); !fault.Is(err, fault.NotFound) {
		t.Fatalf("reserve in unknown company: %v", err)
	}
	if _, err := s.ReserveUpload(ctx, "user", co, "a", 1, false); !fault.Is(err, fault.Invalid) {
		t.Fatalf("reserve in space user: %v", err)
	}
	// The same path in the company space and the project space are two files.
	upload(t, s, FileSpaceCompany, co, "a.pdf", 10, false)
	upload(t, s, FileSpaceProject, p, "a.pdf", 20, false)
	upload(t, s, FileSpaceProject, p, "A.pdf", 30, false) // case-sensitive
	wantQuota(t, s, FileSpaceCompany, co, 1, 10)
	wantQuota(t, s, FileSpaceProject, p, 2, 50)
}

func TestFileReserveLimits(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	_, p, _ := companyWithProject(t, s, "acme")
	if _, err := s.UpdateProjectQuota(ctx, p, QuotaPatch{Files: ptr(3), SpaceBytes: ptr(1000), FileSizeBytes: ptr(600)}); err != nil {
		t.Fatal(err)
	}
	upload(t, s, FileSpaceProject, p, "docs/a", 500, false)
	pending, err := s.ReserveUpload(ctx, FileSpaceProject, p, "docs/b", 100, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		path    string
		size    int64
		replace bool
		kind    fault.Kind
		msgHas  string
	}{
		{"over the per-file limit", "c", 601, false, fault.TooLarge, "per-file limit of 600 bytes"},
		{"over the remaining space", "c", 401, false, fault.TooLarge, "only 400 of the space limit of 1000 bytes remain"},
		{"existing file without replace", "docs/a", 1, false, fault.Invalid, "already exists"},
		{"replace of a missing file", "docs/z", 1, true, fault.NotFound, "not found"},
		{"second upload to a pending path", "docs/b", 1, false, fault.Conflict, "in progress"},
		{"negative size", "c", -1, false, fault.Invalid, "size"},
		{"file count", "d", 1, false, fault.TooLarge, "limit of 3 files"}, // after the pending upload commits and c is held
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "file count" {
				if _, _, err := s.CommitUpload(ctx, pending); err != nil {
					t.Fatal(err)
				}
				if _, err := s.ReserveUpload(ctx, FileSpaceProject, p, "c", 1, false); err != nil {
					t.Fatal(err)
				}
			}
			_, err := s.ReserveUpload(ctx, FileSpaceProject, p, tc.path, tc.size, tc.replace)
			if !fault.Is(err, tc.kind) || !strings.Contains(fault.Message(err), tc.msgHas) {
				t.Fatalf("got %v (%v), want %v containing %q", err, fault.KindOf(err), tc.kind, tc.msgHas)
			}
		})
	}
	// Refusals hold nothing: a, b and the held c.
	wantQuota(t, s, FileSpaceProject, p, 3, 601)
}

func TestFileReleaseLeavesNoRowAndNoUse(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	co, _, _ := companyWithProject(t, s, "acme")
	r, err := s.ReserveUpload(ctx, FileSpaceCompany, co, "big.bin", 1000, false)
	if err != nil {
		t.Fatal(err)
	}
	if r.ObjectKey == "" || !strings.HasPrefix(r.ObjectKey, fmt.Sprintf("company/%d/", co)) {
		t.Fatalf("object key %q", r.ObjectKey)
	}
	wantQuota(t, s, FileSpaceCompany, co, 1, 1000) // held while in flight
	if err := s.ReleaseUpload(ctx, r); err != nil {
		t.Fatal(err)
	}
	wantQuota(t, s, FileSpaceCompany, co, 0, 0)
	if err := s.ReleaseUpload(ctx, r); err != nil {
		t.Fatalf("second release: %v", err)
	}
	if _, _, err := s.CommitUpload(ctx, r); !fault.Is(err, fault.NotFound) {
		t.Fatalf("commit after release: %v", err)
	}
	if _, err := s.ReserveUpload(ctx, FileSpaceCompany, co, "big.bin", 1, true); !fault.Is(err, fault.NotFound) {
		t.Fatalf("a released upload left a file row: %v", err)
	}
	wantQuota(t, s, FileSpaceCompany, co, 0, 0)
	// The path is free again for a new upload.
	upload(t, s, FileSpaceCompany, co, "big.bin", 5, false)
	wantQuota(t, s, FileSpaceCompany, co, 1, 5)
}

func TestFileReplaceCountsOnlyTheDifference(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	_, p, _ := companyWithProject(t, s, "acme")
	if _, err := s.UpdateProjectQuota(ctx, p, QuotaPatch{SpaceBytes: ptr(1000), FileSizeBytes: ptr(1000)}); err != nil {
		t.Fatal(err)
	}
	first, old := upload(t, s, FileSpaceProject, p, "r", 300, false)
	if old != "" || first.SizeBytes != 300 {
		t.Fatalf("first upload %+v, replaced %q", first, old)
	}
	upload(t, s, FileSpaceProject, p, "other", 100, false)
	wantQuota(t, s, FileSpaceProject, p, 2, 400)

	// Growing by 200 holds 200, not 500.
	r, err := s.ReserveUpload(ctx, FileSpaceProject, p, "r", 500, true)
	if err != nil {
		t.Fatal(err)
	}
	wantQuota(t, s, FileSpaceProject, p, 2, 600)
	if r.ObjectKey == first.ObjectKey {
		t.Fatal("a replace writes over the live object")
	}
	second, old, err := s.CommitUpload(ctx, r)
	if err != nil || old != first.ObjectKey || second.SizeBytes != 500 || second.ObjectKey != r.ObjectKey {
		t.Fatalf("commit replace: %+v, replaced %q, %v", second, old, err)
	}
	wantQuota(t, s, FileSpaceProject, p, 2, 600)

	// 400 bytes remain: growing by 401 does not fit though the file is smaller than the space left plus itself.
	if _, err := s.ReserveUpload(ctx, FileSpaceProject, p, "r", 901, true); !fault.Is(err, fault.TooLarge) {
		t.Fatalf("replace growing past the space: %v", err)
	}
	// A shrinking replace holds nothing and frees its space when it commits.
	r, err = s.ReserveUpload(ctx, FileSpaceProject, p, "r", 50, true)
	if err != nil {
		t.Fatal(err)
	}
	wantQuota(t, s, FileSpaceProject, p, 2, 600)
	if _, _, err := s.CommitUpload(ctx, r); err != nil {
		t.Fatal(err)
	}
	wantQuota(t, s, FileSpaceProject, p, 2, 150)
	// A released replace leaves the old file and its use as they were.
	r, err = s.ReserveUpload(ctx, FileSpaceProject, p, "r", 900, true)
	if err != nil {
		t.Fatal(err)
	}
	wantQuota(t, s, FileSpaceProject, p, 2, 1000)
	if err := s.ReleaseUpload(ctx, r); err != nil {
		t.Fatal(err)
	}
	wantQuota(t, s, FileSpaceProject, p, 2, 150)
}

// 100 uploads race for the last free space and the last free file slots:
// exactly as many succeed as fit, never more.
func TestFileQuotaConcurrentReservations(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	co, _, _ := companyWithProject(t, s, "acme")
	if _, err := s.UpdateCompanyQuota(ctx, co, QuotaPatch{Files: ptr(1000), SpaceBytes: ptr(1000), FileSizeBytes: ptr(1000)}); err != nil {
		t.Fatal(err)
	}
	upload(t, s, FileSpaceCompany, co, "base", 900, false)

	race := func(prefix string, size int64) (ok []Reservation) {
		var mu sync.Mutex
		var wg sync.WaitGroup
		for i := range 100 {
			wg.Go(func() {
				r, err := s.ReserveUpload(ctx, FileSpaceCompany, co, fmt.Sprintf("%s/%d", prefix, i), size, false)
				if err != nil && !fault.Is(err, fault.TooLarge) {
					t.Errorf("upload %d: %v", i, err)
				}
				if err == nil {
					mu.Lock()
					ok = append(ok, r)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		return ok
	}

	// 100 bytes left, 30 bytes each: three fit.
	won := race("space", 30)
	if len(won) != 3 {
		t.Fatalf("%d of 100 reservations of 30 bytes succeeded with 100 bytes free, want 3", len(won))
	}
	wantQuota(t, s, FileSpaceCompany, co, 4, 990)
	for _, r := range won {
		if _, _, err := s.CommitUpload(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	wantQuota(t, s, FileSpaceCompany, co, 4, 990)

	// Five file slots left, files of 0 bytes: five fit.
	if _, err := s.UpdateCompanyQuota(ctx, co, QuotaPatch{Files: ptr(9)}); err != nil {
		t.Fatal(err)
	}
	won = race("count", 0)
	if len(won) != 5 {
		t.Fatalf("%d of 100 reservations succeeded with 5 file slots free, want 5", len(won))
	}
	for _, r := range won {
		if err := s.ReleaseUpload(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	wantQuota(t, s, FileSpaceCompany, co, 4, 990)
}

// Deleting a project deletes its file rows, use and reservations; the
// company's files stay.
func TestFileRowsGoWithTheirProject(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	co, p, _ := companyWithProject(t, s, "acme")
	upload(t, s, FileSpaceProject, p, "a", 10, false)
	upload(t, s, FileSpaceCompany, co, "a", 10, false)
	if _, err := s.ReserveUpload(ctx, FileSpaceProject, p, "b", 10, false); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DeleteProject(ctx, p); err != nil {
		t.Fatal(err)
	}
	var rows int
	if err := s.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM files WHERE space = 'project' AND owner_id = $1)
		+ (SELECT count(*) FROM file_usage WHERE space = 'project' AND owner_id = $1)
		+ (SELECT count(*) FROM file_reservations WHERE space = 'project' AND owner_id = $1)`, p).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != 0 {
		t.Fatalf("%d rows of the deleted project's files left", rows)
	}
	wantQuota(t, s, FileSpaceCompany, co, 1, 10)
}

// An upload whose size was unknown reserves an upper bound and commits
// with the bytes it stored: the use settles to them, never above what was
// reserved.
func TestFileCommitSettlesAnUpperBound(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	_, p, _ := companyWithProject(t, s, "acme")
	if _, err := s.UpdateProjectQuota(ctx, p, QuotaPatch{SpaceBytes: ptr(1000), FileSizeBytes: ptr(1000)}); err != nil {
		t.Fatal(err)
	}
	r, err := s.ReserveUpload(ctx, FileSpaceProject, p, "big", 800, false)
	if err != nil {
		t.Fatal(err)
	}
	wantQuota(t, s, FileSpaceProject, p, 1, 800)
	over := r
	over.SizeBytes = 801
	if _, _, err := s.CommitUpload(ctx, over); !fault.Is(err, fault.Invalid) || !strings.Contains(fault.Message(err), "800 bytes reserved") {
		t.Fatalf("commit above the reservation: %v", err)
	}
	negative := r
	negative.SizeBytes = -1
	if _, _, err := s.CommitUpload(ctx, negative); !fault.Is(err, fault.Invalid) {
		t.Fatalf("commit of a negative size: %v", err)
	}
	wantQuota(t, s, FileSpaceProject, p, 1, 800) // the refused commits left the reservation as it was
	r.SizeBytes = 123
	f, _, err := s.CommitUpload(ctx, r)
	if err != nil || f.SizeBytes != 123 {
		t.Fatalf("commit of 123 bytes: %+v, %v", f, err)
	}
	wantQuota(t, s, FileSpaceProject, p, 1, 123)
	if got, err := s.GetFile(ctx, FileSpaceProject, p, "big"); err != nil || got.SizeBytes != 123 {
		t.Fatalf("stored file %+v, %v", got, err)
	}

	// A replace reserved with an upper bound: it held 900-123, settles to
	// the difference of what it stored.
	r, err = s.ReserveUpload(ctx, FileSpaceProject, p, "big", 900, true)
	if err != nil {
		t.Fatal(err)
	}
	wantQuota(t, s, FileSpaceProject, p, 1, 900)
	r.SizeBytes = 50
	if _, old, err := s.CommitUpload(ctx, r); err != nil || old != f.ObjectKey {
		t.Fatalf("commit replace: replaced %q, %v", old, err)
	}
	wantQuota(t, s, FileSpaceProject, p, 1, 50)
}

func TestFileGetListDelete(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	co, p, _ := companyWithProject(t, s, "acme")
	for _, path := range []string{"b.txt", "Docs/Plan.pdf", "docs/a.pdf", "docs/plan-2.pdf", "a.txt", "docs/sub/x"} {
		upload(t, s, FileSpaceProject, p, path, int64(len(path)), false)
	}
	upload(t, s, FileSpaceCompany, co, "docs/company-only", 1, false)
	paths := func(list []File) string {
		var out []string
		for _, f := range list {
			out = append(out, f.Path)
		}
		return strings.Join(out, ",")
	}
	for _, tc := range []struct {
		search        string
		page, perPage int
		want          string
		total         int64
	}{
		{"", 1, 100, "Docs/Plan.pdf,a.txt,b.txt,docs/a.pdf,docs/plan-2.pdf,docs/sub/x", 6}, // byte order: upper case first
		{"", 2, 2, "b.txt,docs/a.pdf", 6},
		{"", 4, 2, "", 6},
		{"", 1 << 30, 1000, "", 6},
		{"plan", 1, 100, "Docs/Plan.pdf,docs/plan-2.pdf", 2}, // ignoring case
		{"DOCS/", 1, 1, "Docs/Plan.pdf", 4},
		{"%", 1, 100, "", 0}, // literal, not a LIKE pattern
		{"_", 1, 100, "", 0},
		{"company", 1, 100, "", 0}, // the company space is another space
	} {
		list, total, err := s.ListFiles(ctx, FileSpaceProject, p, tc.search, tc.page, tc.perPage)
		if err != nil || paths(list) != tc.want || total != tc.total {
			t.Errorf("search %q page %d/%d: %q, total %d, %v; want %q, total %d", tc.search, tc.page, tc.perPage, paths(list), total, err, tc.want, tc.total)
		}
	}
	if _, _, err := s.ListFiles(ctx, FileSpaceProject, p, "", 0, 10); !fault.Is(err, fault.Invalid) {
		t.Fatalf("page 0: %v", err)
	}
	if f, err := s.GetFile(ctx, FileSpaceProject, p, "docs/a.pdf"); err != nil || f.SizeBytes != 10 || f.ObjectKey == "" {
		t.Fatalf("get docs/a.pdf: %+v, %v", f, err)
	}
	for _, missing := range []string{"DOCS/A.PDF", "docs", "nothing"} {
		if _, err := s.GetFile(ctx, FileSpaceProject, p, missing); !fault.Is(err, fault.NotFound) {
			t.Fatalf("get %s: %v", missing, err)
		}
	}
	if _, err := s.GetFile(ctx, FileSpaceCompany, co, "docs/a.pdf"); !fault.Is(err, fault.NotFound) {
		t.Fatalf("a project file found in the company space: %v", err)
	}
	wantQuota(t, s, FileSpaceProject, p, 6, 5+13+10+15+5+10)

	f, err := s.DeleteFile(ctx, FileSpaceProject, p, "docs/plan-2.pdf")
	if err != nil || f.Path != "docs/plan-2.pdf" || f.SizeBytes != 15 || f.ObjectKey == "" {
		t.Fatalf("delete: %+v, %v", f, err)
	}
	wantQuota(t, s, FileSpaceProject, p, 5, 5+13+10+5+10)
	if _, err := s.DeleteFile(ctx, FileSpaceProject, p, "docs/plan-2.pdf"); !fault.Is(err, fault.NotFound) {
		t.Fatalf("second delete: %v", err)
	}
	if _, err := s.DeleteFile(ctx, FileSpaceCompany, co, "a.txt"); !fault.Is(err, fault.NotFound) {
		t.Fatalf("delete of a project file through the company space: %v", err)
	}
	// An upload in flight to the path: the delete waits for it to end.
	r, err := s.ReserveUpload(ctx, FileSpaceProject, p, "a.txt", 99, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.DeleteFile(ctx, FileSpaceProject, p, "a.txt"); !fault.Is(err, fault.Conflict) {
		t.Fatalf("delete during an upload: %v", err)
	}
	if err := s.ReleaseUpload(ctx, r); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DeleteFile(ctx, FileSpaceProject, p, "a.txt"); err != nil {
		t.Fatalf("delete after the upload ended: %v", err)
	}
	wantQuota(t, s, FileSpaceProject, p, 4, 13+10+5+10)
	wantQuota(t, s, FileSpaceCompany, co, 1, 1)
	if _, err := s.DeleteFile(ctx, FileSpaceProject, p+1000, "a.txt"); !fault.Is(err, fault.NotFound) {
		t.Fatalf("delete in an unknown project: %v", err)
	}
}
