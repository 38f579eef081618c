package files_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/openbdp/bdp/fault"
	"github.com/openbdp/bdp/files"
	"github.com/openbdp/bdp/files/filestest"
	"github.com/openbdp/bdp/store"
	"github.com/openbdp/bdp/store/storetest"
)

// The repair runs against a real PostgreSQL and the real embedded object
// store. A "crash" is the state a killed process leaves: rows and objects
// written by a first Service, the repair run by a second one started
// afterwards, as bdp serve does at its next start.

type repairEnv struct {
	url       string
	cfg       files.ObjectsConfig
	st        *store.Store
	objects   *files.Objects
	log       *slog.Logger
	companyID int64
	projectID int64
}

func newRepairEnv(t *testing.T) *repairEnv {
	t.Helper()
	ctx := context.Background()
	e := &repairEnv{cfg: filestest.Start(t), log: slog.New(slog.DiscardHandler)}
	var err error
	if e.objects, err = files.OpenObjects(ctx, e.cfg); err != nil {
		t.Fatal(err)
	}
	e.st, e.url = storetest.Open(t, testCluster)
	e.companyID, e.projectID = e.company(t, "acme")
	return e
}

// company makes a company with one project.
func (e *repairEnv) company(t *testing.T, name string) (companyID, projectID int64) {
	t.Helper()
	tn := storetest.NewTenant(t, e.st, name)
	return tn.Company.ID, tn.Project.ID
}

func (e *repairEnv) upload(t *testing.T, svc *files.Service, space store.FileSpace, owner int64, path string, size int) store.File {
	t.Helper()
	folder, name := "", path
	if i := strings.LastIndexByte(path, '/'); i >= 0 {
		folder, name = path[:i], path[i+1:]
	}
	f, err := svc.Upload(context.Background(), space, owner, folder, name, bytes.NewReader(bytes.Repeat([]byte{'x'}, size)), files.AtMost(int64(size)), false)
	if err != nil {
		t.Fatalf("upload %s: %v", path, err)
	}
	return f
}

// put writes an object straight to the store, as an upload does before
// its commit.
func (e *repairEnv) put(t *testing.T, key string, size int) {
	t.Helper()
	if _, err := e.objects.Put(context.Background(), key, bytes.NewReader(bytes.Repeat([]byte{'y'}, size)), int64(size)); err != nil {
		t.Fatal(err)
	}
}

// reserveAndPut is an upload caught between its bytes and its commit.
func (e *repairEnv) reserveAndPut(t *testing.T, space store.FileSpace, owner int64, path string, size int, replace bool) store.Reservation {
	t.Helper()
	r, err := e.st.ReserveUpload(context.Background(), space, owner, path, int64(size), replace)
	if err != nil {
		t.Fatal(err)
	}
	e.put(t, r.ObjectKey, size)
	return r
}

// core is a client of the store beside bdp's, for what Objects does not
// offer: multipart uploads left open.
func (e *repairEnv) core(t *testing.T) minio.Core {
	t.Helper()
	c, err := minio.NewCore(e.cfg.Endpoint, &minio.Options{Creds: credentials.NewStaticV4(e.cfg.AccessKey, e.cfg.SecretKey, ""),
		Region: e.cfg.Region, BucketLookup: minio.BucketLookupPath})
	if err != nil {
		t.Fatal(err)
	}
	return *c
}

// beginMultipart is a Put of unknown length cut off after its first part.
func (e *repairEnv) beginMultipart(t *testing.T, key string) {
	t.Helper()
	ctx := context.Background()
	c := e.core(t)
	id, err := c.NewMultipartUpload(ctx, e.cfg.Bucket, key, minio.PutObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutObjectPart(ctx, e.cfg.Bucket, key, id, 1, bytes.NewReader(make([]byte, 5<<20)), 5<<20, minio.PutObjectPartOptions{}); err != nil {
		t.Fatal(err)
	}
}

// openUploads lists the keys of the multipart uploads left open.
func (e *repairEnv) openUploads(t *testing.T) []string {
	t.Helper()
	res, err := e.core(t).ListMultipartUploads(context.Background(), e.cfg.Bucket, "", "", "", "", 1000)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, u := range res.Uploads {
		keys = append(keys, u.Key)
	}
	return keys
}

// keys lists every object of the bucket.
func (e *repairEnv) keys(t *testing.T) []string {
	t.Helper()
	var keys []string
	if err := e.objects.Keys(context.Background(), "", func(key string, _ int64, _ time.Time) error {
		keys = append(keys, key)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return keys
}

func (e *repairEnv) exec(t *testing.T, sql string, args ...any) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, e.url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql, args...); err != nil {
		t.Fatal(err)
	}
}

func (e *repairEnv) wantQuota(t *testing.T, space store.FileSpace, owner int64, files, bytes int64) {
	t.Helper()
	q, err := e.st.Quota(context.Background(), space, owner)
	if err != nil {
		t.Fatal(err)
	}
	if q.Used != (store.QuotaUsage{Files: files, SpaceBytes: bytes}) {
		t.Fatalf("%s %d uses %+v, want %d files, %d bytes", space, owner, q.Used, files, bytes)
	}
}

// restart is the Service of bdp's next start, in the second after the
// crash at the earliest: the store reports times to the second, and the
// repair leaves what it cannot tell from the new process's own.
func restart(e *repairEnv) *files.Service {
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second)))
	return files.NewService(e.st, e.objects, e.log)
}

func TestRepairAfterCrash(t *testing.T) {
	ctx := context.Background()
	e := newRepairEnv(t)
	p, co := e.projectID, e.companyID
	before := files.NewService(e.st, e.objects, e.log) // the process that crashes

	kept := e.upload(t, before, store.FileSpaceProject, p, "kept.pdf", 1000)
	keptCompany := e.upload(t, before, store.FileSpaceCompany, co, "kept.pdf", 10)
	// A crash after writing an upload's object, before its commit.
	crashed := e.reserveAndPut(t, store.FileSpaceProject, p, "crashed.bin", 5000, false)
	// A crash after a replace committed, before it deleted the old object:
	// an object without row and without reservation.
	old := e.upload(t, before, store.FileSpaceProject, p, "replaced.txt", 300)
	replace := e.reserveAndPut(t, store.FileSpaceProject, p, "replaced.txt", 200, true)
	replaced, oldKey, err := e.st.CommitUpload(ctx, replace)
	if err != nil || oldKey != old.ObjectKey {
		t.Fatalf("commit of the replace: %v, old key %q, want %q", err, oldKey, old.ObjectKey)
	}
	// A crash during a Put of unknown length: a reservation, and parts
	// of a multipart upload but no object.
	crashedStream, err := e.st.ReserveUpload(ctx, store.FileSpaceProject, p, "stream.bin", 20<<20, false)
	if err != nil {
		t.Fatal(err)
	}
	e.beginMultipart(t, crashedStream.ObjectKey)
	// A row whose object the store lost.
	lost := e.upload(t, before, store.FileSpaceProject, p, "lost.txt", 40)
	if err := e.objects.Delete(ctx, lost.ObjectKey); err != nil {
		t.Fatal(err)
	}
	// A company's used quota that drifted from its files.
	e.exec(t, `UPDATE file_usage SET files = 7, space_bytes = 7777 WHERE space = 'company' AND owner_id = $1`, co)
	// Something else in the bucket, not bdp's.
	e.put(t, "backups/notes.txt", 5)

	// A crash during a Put of unknown length whose last part the store
	// stamped with the second the next process starts in.
	crashedLate, err := e.st.ReserveUpload(ctx, store.FileSpaceProject, p, "late.bin", 30<<20, false)
	if err != nil {
		t.Fatal(err)
	}

	after := restart(e)
	e.beginMultipart(t, crashedLate.ObjectKey)
	// An upload of the new process, in progress while the repair runs.
	fresh := e.reserveAndPut(t, store.FileSpaceProject, p, "fresh.bin", 64, false)
	freshStream, err := e.st.ReserveUpload(ctx, store.FileSpaceProject, p, "fresh-stream.bin", 10<<20, false)
	if err != nil {
		t.Fatal(err)
	}
	e.beginMultipart(t, freshStream.ObjectKey)

	rep, err := after.Repair(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := files.RepairReport{StaleReservations: 3, UploadsAborted: 2, ObjectsListed: 5, OrphanObjects: 1, FilesWithoutObject: 1, UsageRecounted: 1}
	if rep != want {
		t.Fatalf("report %+v, want %+v", rep, want)
	}
	wantKeys := []string{kept.ObjectKey, keptCompany.ObjectKey, replaced.ObjectKey, fresh.ObjectKey, "backups/notes.txt"}
	slices.Sort(wantKeys)
	if got := e.keys(t); !slices.Equal(got, wantKeys) {
		t.Fatalf("objects after the repair %v\nwant %v\n(deleted: crashed %s, replaced %s)", got, wantKeys, crashed.ObjectKey, old.ObjectKey)
	}
	if got := e.openUploads(t); !slices.Equal(got, []string{freshStream.ObjectKey}) {
		t.Fatalf("multipart uploads left open %v, want only the one in progress %s", got, freshStream.ObjectKey)
	}
	if _, err := e.st.GetFile(ctx, store.FileSpaceProject, p, "lost.txt"); !fault.Is(err, fault.NotFound) {
		t.Fatalf("row of the lost object: %v, want it removed", err)
	}
	// Quota: kept 1000 + replaced 200 + the fresh uploads' 64 and 10 MiB;
	// the crashed uploads' 5000 and 20 MiB and the lost file's 40 given back.
	e.wantQuota(t, store.FileSpaceProject, p, 4, 1264+10<<20)
	e.wantQuota(t, store.FileSpaceCompany, co, 1, 10)
	// The crashed upload's path is free again; the fresh upload commits.
	if _, _, err := e.st.CommitUpload(ctx, crashed); !fault.Is(err, fault.NotFound) {
		t.Fatalf("commit of the crashed upload after the repair: %v, want NotFound", err)
	}
	e.upload(t, after, store.FileSpaceProject, p, "crashed.bin", 3)
	if _, _, err := e.st.CommitUpload(ctx, fresh); err != nil {
		t.Fatalf("commit of the upload in progress during the repair: %v", err)
	}
	if err := e.st.ReleaseUpload(ctx, freshStream); err != nil {
		t.Fatal(err)
	}
	e.wantQuota(t, store.FileSpaceProject, p, 4, 1267)

	// Nothing left to repair but the parts of the upload released above,
	// whose Put never ended.
	again, err := restart(e).Repair(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if again != (files.RepairReport{UploadsAborted: 1, ObjectsListed: 5}) {
		t.Fatalf("second repair %+v, want nothing done", again)
	}
}

func TestDeleteOwner(t *testing.T) {
	ctx := context.Background()
	e := newRepairEnv(t)
	svc := files.NewService(e.st, e.objects, e.log)
	// The deleted project is the first (id 1), and others have ids 10 to
	// 13, whose keys start with "project/1": only the deleted project's
	// objects may go.
	deleted := []string{
		e.upload(t, svc, store.FileSpaceProject, e.projectID, "a", 1).ObjectKey,
		e.upload(t, svc, store.FileSpaceProject, e.projectID, "b/c", 2).ObjectKey,
	}
	others := []store.File{e.upload(t, svc, store.FileSpaceCompany, e.companyID, "a", 1)}
	for i := range 12 {
		_, p := e.company(t, fmt.Sprintf("c%d", i))
		others = append(others, e.upload(t, svc, store.FileSpaceProject, p, "a", 1))
	}
	if last := others[len(others)-1].OwnerID; e.projectID != 1 || last < 10 {
		t.Fatalf("project ids %d and %d: the test needs 1 and 10 or more", e.projectID, last)
	}
	if err := svc.DeleteOwner(ctx, store.FileSpaceProject, e.projectID); !fault.Is(err, fault.Conflict) {
		t.Fatalf("DeleteOwner of a project that exists: %v, want Conflict", err)
	}
	if got := e.keys(t); len(got) != len(others)+len(deleted) {
		t.Fatalf("a refused DeleteOwner deleted objects: %d left, want %d", len(got), len(others)+len(deleted))
	}
	if _, err := e.st.DeleteProject(ctx, e.projectID); err != nil {
		t.Fatal(err)
	}
	if err := svc.DeleteOwner(ctx, store.FileSpaceProject, e.projectID); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, f := range others {
		want = append(want, f.ObjectKey)
	}
	slices.Sort(want)
	if got := e.keys(t); !slices.Equal(got, want) {
		t.Fatalf("objects after deleting project %d: %v\nwant %v", e.projectID, got, want)
	}
	if err := svc.DeleteOwner(ctx, "user", 1); !fault.Is(err, fault.Invalid) {
		t.Fatalf("DeleteOwner of space user: %v, want Invalid", err)
	}
}

// A project deleted while bdp could not delete its objects (stopped,
// crashed, or the store down): the next start's repair deletes them.
func TestRepairDeletesObjectsOfDeletedOwners(t *testing.T) {
	ctx := context.Background()
	e := newRepairEnv(t)
	svc := files.NewService(e.st, e.objects, e.log)
	_, gone := e.company(t, "gone")
	e.upload(t, svc, store.FileSpaceProject, gone, "x/a", 5)
	e.upload(t, svc, store.FileSpaceProject, gone, "x/b", 6)
	kept := e.upload(t, svc, store.FileSpaceProject, e.projectID, "a", 7)
	if _, err := e.st.DeleteProject(ctx, gone); err != nil {
		t.Fatal(err)
	}
	rep, err := restart(e).Repair(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep != (files.RepairReport{ObjectsListed: 3, OwnersDeleted: 1}) {
		t.Fatalf("report %+v, want the deleted project's objects deleted", rep)
	}
	if got := e.keys(t); !slices.Equal(got, []string{kept.ObjectKey}) {
		t.Fatalf("objects %v, want only %s", got, kept.ObjectKey)
	}
}

// Pointed at an empty bucket (a wrong BDP_S3_BUCKET, a new endpoint), the
// repair keeps the file rows rather than remove every one of them.
func TestRepairKeepsRowsWhenTheStoreIsEmpty(t *testing.T) {
	ctx := context.Background()
	e := newRepairEnv(t)
	svc := files.NewService(e.st, e.objects, e.log)
	e.upload(t, svc, store.FileSpaceProject, e.projectID, "a", 5)
	e.upload(t, svc, store.FileSpaceCompany, e.companyID, "b", 6)
	var logs strings.Builder
	empty := files.NewService(e.st, filestest.Open(t), slog.New(slog.NewTextHandler(&logs, nil)))
	rep, err := empty.Repair(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep != (files.RepairReport{FilesWithoutObjectKept: 2}) {
		t.Fatalf("report %+v, want both rows kept", rep)
	}
	if !strings.Contains(logs.String(), "BDP_S3_BUCKET") {
		t.Fatalf("log does not point at the configuration: %s", logs.String())
	}
	e.wantQuota(t, store.FileSpaceProject, e.projectID, 1, 5)
	if _, err := e.st.GetFile(ctx, store.FileSpaceCompany, e.companyID, "b"); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkRepairLiveObjects is the repair at every start of a store whose
// objects all have their rows: listing, inventory and comparison of
// n keys (nothing to delete). peak-heap-MiB is how far the heap grew
// above where it began: the keys go to PostgreSQL in batches of 1,000,
// not into a Go map, so it stays the same for ten times the objects.
func BenchmarkRepairLiveObjects(b *testing.B) {
	for _, n := range []int{2000, 20000} {
		b.Run(fmt.Sprintf("objects=%d", n), func(b *testing.B) { benchmarkRepair(b, n) })
	}
}

func benchmarkRepair(b *testing.B, repairObjects int) {
	ctx := context.Background()
	e := &repairEnv{cfg: filestest.Start(b), log: slog.New(slog.DiscardHandler)}
	var err error
	if e.objects, err = files.OpenObjects(ctx, e.cfg); err != nil {
		b.Fatal(err)
	}
	e.st, e.url = storetest.Open(b, testCluster)
	p := storetest.NewTenant(b, e.st, "bench").Project
	keys := make([]string, repairObjects)
	paths := make([]string, repairObjects)
	for i := range keys {
		keys[i] = fmt.Sprintf("project/%d/%08d", p.ID, i)
		paths[i] = fmt.Sprintf("f/%08d", i)
	}
	work := make(chan string)
	errs := make(chan error, 8)
	for range 8 {
		go func() {
			for k := range work {
				if _, err := e.objects.Put(ctx, k, bytes.NewReader(nil), 0); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for _, k := range keys {
		work <- k
	}
	close(work)
	for range 8 {
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
	}
	conn, err := pgx.Connect(ctx, e.url)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO files (space, owner_id, path, size_bytes, object_key)
		SELECT 'project', $1, unnest($2::text[]), 0, unnest($3::text[])`, p.ID, paths, keys); err != nil {
		b.Fatal(err)
	}
	conn.Close(ctx)
	svc := files.NewService(e.st, e.objects, e.log)
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base, peak := ms.HeapInuse, ms.HeapInuse
	stop, sampled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				peak = max(peak, ms.HeapInuse)
			}
		}
	}()
	b.ResetTimer()
	for b.Loop() {
		rep, err := svc.Repair(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if rep.ObjectsListed != int64(repairObjects) || rep.OrphanObjects != 0 || rep.FilesWithoutObject != 0 {
			b.Fatalf("report %+v", rep)
		}
	}
	close(stop)
	<-sampled
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/float64(repairObjects), "µs/object")
	b.ReportMetric(float64(peak-base)/(1<<20), "peak-heap-MiB")
}
