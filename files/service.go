package files

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/openbdp/bdp/fault"
	"github.com/openbdp/bdp/store"
)

// The validity of a download link (api.md 4.9): 10 minutes unless asked,
// from 1 second to 7 days, the longest a presigned S3 link may live.
const (
	DefaultLinkExpiry = 10 * time.Minute
	MinLinkExpiry     = time.Second
	MaxLinkExpiry     = 7 * 24 * time.Hour
)

// ExactSizeUpTo is how much of an upload of unknown size is read before
// its quota is reserved. A file that ends within it is reserved at its
// exact size and stored with one PUT of known length; a longer one
// reserves an upper bound and is streamed. It bounds what an upload holds
// in memory.
const ExactSizeUpTo = 8 << 20

// UploadSize is what is known of an upload's size before its bytes move.
type UploadSize struct {
	// Bytes is the file's size when Exact; otherwise an upper bound of it
	// (the request's Content-Length), or -1 when nothing is known.
	Bytes int64
	// Exact says the body is exactly Bytes long: it is reserved at that
	// size and stored with one PUT (up to MaxPutBytes), without reading
	// ahead. The body must fail, rather than end, when it is not: a short
	// body, and a body that finds itself wrong before its last byte, leave
	// nothing behind.
	Exact bool
}

// ExactSize is the size of a body known to be n bytes long.
func ExactSize(n int64) UploadSize { return UploadSize{Bytes: n, Exact: true} }

// AtMost is the size of a body of at most n bytes (-1: unknown).
func AtMost(n int64) UploadSize { return UploadSize{Bytes: max(n, -1)} }

// undoTimeout bounds the clean-up after a failed upload or a replace,
// which runs even when the request's context has ended.
const undoTimeout = 30 * time.Second

// Service is the document store of companies and projects: file rows and
// quotas in PostgreSQL (store), bytes in the object store (Objects). The
// quota is reserved before any byte moves, so a failed upload leaves no
// row, no object and no used quota behind; what a crash leaves is
// repaired at the next start (Repair).
type Service struct {
	store   *store.Store
	objects *Objects
	log     *slog.Logger
	// started is when the Service was made, at the process's start:
	// Repair leaves the reservations without incarnation and the objects
	// of uploads since then alone.
	started time.Time
	// inc, when set, is recorded in every upload's reservation, so that
	// no other node's Repair releases it while this process lives.
	inc *store.Incarnation
}

// Option configures a Service.
type Option func(*Service)

// WithIncarnation records inc, this process's incarnation, in every
// upload the Service begins. Every process uploading to a database and
// store that others upload to too (cluster mode) needs one; without, a
// starting node's Repair releases the uploads begun before its start.
// inc must stay open while uploads run (close it after HTTP has drained).
func WithIncarnation(inc *store.Incarnation) Option {
	return func(s *Service) { s.inc = inc }
}

// NewService makes the document store over st and obj.
func NewService(st *store.Store, obj *Objects, log *slog.Logger, opts ...Option) *Service {
	s := &Service{store: st, objects: obj, log: log, started: time.Now()}
	for _, o := range opts {
		o(s)
	}
	return s
}

// UploadPath is the path of a file named name uploaded into folder (""
// for the top level). name must be one path segment: a client's file name
// never picks a folder of its own. Either failing NormalizePath answers
// Invalid naming which one.
func UploadPath(folder, name string) (string, error) {
	switch {
	case name == "":
		return "", fault.Invalidf("invalid file name: the form field file has no filename")
	case strings.Contains(name, "/"):
		return "", fault.Invalidf("invalid file name: it must not contain /; the query parameter folder says where the file goes")
	}
	if _, err := NormalizePath(name); err != nil {
		return "", fault.Wrap(fault.Invalid, err, "invalid file name: "+strings.TrimPrefix(fault.Message(err), "invalid path: "))
	}
	if err := CheckFolder(folder); err != nil || folder == "" {
		return name, err
	}
	return NormalizePath(folder + "/" + name)
}

// CheckFolder checks the folder of an upload: "" (the top level) or a
// path that NormalizePath takes as it is.
func CheckFolder(folder string) error {
	if folder == "" {
		return nil
	}
	if _, err := NormalizePath(folder); err != nil {
		return fault.Wrap(fault.Invalid, err, "invalid folder: "+strings.TrimPrefix(fault.Message(err), "invalid path: "))
	}
	return nil
}

// Upload stores the file read from body at folder/name: a new file, or
// with replace the new content of an existing one. size says what is
// known of body's length: exactly (one pass: reserved at that size, one
// PUT), or an upper bound or nothing (the first ExactSizeUpTo bytes read
// ahead, see ExactSizeUpTo). Errors reading body are returned as they
// come, so they should carry a fault kind. Over the per-file limit, the
// file count or the space left it answers TooLarge naming the limit; a new
// file where one exists Invalid, a replace of a missing file NotFound, and
// a second upload to a path in flight Conflict.
func (s *Service) Upload(ctx context.Context, space store.FileSpace, ownerID int64, folder, name string, body io.Reader,
	size UploadSize, replace bool) (store.File, error) {
	path, err := UploadPath(folder, name)
	if err != nil {
		return store.File{}, err
	}
	if size.Exact {
		r, err := s.store.ReserveUploadAs(ctx, s.inc, space, ownerID, path, size.Bytes, replace)
		if err != nil {
			return store.File{}, err
		}
		wrong := fault.Invalidf("the file is not the %d bytes announced; nothing was stored", size.Bytes)
		put := size.Bytes
		if put > MaxPutBytes {
			put = -1 // too long for one PUT: streamed in parts, still at its exact reservation
		}
		return s.storeBytes(ctx, r, &limitedReader{r: body, remaining: size.Bytes, tooLarge: wrong, short: wrong}, put)
	}
	first, err := readUpTo(body, ExactSizeUpTo+1)
	if err != nil {
		return store.File{}, err
	}
	if len(first) <= ExactSizeUpTo {
		size := int64(len(first))
		r, err := s.store.ReserveUploadAs(ctx, s.inc, space, ownerID, path, size, replace)
		if err != nil {
			return store.File{}, err
		}
		return s.storeBytes(ctx, r, &limitedReader{r: bytes.NewReader(first), remaining: size}, size)
	}

	// Longer than ExactSizeUpTo: the size is known at the end only.
	q, err := s.store.Quota(ctx, space, ownerID)
	if err != nil {
		return store.File{}, err
	}
	limit := q.Limits.FileSizeBytes
	tooLarge := fault.TooLargef("the file is over the per-file limit of %d bytes", limit)
	if int64(len(first)) > limit {
		return store.File{}, tooLarge
	}
	bound := limit
	if size.Bytes > int64(len(first)) && size.Bytes < limit {
		bound = size.Bytes
	}
	r, err := s.store.ReserveUploadAs(ctx, s.inc, space, ownerID, path, bound, replace)
	if err != nil {
		if fault.Is(err, fault.TooLarge) {
			err = fault.Wrap(fault.TooLarge, err, fmt.Sprintf("%s (a file over %d bytes holds the request's Content-Length, "+
				"at most the per-file limit, until it has arrived)", fault.Message(err), ExactSizeUpTo))
		}
		return store.File{}, err
	}
	return s.storeBytes(ctx, r, &limitedReader{r: io.MultiReader(bytes.NewReader(first), body), remaining: bound, tooLarge: tooLarge}, -1)
}

// storeBytes puts the bytes of a reserved upload into the object store
// (size -1: unknown, streamed) and commits the file at the size stored.
// Any failure gives the reservation back and deletes the object.
func (s *Service) storeBytes(ctx context.Context, r store.Reservation, body *limitedReader, size int64) (store.File, error) {
	n, err := s.objects.Put(ctx, r.ObjectKey, body, size)
	if body.err != nil {
		err = body.err // the client's fault, whatever the object store made of it
	}
	if err == nil && n > r.SizeBytes {
		err = fmt.Errorf("the object store took %d bytes, %d were reserved", n, r.SizeBytes)
	}
	if err != nil {
		s.abandon(ctx, r)
		if fault.KindOf(err) == fault.Internal {
			s.log.Warn("the object store failed an upload", slog.String("object_key", r.ObjectKey), slog.Any("error", err))
			return store.File{}, fault.Wrap(fault.Unavailable, err, "the object store failed to take the file; nothing was stored, try again")
		}
		return store.File{}, err
	}
	r.SizeBytes = n
	f, replaced, err := s.store.CommitUpload(ctx, r)
	if err != nil {
		s.abandon(ctx, r)
		return store.File{}, err
	}
	if replaced != "" {
		s.deleteObject(ctx, replaced, "replaced")
	}
	return f, nil
}

// abandon undoes a failed upload: its quota back, its object (or the part
// of it the store kept) gone. A failure here is logged; the start-up
// repair removes what is left.
func (s *Service) abandon(ctx context.Context, r store.Reservation) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), undoTimeout)
	defer cancel()
	if err := s.store.ReleaseUpload(ctx, r); err != nil {
		s.log.Warn("releasing the quota of a failed upload", slog.String("object_key", r.ObjectKey), slog.Any("error", err))
	}
	s.deleteObject(ctx, r.ObjectKey, "failed upload")
}

// deleteObject deletes an object no row refers to any more; a failure is
// logged, and the start-up repair deletes it.
func (s *Service) deleteObject(ctx context.Context, key, why string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), undoTimeout)
	defer cancel()
	if err := s.objects.Delete(ctx, key); err != nil {
		s.log.Warn("deleting the object of a "+why+" file; the next start's repair deletes it",
			slog.String("object_key", key), slog.Any("error", err))
	}
}

// List pages through the files of a space sorted by path; search keeps the
// paths containing it, ignoring case (store.ListFiles). It returns the
// page and the number of files that match.
func (s *Service) List(ctx context.Context, space store.FileSpace, ownerID int64, search string, page, perPage int) ([]store.File, int64, error) {
	return s.store.ListFiles(ctx, space, ownerID, search, page, perPage)
}

// Download is a file with a presigned link to its bytes.
type Download struct {
	store.File
	URL        string
	ValidUntil time.Time
}

// Link returns the file at path with a presigned download link, valid for
// expiry (MinLinkExpiry to MaxLinkExpiry). The object store checks the
// signature and the expiry, not bdp.
func (s *Service) Link(ctx context.Context, space store.FileSpace, ownerID int64, path string, expiry time.Duration) (Download, error) {
	if expiry < MinLinkExpiry || expiry > MaxLinkExpiry {
		return Download{}, fault.Invalidf("invalid expiry %s: from %s to %s", expiry, MinLinkExpiry, MaxLinkExpiry)
	}
	path, err := NormalizePath(path)
	if err != nil {
		return Download{}, err
	}
	f, err := s.store.GetFile(ctx, space, ownerID, path)
	if err != nil {
		return Download{}, err
	}
	validUntil := time.Now().Add(expiry)
	url, err := s.objects.Link(ctx, f.ObjectKey, expiry, f.Path[strings.LastIndexByte(f.Path, '/')+1:])
	if err != nil {
		return Download{}, fmt.Errorf("presigning the link of %s: %w", f.ObjectKey, err)
	}
	return Download{File: f, URL: url, ValidUntil: validUntil}, nil
}

// Delete removes the file at path and gives its quota back. Its object is
// deleted after the row; should that fail, the start-up repair deletes it.
func (s *Service) Delete(ctx context.Context, space store.FileSpace, ownerID int64, path string) (store.File, error) {
	path, err := NormalizePath(path)
	if err != nil {
		return store.File{}, err
	}
	f, err := s.store.DeleteFile(ctx, space, ownerID, path)
	if err != nil {
		return store.File{}, err
	}
	s.deleteObject(ctx, f.ObjectKey, "deleted")
	return f, nil
}

// Quota returns the limits, use and what is left of a space.
func (s *Service) Quota(ctx context.Context, space store.FileSpace, ownerID int64) (store.FileQuota, error) {
	return s.store.Quota(ctx, space, ownerID)
}

// readUpTo reads r to its end or until it has limit bytes. The buffer
// grows with what arrives, so that a small file holds little memory and a
// large one at most about limit bytes.
func readUpTo(r io.Reader, limit int) ([]byte, error) {
	buf := make([]byte, 0, min(64<<10, limit))
	for {
		room := min(cap(buf), limit) // Grow may round the capacity up
		if len(buf) == room {
			if room == limit {
				return buf, nil
			}
			buf = slices.Grow(buf, min(2*cap(buf), limit)-len(buf))
			room = min(cap(buf), limit)
		}
		n, err := r.Read(buf[len(buf):room])
		buf = buf[:len(buf)+n]
		if errors.Is(err, io.EOF) {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// limitedReader is an upload's bytes on their way to the object store:
// more than remaining answers tooLarge and, when short is set, fewer
// answer short instead of io.EOF. It keeps the first error of the body,
// so that the upload answers it rather than the object store's report of
// the failed transfer.
type limitedReader struct {
	r         io.Reader
	remaining int64
	tooLarge  error
	short     error
	err       error
}

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.err != nil {
		return 0, l.err
	}
	if int64(len(p)) > l.remaining+1 {
		p = p[:l.remaining+1]
	}
	n, err := l.r.Read(p)
	if int64(n) > l.remaining {
		n, l.remaining, l.err = int(l.remaining), 0, l.tooLarge
		return n, l.err
	}
	l.remaining -= int64(n)
	if errors.Is(err, io.EOF) && l.remaining > 0 && l.short != nil {
		err = l.short
	}
	if err != nil && !errors.Is(err, io.EOF) {
		l.err = err
	}
	return n, err
}
