package files

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/openbdp/bdp/fault"
	"github.com/openbdp/bdp/store"
)

// RepairReport counts what Repair found and did.
type RepairReport struct {
	// StaleReservations are uploads a dead process began and never ended
	// (a crash): their quota given back, their objects deleted.
	StaleReservations int
	// LiveUploads are uploads in flight of running processes, this node's
	// or others' (their incarnation's lock held): left alone.
	LiveUploads int
	// UploadsAborted are multipart uploads of dead uploads (a Put of
	// unknown length cut off by a crash): their parts, which no object
	// listing shows, deleted.
	UploadsAborted int
	// ObjectsListed is how many objects the store holds under company/
	// and project/.
	ObjectsListed int64
	// OwnersDeleted are companies or projects that no longer exist but
	// still had objects, all deleted.
	OwnersDeleted int
	// OrphanObjects are objects no file row and no upload refers to (a
	// crash after writing an object, before its row), deleted.
	OrphanObjects int
	// FilesWithoutObject are file rows whose object is missing, removed
	// with their quota given back.
	FilesWithoutObject int64
	// FilesWithoutObjectKept are such rows not removed because the store
	// lists no object at all: more likely a wrong bucket or endpoint than
	// every object lost, and removing them would lose the metadata too.
	FilesWithoutObjectKept int64
	// UsageRecounted are spaces whose used quota did not match their
	// files and uploads, set right.
	UsageRecounted int
}

// LogValue logs the report as one group of counts.
func (r RepairReport) LogValue() slog.Value {
	return slog.GroupValue(
		slog.Int("stale_reservations", r.StaleReservations),
		slog.Int("live_uploads", r.LiveUploads),
		slog.Int("uploads_aborted", r.UploadsAborted),
		slog.Int64("objects_listed", r.ObjectsListed),
		slog.Int("owners_deleted", r.OwnersDeleted),
		slog.Int("orphan_objects", r.OrphanObjects),
		slog.Int64("files_without_object", r.FilesWithoutObject),
		slog.Int64("files_without_object_kept", r.FilesWithoutObjectKept),
		slog.Int("usage_recounted", r.UsageRecounted),
	)
}

// repair makes the object store and the file rows agree again after a
// crash: it releases the reservations of dead processes (their
// incarnation's lock free; without an incarnation, made before cutoff)
// and deletes their objects and multipart uploads, aborts the other
// multipart uploads begun before cutoff that no reservation writes,
// deletes the objects of owners that no longer exist and the objects
// modified before cutoff that no row or reservation refers to, removes
// the rows last written before cutoff and before the listing whose object
// is missing, and recounts every space's used quota. What live processes
// upload meanwhile, on this node or on others of a cluster, is left
// alone: their reservations stand, and so everything written under them.
// The store's keys are listed into the database (store.ObjectInventory),
// so memory stays flat however many objects there are.
func repair(ctx context.Context, st *store.Store, objects *Objects, log *slog.Logger, cutoff time.Time) (RepairReport, error) {
	var rep RepairReport
	// S3 listings give times to the second (RFC 3339): an object or upload
	// of the cut-off's own second may be newer than it, so only the whole
	// seconds before count as old.
	storeCutoff := cutoff.Truncate(time.Second)
	stale, err := st.ReleaseStaleReservations(ctx, cutoff)
	rep.StaleReservations = len(stale)
	if err != nil {
		return rep, fmt.Errorf("repair: %w", err)
	}
	for _, r := range stale {
		log.Info("released the upload of a dead process", slog.String("space", string(r.Space)),
			slog.Int64("owner_id", r.OwnerID), slog.String("path", r.Path), slog.String("object_key", r.ObjectKey),
			slog.Int64("incarnation", r.Incarnation))
		if err := objects.Delete(ctx, r.ObjectKey); err != nil {
			return rep, fmt.Errorf("repair: %w", err)
		}
		// Its Put is dead however recently it stored a part: its key is
		// its own, so every upload to it goes.
		n, err := objects.abortUploads(ctx, r.ObjectKey, func(string, time.Time) (bool, error) { return true, nil })
		rep.UploadsAborted += n
		if err != nil {
			return rep, fmt.Errorf("repair: %w", err)
		}
	}
	if rep.LiveUploads, err = st.LiveReservations(ctx); err != nil {
		return rep, fmt.Errorf("repair: %w", err)
	}

	// The parts of bdp's space in the bucket; the repair never looks at,
	// let alone deletes, anything else.
	prefixes := []string{string(store.FileSpaceCompany) + "/", string(store.FileSpaceProject) + "/"}
	for _, prefix := range prefixes {
		// A Put begins its multipart upload only once its reservation
		// has committed, and completes or aborts it before the
		// reservation goes: one whose key no reservation holds belongs
		// to no upload in flight, on any node. (Those begun since this
		// process started are left to the next start, as before.)
		n, err := objects.abortUploads(ctx, prefix, func(key string, initiated time.Time) (bool, error) {
			if !initiated.Before(storeCutoff) {
				return false, nil
			}
			reserved, err := st.Reserved(ctx, key)
			return !reserved, err
		})
		rep.UploadsAborted += n
		if err != nil {
			return rep, fmt.Errorf("repair: %w", err)
		}
	}

	inv, err := st.NewObjectInventory(ctx)
	if err != nil {
		return rep, fmt.Errorf("repair: %w", err)
	}
	defer inv.Close()
	for _, prefix := range prefixes {
		err := objects.Keys(ctx, prefix, func(key string, _ int64, modified time.Time) error {
			return inv.Add(ctx, key, modified)
		})
		if err != nil {
			// Without the whole listing, a key not seen is not a key
			// missing: nothing may be removed.
			return rep, fmt.Errorf("repair: list objects: %w", err)
		}
	}
	rep.ObjectsListed = inv.Listed()

	gone, err := inv.GoneOwners(ctx)
	if err != nil {
		return rep, fmt.Errorf("repair: %w", err)
	}
	for _, o := range gone {
		if err := deleteOwner(ctx, st, objects, o); err != nil {
			return rep, fmt.Errorf("repair: %w", err)
		}
		rep.OwnersDeleted++
		log.Info("deleted the objects of a deleted "+string(o.Space), slog.Int64("owner_id", o.OwnerID))
	}

	err = inv.Orphans(ctx, storeCutoff, func(key string) error {
		if err := objects.Delete(ctx, key); err != nil {
			return err
		}
		rep.OrphanObjects++
		return nil
	})
	if err != nil {
		return rep, fmt.Errorf("repair: orphan objects: %w", err)
	}

	missing, err := inv.FilesWithoutObject(ctx, cutoff)
	if err != nil {
		return rep, fmt.Errorf("repair: %w", err)
	}
	switch {
	case missing > 0 && inv.Listed() == 0:
		rep.FilesWithoutObjectKept = missing
		log.Error("the object store holds no file at all: file rows kept; check BDP_S3_ENDPOINT and BDP_S3_BUCKET",
			slog.Int64("files", missing))
	case missing > 0:
		rep.FilesWithoutObject, err = inv.RemoveFilesWithoutObject(ctx, cutoff, func(f store.File) {
			log.Warn("removed a file whose object is missing", slog.String("space", string(f.Space)),
				slog.Int64("owner_id", f.OwnerID), slog.String("path", f.Path), slog.String("object_key", f.ObjectKey))
		})
		if err != nil {
			return rep, fmt.Errorf("repair: %w", err)
		}
	}
	inv.Close()

	fixed, err := st.RecountFileUsage(ctx)
	rep.UsageRecounted = len(fixed)
	if err != nil {
		return rep, fmt.Errorf("repair: %w", err)
	}
	for _, c := range fixed {
		log.Info("recounted the used file quota", slog.String("space", string(c.Space)), slog.Int64("owner_id", c.OwnerID),
			slog.Int64("files_was", c.Was.Files), slog.Int64("files", c.Now.Files),
			slog.Int64("bytes_was", c.Was.SpaceBytes), slog.Int64("bytes", c.Now.SpaceBytes))
	}
	return rep, nil
}

// uploadsPage is how many multipart uploads one listing returns, S3's
// most.
const uploadsPage = 1000

// abortUploads aborts the multipart uploads under prefix that abort picks
// by their key and when they began (to the second, or the last part's
// write), and returns how many. Put aborts its own upload when it fails,
// but not when the process dies: the parts stay in the store, taking
// space, in no listing of objects.
func (o *Objects) abortUploads(ctx context.Context, prefix string, abort func(key string, initiated time.Time) (bool, error)) (int, error) {
	aborted := 0
	keyMarker, idMarker := "", ""
	for {
		page, err := o.core.ListMultipartUploads(ctx, o.bucket, prefix, keyMarker, idMarker, "", uploadsPage)
		if err != nil {
			return aborted, fmt.Errorf("list multipart uploads %s: %w", prefix, err)
		}
		for _, u := range page.Uploads {
			pick, err := abort(u.Key, u.Initiated)
			if err != nil {
				return aborted, fmt.Errorf("multipart upload of %s: %w", u.Key, err)
			}
			if !pick {
				continue
			}
			if err := o.core.AbortMultipartUpload(ctx, o.bucket, u.Key, u.UploadID); err != nil && !isNotFound(err) {
				return aborted, fmt.Errorf("abort multipart upload of %s: %w", u.Key, err)
			}
			aborted++
		}
		if !page.IsTruncated || (page.NextKeyMarker == keyMarker && page.NextUploadIDMarker == idMarker) {
			return aborted, nil
		}
		keyMarker, idMarker = page.NextKeyMarker, page.NextUploadIDMarker
	}
}

// deleteOwner deletes every object of a company or project that no
// longer exists. It refuses an owner that still exists: its rows would
// be left without their objects.
func deleteOwner(ctx context.Context, st *store.Store, objects *Objects, owner store.FileOwner) error {
	exists, err := st.FileOwnerExists(ctx, owner)
	if err != nil {
		return err
	}
	if exists {
		return fault.Conflictf("%s %d still exists; only the files of a deleted %s are deleted with it",
			owner.Space, owner.OwnerID, owner.Space)
	}
	return objects.DeletePrefix(ctx, owner.ObjectPrefix())
}

// Repair makes the object store and the file rows agree after a crash
// (see repair), with the Service's creation as the cut-off: bdp serve
// calls it at start, before it serves HTTP. It releases the uploads of
// dead processes only: those of an incarnation (WithIncarnation) once its
// lock is free, whenever they began; those without one when they began
// before the cut-off, which is safe only while no other process without
// an incarnation uploads to the same database.
func (s *Service) Repair(ctx context.Context) (RepairReport, error) {
	return repair(ctx, s.store, s.objects, s.log, s.started)
}

// DeleteOwner deletes every object of a company or project that has been
// deleted (its rows went with it, store.DeleteProject). It refuses, with
// Conflict, an owner that still exists.
func (s *Service) DeleteOwner(ctx context.Context, space store.FileSpace, ownerID int64) error {
	return deleteOwner(ctx, s.store, s.objects, store.FileOwner{Space: space, OwnerID: ownerID})
}
