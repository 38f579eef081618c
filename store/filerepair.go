package store

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/openbdp/bdp/fault"
)

// The queries of the start-up repair of the document store (issue 12 item
// 5): what a crash between the object store and the file rows leaves
// behind is found here and handed to package files, which owns the
// objects. Every change of a space's rows goes through lockUsage, like
// the uploads of store/files.go. Other processes may be uploading to the
// same database and store meanwhile (the nodes of a cluster): what the
// repair takes for a leftover is what a dead process's reservation holds,
// or what no row refers to in a snapshot taken after the store was
// listed, and a row is taken for one without object only when it was
// written before the listing began.

// FileOwner is a company or project space, as object keys name it.
type FileOwner struct {
	Space   FileSpace
	OwnerID int64
}

// ObjectPrefix is the prefix of every object key of the space:
// "{space}/{owner_id}/", as ReserveUpload makes them.
func (o FileOwner) ObjectPrefix() string {
	return fmt.Sprintf("%s/%d/", o.Space, o.OwnerID)
}

// ownerOfKey reads the space and owner out of an object key
// "{space}/{owner_id}/..."; false for a key bdp does not make.
func ownerOfKey(key string) (FileOwner, bool) {
	space, rest, ok := strings.Cut(key, "/")
	if !ok || (FileSpace(space) != FileSpaceCompany && FileSpace(space) != FileSpaceProject) {
		return FileOwner{}, false
	}
	id, _, ok := strings.Cut(rest, "/")
	if !ok || id == "" || id[0] == '+' || id[0] == '-' {
		return FileOwner{}, false
	}
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil || strconv.FormatInt(n, 10) != id {
		return FileOwner{}, false
	}
	return FileOwner{Space: FileSpace(space), OwnerID: n}, true
}

// ownerExists is true when the space's company or project of row o exists.
const ownerExists = `CASE o.space
	WHEN 'company' THEN EXISTS (SELECT 1 FROM companies WHERE id = o.owner_id)
	WHEN 'project' THEN EXISTS (SELECT 1 FROM projects WHERE id = o.owner_id)
	ELSE false END`

// scanFileOwner reads a (space, owner_id) row.
func scanFileOwner(row pgx.CollectableRow) (FileOwner, error) {
	var o FileOwner
	var space string
	err := row.Scan(&space, &o.OwnerID)
	o.Space = FileSpace(space)
	return o, err
}

// FileOwnerExists tells whether the company or project of a space exists.
func (s *Store) FileOwnerExists(ctx context.Context, owner FileOwner) (bool, error) {
	if err := owner.Space.check(); err != nil {
		return false, err
	}
	var exists bool
	err := s.pool.QueryRow(ctx, `SELECT `+ownerExists+` FROM (SELECT $1::text AS space, $2::bigint AS owner_id) o`,
		string(owner.Space), owner.OwnerID).Scan(&exists)
	return exists, translate(err, "file owner")
}

// staleBatch is how many stale reservations one round releases.
const staleBatch = 500

// ReleaseStaleReservations releases the reservations of uploads that can
// no longer end: those of an incarnation whose lock no session holds (its
// process is dead, however recently it made them), and those without an
// incarnation made before before (made before migration 00019, or by a
// process without one, such as the one that ran before a restart). The
// uploads of live processes, on this node or another, are left alone.
// Each gives its quota back under its space's usage lock, as
// ReleaseUpload does. It returns them, so that the caller deletes their
// objects, which may be whole, partial or missing.
func (s *Store) ReleaseStaleReservations(ctx context.Context, before time.Time) ([]Reservation, error) {
	var released []Reservation
	for {
		rows, err := s.pool.Query(ctx, `
			WITH live AS MATERIALIZED (`+liveIncarnations+`)
			SELECT id, space, owner_id, path, size_bytes, replace, object_key, COALESCE(incarnation, 0)
			FROM file_reservations
			WHERE CASE WHEN incarnation IS NULL THEN created_at < $1 ELSE incarnation NOT IN (SELECT id FROM live) END
			ORDER BY id LIMIT $2`, before, staleBatch)
		if err != nil {
			return released, translate(err, "file reservations")
		}
		batch, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Reservation, error) {
			var r Reservation
			var space string
			err := row.Scan(&r.ID, &space, &r.OwnerID, &r.Path, &r.SizeBytes, &r.Replace, &r.ObjectKey, &r.Incarnation)
			r.Space = FileSpace(space)
			return r, err
		})
		if err != nil {
			return released, translate(err, "file reservations")
		}
		for _, r := range batch {
			if err := s.ReleaseUpload(ctx, r); err != nil {
				return released, fmt.Errorf("release stale reservation %d: %w", r.ID, err)
			}
			released = append(released, r)
		}
		if len(batch) < staleBatch {
			return released, nil
		}
	}
}

// LiveReservations counts the reservations of incarnations whose lock a
// session holds: uploads in flight of running processes, which the
// repair leaves alone.
func (s *Store) LiveReservations(ctx context.Context) (int, error) {
	var n int
	err := s.pool.QueryRow(ctx, `WITH live AS MATERIALIZED (`+liveIncarnations+`)
		SELECT count(*) FROM file_reservations WHERE incarnation IN (SELECT id FROM live)`).Scan(&n)
	return n, translate(err, "file reservations")
}

// Reserved tells whether a reservation writes to objectKey: an upload in
// flight, whose object or multipart upload is no leftover, or one that
// ReleaseStaleReservations has not released.
func (s *Store) Reserved(ctx context.Context, objectKey string) (bool, error) {
	var reserved bool
	err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM file_reservations WHERE object_key = $1)`, objectKey).Scan(&reserved)
	return reserved, translate(err, "file reservations")
}

// UsageCorrection is a space whose file_usage did not match its files and
// reservations, with what it said and what it says now.
type UsageCorrection struct {
	FileOwner
	Was, Now QuotaUsage
}

// usageOf is what a space's file_usage must say: its committed files plus
// what its pending reservations hold.
const usageOf = `
	SELECT (SELECT count(*) FROM files WHERE space = $1 AND owner_id = $2)
	     + (SELECT COALESCE(sum(files), 0) FROM file_reservations WHERE space = $1 AND owner_id = $2),
	       (SELECT COALESCE(sum(size_bytes), 0) FROM files WHERE space = $1 AND owner_id = $2)
	     + (SELECT COALESCE(sum(bytes), 0) FROM file_reservations WHERE space = $1 AND owner_id = $2)`

// RecountFileUsage sets every space's file_usage to what its files and
// pending reservations add up to, and returns the spaces it corrected.
// One query finds the spaces that disagree; each is then recounted and
// set under its usage lock, so an upload running meanwhile is counted
// exactly once.
func (s *Store) RecountFileUsage(ctx context.Context) ([]UsageCorrection, error) {
	rows, err := s.pool.Query(ctx, `
		WITH actual AS (
			SELECT space, owner_id, sum(files) AS files, sum(bytes) AS bytes FROM (
				SELECT space, owner_id, count(*) AS files, sum(size_bytes) AS bytes FROM files GROUP BY 1, 2
				UNION ALL
				SELECT space, owner_id, sum(files), sum(bytes) FROM file_reservations GROUP BY 1, 2) x
			GROUP BY 1, 2)
		SELECT COALESCE(u.space, a.space), COALESCE(u.owner_id, a.owner_id)
		FROM file_usage u FULL JOIN actual a ON a.space = u.space AND a.owner_id = u.owner_id
		WHERE COALESCE(u.files, 0) <> COALESCE(a.files, 0) OR COALESCE(u.space_bytes, 0) <> COALESCE(a.bytes, 0)
		ORDER BY 1, 2`)
	if err != nil {
		return nil, translate(err, "file usage")
	}
	owners, err := pgx.CollectRows(rows, scanFileOwner)
	if err != nil {
		return nil, translate(err, "file usage")
	}
	var fixed []UsageCorrection
	for _, o := range owners {
		c := UsageCorrection{FileOwner: o}
		err := s.tx(ctx, func(tx pgx.Tx) error {
			var err error
			if _, c.Was, err = lockUsage(ctx, tx, o.Space, o.OwnerID); err != nil {
				return err
			}
			if err := tx.QueryRow(ctx, usageOf, string(o.Space), o.OwnerID).Scan(&c.Now.Files, &c.Now.SpaceBytes); err != nil {
				return err
			}
			_, err = tx.Exec(ctx, `UPDATE file_usage SET files = $3, space_bytes = $4 WHERE space = $1 AND owner_id = $2`,
				string(o.Space), o.OwnerID, c.Now.Files, c.Now.SpaceBytes)
			return err
		})
		if fault.Is(err, fault.NotFound) {
			continue // the owner was deleted meanwhile, its rows with it
		}
		if err != nil {
			return fixed, fmt.Errorf("recount file usage of %s %d: %w", o.Space, o.OwnerID, translate(err, "file usage"))
		}
		if c.Was != c.Now {
			fixed = append(fixed, c)
		}
	}
	return fixed, nil
}

// ObjectInventory is a list of the object store's keys in a temporary
// table of one database session, compared there with the file rows and
// reservations: memory stays flat however many objects there are, and no
// comparison depends on the order the store lists them in. Add the keys,
// then ask; Close ends it.
type ObjectInventory struct {
	conn *pgxpool.Conn
	// began is when the inventory began, by the database's clock: see
	// rowsBefore.
	began    time.Time
	keys     []string
	modified []time.Time
	spaces   []*string
	owners   []*int64
	listed   int64
}

// inventoryBatch is how many keys one insert into the inventory carries.
const inventoryBatch = 1000

// NewObjectInventory starts an empty inventory on a connection of its own.
// Start it before listing the store: it notes when it began, so that a
// file committed after that, whose object the listing may have passed
// before it was stored, is never taken for a file without object.
func (s *Store) NewObjectInventory(ctx context.Context) (*ObjectInventory, error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("object inventory: %w", err)
	}
	// space and owner_id are NULL for a key bdp does not make.
	if _, err := conn.Exec(ctx, `
		DROP TABLE IF EXISTS pg_temp.object_inventory;
		CREATE TEMP TABLE object_inventory (
			key      text PRIMARY KEY,
			modified timestamptz NOT NULL,
			space    text,
			owner_id bigint)`); err != nil {
		conn.Release()
		return nil, fmt.Errorf("object inventory: %w", err)
	}
	inv := &ObjectInventory{conn: conn}
	if err := conn.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&inv.began); err != nil {
		inv.Close()
		return nil, fmt.Errorf("object inventory: %w", err)
	}
	return inv, nil
}

// rowsBefore is the earlier of before and when the inventory began. A
// file row is written (its updated_at: the start of the commit's
// transaction, by the database's clock) only once its object is stored,
// so the object of a row written before the inventory began was in the
// store before the listing started, and is listed if it exists. A row
// written later, by another node or this process, may have an object
// that the listing missed.
func (inv *ObjectInventory) rowsBefore(before time.Time) time.Time {
	return minTime(before, inv.began)
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// Close drops the inventory and gives its connection back.
func (inv *ObjectInventory) Close() {
	if inv.conn == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := inv.conn.Exec(ctx, `DROP TABLE IF EXISTS pg_temp.object_inventory`); err != nil {
		// The table would outlive this inventory on a pooled connection.
		_ = inv.conn.Hijack().Close(ctx)
	} else {
		inv.conn.Release()
	}
	inv.conn = nil
}

// Listed is how many keys were added.
func (inv *ObjectInventory) Listed() int64 { return inv.listed }

// Add notes an object of the store, last modified at modified.
func (inv *ObjectInventory) Add(ctx context.Context, key string, modified time.Time) error {
	var space *string
	var owner *int64
	if o, ok := ownerOfKey(key); ok {
		sp, id := string(o.Space), o.OwnerID
		space, owner = &sp, &id
	}
	inv.keys = append(inv.keys, key)
	inv.modified = append(inv.modified, modified)
	inv.spaces = append(inv.spaces, space)
	inv.owners = append(inv.owners, owner)
	inv.listed++
	if len(inv.keys) >= inventoryBatch {
		return inv.flush(ctx)
	}
	return nil
}

func (inv *ObjectInventory) flush(ctx context.Context) error {
	if len(inv.keys) == 0 {
		return nil
	}
	// A key listed twice (a store that lists while it changes) counts once.
	_, err := inv.conn.Exec(ctx, `INSERT INTO object_inventory
		SELECT * FROM unnest($1::text[], $2::timestamptz[], $3::text[], $4::bigint[]) ON CONFLICT DO NOTHING`,
		inv.keys, inv.modified, inv.spaces, inv.owners)
	inv.keys, inv.modified, inv.spaces, inv.owners = inv.keys[:0], inv.modified[:0], inv.spaces[:0], inv.owners[:0]
	if err != nil {
		return fmt.Errorf("object inventory: %w", err)
	}
	return nil
}

// GoneOwners lists the spaces that have objects but whose company or
// project no longer exists (deleted while its objects stayed, e.g. bdp
// stopped before it deleted them).
func (inv *ObjectInventory) GoneOwners(ctx context.Context) ([]FileOwner, error) {
	if err := inv.flush(ctx); err != nil {
		return nil, err
	}
	rows, err := inv.conn.Query(ctx, `
		SELECT o.space, o.owner_id FROM (SELECT DISTINCT space, owner_id FROM object_inventory WHERE owner_id IS NOT NULL) o
		WHERE NOT (`+ownerExists+`) ORDER BY 1, 2`)
	if err != nil {
		return nil, fmt.Errorf("object inventory: gone owners: %w", err)
	}
	owners, err := pgx.CollectRows(rows, scanFileOwner)
	if err != nil {
		return nil, fmt.Errorf("object inventory: gone owners: %w", err)
	}
	return owners, nil
}

// Orphans calls each for every listed object modified before before that
// no file row and no reservation refers to: the bytes of an upload that
// crashed before its commit, or of a file deleted while its object stayed.
// Objects of owners that no longer exist are left to GoneOwners. each
// must not use the inventory. This holds with other nodes uploading: an
// upload's reservation commits before its first byte reaches the store,
// and its file row replaces the reservation in one transaction, so an
// object listed earlier that no row refers to in this query's snapshot
// belongs to no upload in flight anywhere (keys are never reused).
func (inv *ObjectInventory) Orphans(ctx context.Context, before time.Time, each func(key string) error) error {
	if err := inv.flush(ctx); err != nil {
		return err
	}
	rows, err := inv.conn.Query(ctx, `
		SELECT o.key FROM object_inventory o
		WHERE o.modified < $1
		  AND NOT EXISTS (SELECT 1 FROM files f WHERE f.object_key = o.key)
		  AND NOT EXISTS (SELECT 1 FROM file_reservations r WHERE r.object_key = o.key)
		  AND (o.owner_id IS NULL OR `+ownerExists+`)
		ORDER BY o.key COLLATE "C"`, before)
	if err != nil {
		return fmt.Errorf("object inventory: orphans: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var key string
		if err := rows.Scan(&key); err != nil {
			return fmt.Errorf("object inventory: orphans: %w", err)
		}
		if err := each(key); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("object inventory: orphans: %w", err)
	}
	return nil
}

// missingWhere picks the file rows of a space, last written before $3,
// whose object the inventory does not hold.
const missingWhere = `space = $1 AND owner_id = $2 AND updated_at < $3
	AND NOT EXISTS (SELECT 1 FROM object_inventory o WHERE o.key = files.object_key)`

// FilesWithoutObject counts the file rows last written before before, and
// before the inventory began, whose object the inventory does not hold.
func (inv *ObjectInventory) FilesWithoutObject(ctx context.Context, before time.Time) (int64, error) {
	if err := inv.flush(ctx); err != nil {
		return 0, err
	}
	before = inv.rowsBefore(before)
	var n int64
	err := inv.conn.QueryRow(ctx, `SELECT count(*) FROM files WHERE updated_at < $1
		AND NOT EXISTS (SELECT 1 FROM object_inventory o WHERE o.key = files.object_key)`, before).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("object inventory: files without object: %w", err)
	}
	return n, nil
}

// RemoveFilesWithoutObject deletes the file rows last written before
// before, and before the inventory began, whose object the inventory does
// not hold (the store lost it, or a row outlived its object) and gives
// their quota back, space by space under the usage lock. each is called
// with every file removed; it must not use the inventory. The inventory
// must hold the whole listing of the store: a key missing from it removes
// its file.
func (inv *ObjectInventory) RemoveFilesWithoutObject(ctx context.Context, before time.Time, each func(File)) (int64, error) {
	if err := inv.flush(ctx); err != nil {
		return 0, err
	}
	before = inv.rowsBefore(before)
	rows, err := inv.conn.Query(ctx, `SELECT DISTINCT space, owner_id FROM files WHERE updated_at < $1
		AND NOT EXISTS (SELECT 1 FROM object_inventory o WHERE o.key = files.object_key) ORDER BY 1, 2`, before)
	if err != nil {
		return 0, fmt.Errorf("object inventory: files without object: %w", err)
	}
	owners, err := pgx.CollectRows(rows, scanFileOwner)
	if err != nil {
		return 0, fmt.Errorf("object inventory: files without object: %w", err)
	}
	var removed int64
	for _, o := range owners {
		var gone []File
		err := pgx.BeginFunc(ctx, inv.conn, func(tx pgx.Tx) error {
			if _, _, err := lockUsage(ctx, tx, o.Space, o.OwnerID); err != nil {
				return err
			}
			rows, err := tx.Query(ctx, `DELETE FROM files WHERE `+missingWhere+` RETURNING `+fileColumns,
				string(o.Space), o.OwnerID, before)
			if err != nil {
				return err
			}
			gone, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (File, error) { return scanFile(row, o.Space, o.OwnerID) })
			if err != nil {
				return err
			}
			var bytes int64
			for _, f := range gone {
				bytes += f.SizeBytes
			}
			_, err = tx.Exec(ctx, `UPDATE file_usage SET files = files - $3, space_bytes = space_bytes - $4
				WHERE space = $1 AND owner_id = $2`, string(o.Space), o.OwnerID, len(gone), bytes)
			return err
		})
		if fault.Is(err, fault.NotFound) {
			continue // the owner was deleted meanwhile, its rows with it
		}
		if err != nil {
			return removed, fmt.Errorf("remove files without object of %s %d: %w", o.Space, o.OwnerID, err)
		}
		for _, f := range gone {
			each(f)
		}
		removed += int64(len(gone))
	}
	return removed, nil
}
