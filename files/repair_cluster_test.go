package files_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/openbdp/bdp/fault"
	"github.com/openbdp/bdp/files"
	"github.com/openbdp/bdp/store"
)

// Two nodes on one database and one object store, as in cluster mode:
// node A has uploads in flight when node B starts and repairs. B releases
// them only when A is dead: its incarnation's lock free, or, for uploads
// without an incarnation, begun before B's start (one node's restart).
func TestRepairReleasesOnlyDeadNodesUploads(t *testing.T) {
	for _, tc := range []struct {
		name string
		// incarnation: A records one in its uploads; dies: A's process
		// ends (its lock's session closes, as on kill -9) before B's
		// repair; bFirst: B starts before A begins its uploads.
		incarnation, dies, bFirst bool
		released                  bool
	}{
		{"live node, B starts after its uploads", true, false, false, false},
		{"live node, B starts before its uploads", true, false, true, false},
		{"dead node, B starts after its uploads", true, true, false, true},
		{"dead node, B starts before its uploads", true, true, true, true},
		{"no incarnation, uploads begun before B's start", false, true, false, true},
		{"no incarnation, uploads begun after B's start", false, false, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			e := newRepairEnv(t)
			p := e.projectID
			var incA *store.Incarnation
			var optsA []files.Option
			if tc.incarnation {
				incA = e.incarnation(t, e.st)
				optsA = append(optsA, files.WithIncarnation(incA))
			}
			nodeA := files.NewService(e.st, e.objects, e.log, optsA...)
			var nodeB *files.Service
			if tc.bFirst {
				nodeB = e.node(t)
			}

			// A streams a file of unknown size: its first part is stored,
			// the rest still to come.
			body, write := io.Pipe()
			defer write.Close()
			uploaded := make(chan error, 1)
			var file store.File
			go func() {
				var err error
				file, err = nodeA.Upload(ctx, store.FileSpaceProject, p, "", "stream.bin", body, files.AtMost(-1), false)
				uploaded <- err
			}()
			first := files.ExactSizeUpTo + 1
			if _, err := write.Write(bytes.Repeat([]byte{'a'}, first)); err != nil {
				t.Fatal(err)
			}
			streamKey, began := e.waitForPart(t)
			// And A has stored the object of another upload, not yet
			// committed.
			put, err := e.st.ReserveUploadAs(ctx, incA, store.FileSpaceProject, p, "put.bin", 100, false)
			if err != nil {
				t.Fatal(err)
			}
			e.put(t, put.ObjectKey, 100)

			if !tc.bFirst {
				// The store stamps uploads to the second: B starts in a
				// later one, so that A's multipart upload is older than
				// B's start even there.
				waitFor(t, "a second after the multipart upload began", func() bool {
					return time.Now().Truncate(time.Second).After(began)
				})
				nodeB = e.node(t)
			}
			if tc.dies && incA != nil {
				incA.Close()
				e.waitDead(t, incA.ID())
			}
			rep, err := nodeB.Repair(ctx)
			if err != nil {
				t.Fatal(err)
			}

			if tc.released {
				if want := (files.RepairReport{StaleReservations: 2, UploadsAborted: 1}); rep != want {
					t.Fatalf("report %+v, want %+v", rep, want)
				}
				if keys, uploads := e.keys(t), e.openUploads(t); len(keys) != 0 || len(uploads) != 0 {
					t.Fatalf("objects %v and multipart uploads %v left of a dead node's uploads", keys, uploads)
				}
				e.wantQuota(t, store.FileSpaceProject, p, 0, 0)
				if _, _, err := e.st.CommitUpload(ctx, put); !fault.Is(err, fault.NotFound) {
					t.Fatalf("commit of a released upload: %v, want NotFound", err)
				}
				write.CloseWithError(errors.New("node A is dead"))
				if err := wait(t, uploaded); err == nil {
					t.Fatal("the dead node's streamed upload succeeded")
				}
				return
			}

			live := 0
			if tc.incarnation {
				live = 2
			}
			if want := (files.RepairReport{LiveUploads: live, ObjectsListed: 1}); rep != want {
				t.Fatalf("report %+v, want %+v", rep, want)
			}
			if got := e.keys(t); !slices.Equal(got, []string{put.ObjectKey}) {
				t.Fatalf("objects %v, want the uncommitted upload's %s", got, put.ObjectKey)
			}
			if got := e.openUploads(t); !slices.Equal(got, []string{streamKey}) {
				t.Fatalf("multipart uploads %v, want the streamed upload's %s", got, streamKey)
			}
			// 100 bytes and the streamed upload's bound, the per-file limit.
			e.wantQuota(t, store.FileSpaceProject, p, 2, 100+100<<20)

			// A goes on and completes both.
			if _, err := write.Write([]byte("the end")); err != nil {
				t.Fatal(err)
			}
			write.Close()
			if err := wait(t, uploaded); err != nil {
				t.Fatalf("the live node's streamed upload after the repair: %v", err)
			}
			if file.SizeBytes != int64(first+7) || file.ObjectKey != streamKey {
				t.Fatalf("streamed file %+v, want %d bytes under %s", file, first+7, streamKey)
			}
			if _, _, err := e.st.CommitUpload(ctx, put); err != nil {
				t.Fatalf("commit of the live node's upload after the repair: %v", err)
			}
			e.wantQuota(t, store.FileSpaceProject, p, 2, 100+int64(first+7))
		})
	}
}

// incarnation starts an incarnation on st, closed when t ends.
func (e *repairEnv) incarnation(t *testing.T, st *store.Store) *store.Incarnation {
	t.Helper()
	inc, err := st.StartIncarnation(context.Background(), e.log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(inc.Close)
	return inc
}

// node starts another node's document store on the same database and
// object store: its own connections and its own incarnation.
func (e *repairEnv) node(t *testing.T) *files.Service {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, e.url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	objects, err := files.OpenObjects(ctx, e.cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(objects.Close)
	return files.NewService(st, objects, e.log, files.WithIncarnation(e.incarnation(t, st)))
}

// waitFor polls cond until it holds, failing t after a deadline.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not %s after 20 s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitDead waits until the server has ended the session of incarnation
// id's lock, which it does a moment after the connection closes.
func (e *repairEnv) waitDead(t *testing.T, id int64) {
	t.Helper()
	waitFor(t, "dead", func() bool {
		live, err := e.st.IncarnationLive(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		return !live
	})
}

// waitForPart waits until the one multipart upload in the store has
// stored a part, and returns its key and when it began.
func (e *repairEnv) waitForPart(t *testing.T) (string, time.Time) {
	t.Helper()
	ctx := context.Background()
	c := e.core(t)
	var key string
	var began time.Time
	waitFor(t, "a part stored", func() bool {
		res, err := c.ListMultipartUploads(ctx, e.cfg.Bucket, "", "", "", "", 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Uploads) == 0 {
			return false
		}
		u := res.Uploads[0]
		parts, err := c.ListObjectParts(ctx, e.cfg.Bucket, u.Key, u.UploadID, 0, 10)
		if err != nil {
			t.Fatal(err)
		}
		key, began = u.Key, u.Initiated
		return len(parts.ObjectParts) > 0
	})
	return key, began
}

// wait returns the upload's result, failing t if it does not end.
func wait(t *testing.T, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(30 * time.Second):
		t.Fatal("the upload did not end within 30 s")
		return nil
	}
}
