package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/openbdp/bdp/fault"
)

// FileSpace says whose files a file belongs to: the same path in the
// company space and in a project space are two different files.
type FileSpace string

// The file spaces.
const (
	FileSpaceCompany FileSpace = "company"
	FileSpaceProject FileSpace = "project"
)

func (sp FileSpace) check() error {
	if sp != FileSpaceCompany && sp != FileSpaceProject {
		return fault.Invalidf("invalid file space %q: want company or project", string(sp))
	}
	return nil
}

// File is a committed file: its metadata here, its bytes in the object
// store under ObjectKey.
type File struct {
	Space     FileSpace
	OwnerID   int64 // company id or project id, after Space
	Path      string
	SizeBytes int64
	ObjectKey string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Reservation is the quota an upload holds from before its bytes move
// until CommitUpload or ReleaseUpload. The bytes go to the object store
// under ObjectKey, a fresh key even for a replace, so the old object stays
// readable until the commit.
type Reservation struct {
	ID        int64
	Space     FileSpace
	OwnerID   int64
	Path      string
	SizeBytes int64
	Replace   bool
	ObjectKey string
	// Incarnation is the process that made it (ReserveUploadAs); 0 for
	// none. The start-up repair releases it only once that process is dead.
	Incarnation int64
}

// QuotaUsage is a count of files and bytes.
type QuotaUsage struct {
	Files      int64 `json:"files"`
	SpaceBytes int64 `json:"space_bytes"`
}

// FileQuota is the quota object of api.md 2.19 for service files. Used
// includes uploads in flight: their space is not available to others.
type FileQuota struct {
	Limits    Quota      `json:"quota_limits"`
	Used      QuotaUsage `json:"quota_used"`
	Available QuotaUsage `json:"quota_available"`
}

func newFileQuota(lim Quota, used QuotaUsage) FileQuota {
	return FileQuota{Limits: lim, Used: used, Available: QuotaUsage{
		Files:      max(0, lim.Files-used.Files),
		SpaceBytes: max(0, lim.SpaceBytes-used.SpaceBytes),
	}}
}

// The quota limits of a space: its row in company_quotas or
// project_quotas, or the defaults of decisions.md 2 (1000 files, 1 GiB,
// 100 MiB per file) when the operator never set one.
const quotaLimitColumns = `
	COALESCE(cq.files, pq.files, 1000),
	COALESCE(cq.space_bytes, pq.space_bytes, 1073741824),
	COALESCE(cq.file_size_bytes, pq.file_size_bytes, 104857600)`

// Quota returns the limits, use and what is left of a space.
func (s *Store) Quota(ctx context.Context, space FileSpace, ownerID int64) (FileQuota, error) {
	if err := space.check(); err != nil {
		return FileQuota{}, err
	}
	var lim Quota
	var used QuotaUsage
	err := s.pool.QueryRow(ctx, `
		SELECT COALESCE(u.files, 0), COALESCE(u.space_bytes, 0),`+quotaLimitColumns+`
		FROM (SELECT id FROM companies WHERE $1 = 'company' AND id = $2
		      UNION ALL SELECT id FROM projects WHERE $1 = 'project' AND id = $2) o
		LEFT JOIN file_usage u ON u.space = $1 AND u.owner_id = o.id
		LEFT JOIN company_quotas cq ON $1 = 'company' AND cq.company_id = o.id
		LEFT JOIN project_quotas pq ON $1 = 'project' AND pq.project_id = o.id`,
		string(space), ownerID).Scan(&used.Files, &used.SpaceBytes, &lim.Files, &lim.SpaceBytes, &lim.FileSizeBytes)
	if err != nil {
		return FileQuota{}, translate(err, string(space))
	}
	return newFileQuota(lim, used), nil
}

// lockUsage locks the usage row of a space for the rest of tx, creating it
// first, and returns it with the space's limits. Every change of the
// space's files and reservations goes through this lock, so concurrent
// uploads are counted one after the other.
func lockUsage(ctx context.Context, tx pgx.Tx, space FileSpace, ownerID int64) (Quota, QuotaUsage, error) {
	var lim Quota
	var used QuotaUsage
	if _, err := tx.Exec(ctx, `INSERT INTO file_usage (space, owner_id) VALUES ($1, $2) ON CONFLICT DO NOTHING`,
		string(space), ownerID); err != nil {
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "23503" { // foreign_key_violation: no such owner
			return lim, used, fault.Wrap(fault.NotFound, err, string(space)+" not found")
		}
		return lim, used, err
	}
	err := tx.QueryRow(ctx, `
		SELECT u.files, u.space_bytes,`+quotaLimitColumns+`
		FROM file_usage u
		LEFT JOIN company_quotas cq ON cq.company_id = u.company_id
		LEFT JOIN project_quotas pq ON pq.project_id = u.project_id
		WHERE u.space = $1 AND u.owner_id = $2
		FOR UPDATE OF u`,
		string(space), ownerID).Scan(&used.Files, &used.SpaceBytes, &lim.Files, &lim.SpaceBytes, &lim.FileSizeBytes)
	return lim, used, err
}

// ReserveUpload checks an upload of size bytes to path against the
// space's limits and holds its quota, in one transaction, before any byte
// moves. path must already be normalised (files.NormalizePath). A new
// file (replace false) must not exist yet (Invalid, 400); a replace needs
// the file (NotFound, 404) and holds only what it grows by. Over the
// per-file limit, the file count or the remaining space it answers
// TooLarge (413) naming the limit. One upload per path at a time
// (Conflict), so a replace's difference is measured against a file that
// cannot change underneath it. The reservation names no incarnation: the
// start-up repair releases it once it is older than the repairing
// process (ReleaseStaleReservations), so only a process that is alone on
// its database should upload this way.
func (s *Store) ReserveUpload(ctx context.Context, space FileSpace, ownerID int64, path string, size int64, replace bool) (Reservation, error) {
	return s.ReserveUploadAs(ctx, nil, space, ownerID, path, size, replace)
}

// ReserveUploadAs is ReserveUpload for an upload of the process of inc
// (nil: none), which the reservation records: no other process's repair
// releases it while inc's lock is held.
func (s *Store) ReserveUploadAs(ctx context.Context, inc *Incarnation, space FileSpace, ownerID int64, path string, size int64,
	replace bool) (Reservation, error) {
	if err := space.check(); err != nil {
		return Reservation{}, err
	}
	if size < 0 {
		return Reservation{}, fault.Invalidf("invalid file size %d", size)
	}
	r := Reservation{Space: space, OwnerID: ownerID, Path: path, SizeBytes: size, Replace: replace}
	var incarnation *int64 // NULL without one
	if inc != nil {
		r.Incarnation = inc.ID()
		incarnation = &r.Incarnation
	}
	err := s.tx(ctx, func(tx pgx.Tx) error {
		lim, used, err := lockUsage(ctx, tx, space, ownerID)
		if err != nil {
			return err
		}
		if size > lim.FileSizeBytes {
			return fault.TooLargef("the file has %d bytes, over the per-file limit of %d bytes", size, lim.FileSizeBytes)
		}
		var pending bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM file_reservations
			WHERE space = $1 AND owner_id = $2 AND path = $3)`, string(space), ownerID, path).Scan(&pending); err != nil {
			return err
		}
		if pending {
			return fault.Conflictf("another upload to this path is in progress")
		}
		var oldSize int64
		err = tx.QueryRow(ctx, `SELECT size_bytes FROM files WHERE space = $1 AND owner_id = $2 AND path = $3`,
			string(space), ownerID, path).Scan(&oldSize)
		exists := err == nil
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		switch {
		case replace && !exists:
			return fault.NotFoundf("file not found")
		case !replace && exists:
			return fault.Invalidf("a file already exists at this path; replace it instead")
		}
		var files int64 = 1
		bytes := size
		if replace {
			// A shrinking replace frees its space only when it commits:
			// until then the old file still occupies it.
			files, bytes = 0, max(0, size-oldSize)
		}
		if used.Files+files > lim.Files {
			return fault.TooLargef("the file count limit of %d files is reached", lim.Files)
		}
		if used.SpaceBytes+bytes > lim.SpaceBytes {
			return fault.TooLargef("the file needs %d more bytes but only %d of the space limit of %d bytes remain",
				bytes, max(0, lim.SpaceBytes-used.SpaceBytes), lim.SpaceBytes)
		}
		if err := tx.QueryRow(ctx, `
			INSERT INTO file_reservations (space, owner_id, path, size_bytes, replace, files, bytes, object_key, incarnation)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8 || gen_random_uuid()::text, $9)
			RETURNING id, object_key`,
			string(space), ownerID, path, size, replace, files, bytes, fmt.Sprintf("%s/%d/", space, ownerID), incarnation).
			Scan(&r.ID, &r.ObjectKey); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE file_usage SET files = files + $3, space_bytes = space_bytes + $4
			WHERE space = $1 AND owner_id = $2`, string(space), ownerID, files, bytes)
		return err
	})
	if err != nil {
		return Reservation{}, translate(err, "file")
	}
	return r, nil
}

// CommitUpload turns a reservation whose bytes are stored into the file
// row and settles the use to the file's final size, r.SizeBytes: as
// ReserveUpload returned it, or lowered to the bytes actually stored when
// the reservation was an upper bound (an upload whose size was unknown
// until its end). More than was reserved answers Invalid and commits
// nothing. It returns the file and, for a replace, the object key of the
// bytes it replaced, which the caller deletes from the object store. A
// reservation already committed or released answers NotFound.
func (s *Store) CommitUpload(ctx context.Context, r Reservation) (File, string, error) {
	if err := r.Space.check(); err != nil {
		return File{}, "", err
	}
	if r.SizeBytes < 0 {
		return File{}, "", fault.Invalidf("invalid file size %d", r.SizeBytes)
	}
	var f File
	var replacedKey string
	err := s.tx(ctx, func(tx pgx.Tx) error {
		if _, _, err := lockUsage(ctx, tx, r.Space, r.OwnerID); err != nil {
			return err
		}
		var reserved, heldFiles, heldBytes int64
		err := tx.QueryRow(ctx, `DELETE FROM file_reservations WHERE id = $1 AND space = $2 AND owner_id = $3
			RETURNING path, size_bytes, object_key, files, bytes`, r.ID, string(r.Space), r.OwnerID).
			Scan(&f.Path, &reserved, &f.ObjectKey, &heldFiles, &heldBytes)
		if errors.Is(err, pgx.ErrNoRows) {
			return fault.NotFoundf("upload reservation not found: already committed or released")
		}
		if err != nil {
			return err
		}
		if r.SizeBytes > reserved {
			return fault.Invalidf("the file has %d bytes, more than the %d bytes reserved for it", r.SizeBytes, reserved)
		}
		f.SizeBytes = r.SizeBytes
		var oldSize int64
		err = tx.QueryRow(ctx, `SELECT size_bytes, object_key FROM files WHERE space = $1 AND owner_id = $2 AND path = $3`,
			string(r.Space), r.OwnerID, f.Path).Scan(&oldSize, &replacedKey)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		// The final change is measured against the file as it is now;
		// what the reservation held is given back in the same update.
		var files int64 = 1
		if err == nil {
			files = 0
		}
		bytes := f.SizeBytes - oldSize
		if err := tx.QueryRow(ctx, `
			INSERT INTO files (space, owner_id, path, size_bytes, object_key) VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (space, owner_id, path) DO UPDATE SET
				size_bytes = EXCLUDED.size_bytes, object_key = EXCLUDED.object_key, updated_at = now()
			RETURNING created_at, updated_at`,
			string(r.Space), r.OwnerID, f.Path, f.SizeBytes, f.ObjectKey).Scan(&f.CreatedAt, &f.UpdatedAt); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE file_usage SET files = files + $3, space_bytes = space_bytes + $4
			WHERE space = $1 AND owner_id = $2`, string(r.Space), r.OwnerID, files-heldFiles, bytes-heldBytes)
		return err
	})
	if err != nil {
		return File{}, "", translate(err, "file")
	}
	f.Space, f.OwnerID = r.Space, r.OwnerID
	return f, replacedKey, nil
}

// ReleaseUpload gives back the quota of an upload that failed: no file
// row, no use left behind. Releasing a reservation already committed or
// released does nothing, so callers may release on every error path.
func (s *Store) ReleaseUpload(ctx context.Context, r Reservation) error {
	if err := r.Space.check(); err != nil {
		return err
	}
	err := s.tx(ctx, func(tx pgx.Tx) error {
		if _, _, err := lockUsage(ctx, tx, r.Space, r.OwnerID); err != nil {
			return err
		}
		var files, bytes int64
		err := tx.QueryRow(ctx, `DELETE FROM file_reservations WHERE id = $1 AND space = $2 AND owner_id = $3
			RETURNING files, bytes`, r.ID, string(r.Space), r.OwnerID).Scan(&files, &bytes)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE file_usage SET files = files - $3, space_bytes = space_bytes - $4
			WHERE space = $1 AND owner_id = $2`, string(r.Space), r.OwnerID, files, bytes)
		return err
	})
	return translate(err, "file")
}

// fileColumns are the columns scanFile reads, in its order.
const fileColumns = `path, size_bytes, object_key, created_at, updated_at`

func scanFile(row pgx.Row, space FileSpace, ownerID int64) (File, error) {
	f := File{Space: space, OwnerID: ownerID}
	err := row.Scan(&f.Path, &f.SizeBytes, &f.ObjectKey, &f.CreatedAt, &f.UpdatedAt)
	return f, err
}

// GetFile returns the committed file at path; NotFound when there is none
// (an upload still in flight is not a file yet).
func (s *Store) GetFile(ctx context.Context, space FileSpace, ownerID int64, path string) (File, error) {
	if err := space.check(); err != nil {
		return File{}, err
	}
	f, err := scanFile(s.pool.QueryRow(ctx, `SELECT `+fileColumns+` FROM files WHERE space = $1 AND owner_id = $2 AND path = $3`,
		string(space), ownerID, path), space, ownerID)
	return f, translate(err, "file")
}

// ListFiles pages through the committed files of a space, sorted by path
// in byte order of its UTF-8 (so "B" before "a", and a folder's files
// together), with the number of files that match for the pagination.
// search, when not empty, keeps the paths that contain it, ignoring case
// (a search finds; the paths themselves stay case-sensitive). page and
// perPage are 1-based and positive.
func (s *Store) ListFiles(ctx context.Context, space FileSpace, ownerID int64, search string, page, perPage int) ([]File, int64, error) {
	if err := space.check(); err != nil {
		return nil, 0, err
	}
	if page < 1 || perPage < 1 {
		return nil, 0, fault.Invalidf("page and per_page must be positive, got %d and %d", page, perPage)
	}
	const where = `space = $1 AND owner_id = $2 AND ($3 = '' OR strpos(lower(path), lower($3)) > 0)`
	var total int64
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM files WHERE `+where, string(space), ownerID, search).Scan(&total); err != nil {
		return nil, 0, translate(err, "files")
	}
	if int64(page-1) > total/int64(perPage) { // past the end; (page-1)*perPage could overflow
		return []File{}, total, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT `+fileColumns+` FROM files WHERE `+where+`
		ORDER BY path COLLATE "C" LIMIT $4 OFFSET $5`, string(space), ownerID, search, perPage, (page-1)*perPage)
	if err != nil {
		return nil, 0, translate(err, "files")
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (File, error) { return scanFile(r, space, ownerID) })
	if err != nil {
		return nil, 0, translate(err, "files")
	}
	return list, total, nil
}

// DeleteFile removes the file row at path and gives its count and bytes
// back to the space, under the space's usage lock like every other
// change. It returns the file, whose object the caller then deletes from
// the object store. A missing file answers NotFound; a path with an
// upload in progress Conflict (the upload would otherwise commit over the
// deletion, or a replace's difference be measured against a file gone).
func (s *Store) DeleteFile(ctx context.Context, space FileSpace, ownerID int64, path string) (File, error) {
	if err := space.check(); err != nil {
		return File{}, err
	}
	var f File
	err := s.tx(ctx, func(tx pgx.Tx) error {
		if _, _, err := lockUsage(ctx, tx, space, ownerID); err != nil {
			return err
		}
		var pending bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM file_reservations
			WHERE space = $1 AND owner_id = $2 AND path = $3)`, string(space), ownerID, path).Scan(&pending); err != nil {
			return err
		}
		if pending {
			return fault.Conflictf("an upload to this path is in progress; delete the file once it has ended")
		}
		var err error
		f, err = scanFile(tx.QueryRow(ctx, `DELETE FROM files WHERE space = $1 AND owner_id = $2 AND path = $3
			RETURNING `+fileColumns, string(space), ownerID, path), space, ownerID)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE file_usage SET files = files - 1, space_bytes = space_bytes - $3
			WHERE space = $1 AND owner_id = $2`, string(space), ownerID, f.SizeBytes)
		return err
	})
	if err != nil {
		return File{}, translate(err, "file")
	}
	return f, nil
}
