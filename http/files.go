package http

import (
	"bytes"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/openbdp/bdp/fault"
	"github.com/openbdp/bdp/files"
	"github.com/openbdp/bdp/store"
)

// The document store (api.md 2.19, 4.9; issue 12): the same six routes in
// the company space (/v2/company/..., a company role's grant) and in each
// project's space (/v2/project/{project_id}/..., the project's grant).
// The same path in two spaces names two files. TagAuths concern
// datapoints and play no part here. The work is files.Service's; these
// handlers read the parameters and the streamed upload.

const filesDoc = "Files live in the company space (/v2/company/...) or in a project's space (/v2/project/{project_id}/...); " +
	"the same path in two spaces names two files. A path is segments joined by /, at most 1024 bytes, case-sensitive; " +
	"a leading /, empty segments (//, a trailing /), . and .. segments, backslashes and control characters answer 400, " +
	"never silently changed. Quotas per space (files, space_bytes, file_size_bytes; set by the operator, by default 1000 files, " +
	"1 GiB and 100 MiB per file) are reserved before the bytes move, so concurrent uploads never overrun them."

const fileUploadDoc = filesDoc + " The file is the multipart form field file; its filename is the file's name, one path segment " +
	"(no /), stored under folder. The upload is streamed to the object store. With a Content-Length and the file as the form's " +
	"first part (as curl -F, browsers and common HTTP libraries send one file), a file over 8 MiB is stored in one pass: its size, " +
	"the Content-Length less the form's framing, is reserved and sent as one PUT, and the form must end right after the file " +
	"(\"\\r\\n--\" + boundary + \"--\\r\\n\", no field after it), else 400 and nothing is stored. Otherwise a file of up to " +
	"8 MiB is reserved at its size; a longer one holds the request's Content-Length (at most the per-file limit) until it has " +
	"arrived, then its real size. " +
	"The request body may be at most BDP_IMPORT_LIMIT (default 2 GiB). A failed upload leaves no file, no object and no used quota."

// fileParams are the query parameters of the file routes.
var (
	folderParam = param{Name: "folder", Type: "string", MaxLength: files.MaxPathBytes,
		Doc: "the folder the file goes into, e.g. reports/2026; folders exist through their files, so a new one is created by its first file"}
	pathParam   = param{Name: "path", Type: "string", Required: true, MaxLength: files.MaxPathBytes, Doc: "the file's path, e.g. reports/2026/audit.pdf"}
	expiryParam = param{Name: "expiry", Type: "string", MaxLength: 64, Doc: "how long the link is valid: a whole number followed by s, m, h or d " +
		"(e.g. 30s, 10m, 1h, 7d), or a Go duration such as 1h30m; default 10m, from 1s to 7d"}
)

// fileForm documents the upload's multipart body.
type fileForm struct{}

func (fileForm) multipartSchema() map[string]any {
	return map[string]any{"type": "object", "required": []string{"file"}, "properties": map[string]any{
		"file": map[string]any{"type": "string", "format": "binary", "description": "the file; the part's filename is the file's name"},
	}}
}

// fileResource is the resource of the upload, replace and delete answers.
type fileResource struct {
	Path string `json:"path"`
}

// fileItem is a file in a list (api.md 2.19).
type fileItem struct {
	Path         string    `json:"path"`
	LastModified time.Time `json:"last_modified"`
	SizeBytes    int64     `json:"size_bytes"`
}

type fileList struct {
	Items []fileItem `json:"items" doc:"sorted by path, in byte order of its UTF-8"`
	Meta  pagination `json:"meta"`
}

// fileLink is the download answer: aedifion's File with the link.
type fileLink struct {
	DownloadLink string    `json:"download_link" doc:"a presigned GET on the object store; after valid_until it answers 403 with an XML AccessDenied body"`
	Path         string    `json:"path"`
	ValidUntil   time.Time `json:"valid_until"`
	SizeBytes    int64     `json:"size_bytes"`
	LastModified time.Time `json:"last_modified"`
}

// fileQuotas is the quota answer: one entry per service, files the only one.
type fileQuotas struct {
	Files store.FileQuota `json:"files"`
}

// fileRoutes declares the document store's routes in both spaces.
func (s *Server) fileRoutes() []*route {
	var out []*route
	for _, sp := range []struct{ base, tag string }{{"/v2/company", store.TagCompany}, {"/v2/project/{project_id}", store.TagProject}} {
		unavailable := "the document store does not run on this node"
		out = append(out,
			&route{Method: "GET", Path: sp.base + "/quota", Tag: sp.tag, Summary: "The space's file quota: limits, use (uploads in flight included) and what is left",
				Doc:   filesDoc,
				Query: []param{{Name: "service", Type: "string", Doc: "files, the only service with a quota here (optional)"}},
				Resp:  fileQuotas{}, Handle: s.fileQuota, Errors: map[int]string{400: "service other than files", 503: unavailable}},
			&route{Method: "POST", Path: sp.base + "/file", Tag: sp.tag, Op: "create", Status: fiber.StatusCreated,
				Summary: "Upload a new file (multipart form field file) into folder; 400 when a file exists at its path",
				Doc:     fileUploadDoc, Query: []param{folderParam}, RefusedQuery: []string{"tags"}, Body: fileForm{}, StreamBody: true,
				Resp: envelopeOf[fileResource]{}, Handle: s.uploadFile(false),
				Errors: map[int]string{400: "a file exists at the path; no form field file; a bad folder or file name; not a multipart form; " +
					"a form stored in one pass that does not end right after the file",
					409: "another upload to the same path is in progress",
					413: "over the per-file limit, the file count limit or the space left (the message names the limit), or over BDP_IMPORT_LIMIT",
					503: unavailable + ", or the object store failed (nothing was stored)"}},
			&route{Method: "PUT", Path: sp.base + "/file", Tag: sp.tag, Op: "update", Status: fiber.StatusCreated,
				Summary: "Replace an existing file (multipart form field file, named as the file) in folder; 404 when the folder or the file is missing",
				Doc:     fileUploadDoc + " The quota counts only the difference to the replaced file; the old content stays readable until the new one is stored.",
				Query: []param{{Name: "folder", Type: "string", Required: true, MaxLength: files.MaxPathBytes,
					Doc: "the folder of the file to replace; present but empty (folder=) for a file at the top level"}},
				Body: fileForm{}, StreamBody: true, Resp: envelopeOf[fileResource]{}, Handle: s.uploadFile(true),
				Errors: map[int]string{400: "no folder parameter; no form field file; a bad folder or file name; not a multipart form; " +
					"a form stored in one pass that does not end right after the file",
					404: "no file at the path", 409: "another upload to the same path is in progress",
					413: "the growth over the per-file limit or the space left (the message names the limit), or over BDP_IMPORT_LIMIT",
					503: unavailable + ", or the object store failed (the old content stays)"}},
			&route{Method: "GET", Path: sp.base + "/files", Tag: sp.tag, Summary: "List the space's files, sorted by path",
				Doc: filesDoc,
				Query: []param{{Name: "search", Type: "string", MaxLength: maxTextLen, Doc: "only paths containing this text, ignoring case"},
					{Name: "page", Type: "integer", Doc: "default 1"}, {Name: "per_page", Type: "integer", Doc: "default 100, at most 1000"}},
				Resp: fileList{}, Handle: s.listFiles, Errors: map[int]string{503: unavailable}},
			&route{Method: "GET", Path: sp.base + "/file", Tag: sp.tag, Summary: "A download link to a file, valid for expiry (default 10m, at most 7d)",
				Doc: filesDoc + " The link points at the object store (BDP_S3_PUBLIC_URL when set), which checks its signature and expiry: " +
					"a changed or expired link answers 403 there, with an XML body (code AccessDenied once expired), not JSON.",
				Query: []param{pathParam, expiryParam}, Resp: fileLink{}, Handle: s.fileLink,
				Errors: map[int]string{400: "no path, a bad path, or an expiry that does not parse or lies outside 1s to 7d", 404: "no file at the path", 503: unavailable}},
			&route{Method: "DELETE", Path: sp.base + "/file", Tag: sp.tag, Op: "delete", Summary: "Delete a file; its quota is given back",
				Doc: filesDoc, Query: []param{pathParam}, Resp: envelopeOf[fileResource]{}, Handle: s.deleteFile,
				Errors: map[int]string{404: "no file at the path", 409: "an upload to the path is in progress", 503: unavailable}},
		)
	}
	return out
}

// fileSpace is the space a file route addresses.
func fileSpace(cl *call) (store.FileSpace, int64) {
	if cl.ProjectID != 0 {
		return store.FileSpaceProject, cl.ProjectID
	}
	return store.FileSpaceCompany, cl.Perms.CompanyID
}

func (s *Server) filesService() (*files.Service, error) {
	if s.files == nil {
		return nil, fault.Wrap(fault.Unavailable, nil, "the document store does not run on this node")
	}
	return s.files, nil
}

func (s *Server) fileQuota(c *fiber.Ctx, cl *call) (any, error) {
	fs, err := s.filesService()
	if err != nil {
		return nil, err
	}
	if svc := c.Query("service"); svc != "" && svc != "files" {
		return nil, fault.Invalidf("service must be files, the only service with a quota here, got %q", fault.Clip(svc))
	}
	space, owner := fileSpace(cl)
	q, err := fs.Quota(c.UserContext(), space, owner)
	if err != nil {
		return nil, err
	}
	return fileQuotas{Files: q}, nil
}

// uploadFile is POST (a new file) and, with replace, PUT (a new content).
// The body streams as the CSV import's does (importBody): read as it
// arrives, the file part handed to the service as a reader, and whatever
// is left read after the answer is decided, so that every client gets it.
func (s *Server) uploadFile(replace bool) handlerFunc {
	return func(c *fiber.Ctx, cl *call) (any, error) {
		body := s.importBody(c)
		body.tooLarge = fault.TooLargef("the request body is larger than the upload limit of %d bytes (BDP_IMPORT_LIMIT)", s.cfg.ImportLimit)
		drain := int64(refusedBodyDrain)
		defer func() { body.settle(c, drain) }()
		fs, err := s.filesService()
		if err != nil {
			return nil, err
		}
		folder := c.Query("folder")
		if replace && !c.Context().QueryArgs().Has("folder") {
			return nil, fault.Invalidf("folder is required: the folder of the file to replace (folder= for the top level)")
		}
		if err := files.CheckFolder(folder); err != nil {
			return nil, err
		}
		if err := body.checkHeaders(c, s.cfg.ImportLimit, "uploads"); err != nil {
			return nil, err
		}
		size := int64(c.Request().Header.ContentLength()) // -1 chunked, -2 none
		space, owner := fileSpace(cl)
		file, name, fileSize, err := formUpload(c, body, size)
		if err != nil {
			return nil, err
		}
		drain = int64(s.cfg.ImportLimit) // a started upload is read to its end, so that every client sees the answer
		f, err := fs.Upload(c.UserContext(), space, owner, folder, name, file, fileSize, replace)
		if err != nil {
			return nil, err
		}
		op := "create"
		if replace {
			op = "update"
		}
		return ok(op, fileResource{Path: f.Path}), nil
	}
}

// formUpload finds the form field file in the multipart body of
// contentLength bytes (-1 or -2: unknown) and returns its bytes, its
// filename as sent and what is known of its size: exact when the file is
// the form's first part and over files.ExactSizeUpTo (fileform.go),
// otherwise at most the Content-Length.
func formUpload(c *fiber.Ctx, body io.Reader, contentLength int64) (io.Reader, string, files.UploadSize, error) {
	mt, params, err := mime.ParseMediaType(c.Get(fiber.HeaderContentType))
	boundary := params["boundary"]
	if err != nil || mt != fiber.MIMEMultipartForm || boundary == "" {
		return nil, "", files.UploadSize{}, fault.Invalidf("the body must be multipart/form-data with the file in the form field file")
	}
	head, err := readFormHead(body, boundary)
	if err != nil {
		return nil, "", files.UploadSize{}, err
	}
	if size := contentLength - int64(head.fileAt) - int64(len("\r\n--"+boundary+"--\r\n")); head.file && size > files.ExactSizeUpTo {
		file := newFormFile(io.MultiReader(bytes.NewReader(head.buf[head.fileAt:]), body), size, boundary)
		return file, head.filename, files.ExactSize(size), nil
	}
	part, name, err := uploadPart(multipart.NewReader(io.MultiReader(bytes.NewReader(head.buf), body), boundary))
	if err != nil {
		return nil, "", files.UploadSize{}, err
	}
	return faultReader{part}, name, files.AtMost(contentLength), nil
}

// uploadPart finds the form field file in a multipart body and returns it
// with its filename as sent: multipart.Part.FileName would cut a name
// such as a/b or ../b to its last element and store a file under a name
// the client did not send.
func uploadPart(mr *multipart.Reader) (*multipart.Part, string, error) {
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return nil, "", fault.Invalidf("the form field file is required")
		}
		if err != nil {
			return nil, "", uploadError(err)
		}
		if part.FormName() != "file" {
			continue
		}
		_, disposition, err := mime.ParseMediaType(part.Header.Get("Content-Disposition"))
		if err != nil {
			return nil, "", fault.Invalidf("the form field file has a malformed Content-Disposition")
		}
		return part, disposition["filename"], nil
	}
}

// faultReader gives the errors of reading an upload their fault kinds
// (uploadError): they are the client's, not the store's.
type faultReader struct{ r io.Reader }

func (f faultReader) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		err = uploadError(err)
	}
	return n, err
}

func (s *Server) listFiles(c *fiber.Ctx, cl *call) (any, error) {
	fs, err := s.filesService()
	if err != nil {
		return nil, err
	}
	page, perPage, err := pageParams(c)
	if err != nil {
		return nil, err
	}
	space, owner := fileSpace(cl)
	list, total, err := fs.List(c.UserContext(), space, owner, c.Query("search"), page, perPage)
	if err != nil {
		return nil, err
	}
	items := make([]fileItem, len(list))
	for i, f := range list {
		items[i] = fileItem{Path: f.Path, LastModified: f.UpdatedAt.UTC(), SizeBytes: f.SizeBytes}
	}
	return fileList{Items: items, Meta: pageMeta(page, perPage, int(total))}, nil
}

func (s *Server) fileLink(c *fiber.Ctx, cl *call) (any, error) {
	fs, err := s.filesService()
	if err != nil {
		return nil, err
	}
	path, err := filePathParam(c)
	if err != nil {
		return nil, err
	}
	expiry, err := linkExpiry(c.Query("expiry"))
	if err != nil {
		return nil, err
	}
	space, owner := fileSpace(cl)
	d, err := fs.Link(c.UserContext(), space, owner, path, expiry)
	if err != nil {
		return nil, err
	}
	return fileLink{DownloadLink: d.URL, Path: d.Path, ValidUntil: d.ValidUntil.UTC(), SizeBytes: d.SizeBytes, LastModified: d.UpdatedAt.UTC()}, nil
}

func (s *Server) deleteFile(c *fiber.Ctx, cl *call) (any, error) {
	fs, err := s.filesService()
	if err != nil {
		return nil, err
	}
	path, err := filePathParam(c)
	if err != nil {
		return nil, err
	}
	space, owner := fileSpace(cl)
	f, err := fs.Delete(c.UserContext(), space, owner, path)
	if err != nil {
		return nil, err
	}
	return ok("delete", fileResource{Path: f.Path}), nil
}

func filePathParam(c *fiber.Ctx) (string, error) {
	path := c.Query("path")
	if path == "" {
		return "", fault.Invalidf("path is required: the file's path, e.g. reports/audit.pdf")
	}
	return path, nil
}

// expiryUnits are the units of aedifion's expiry form: a whole number
// and one letter.
var expiryUnits = map[byte]time.Duration{'s': time.Second, 'm': time.Minute, 'h': time.Hour, 'd': 24 * time.Hour}

// linkExpiry reads expiry: aedifion's form (30s, 10m, 1h, 7d) or a Go
// duration (1h30m, 90s), from files.MinLinkExpiry to files.MaxLinkExpiry;
// "" is files.DefaultLinkExpiry.
func linkExpiry(raw string) (time.Duration, error) {
	if raw == "" {
		return files.DefaultLinkExpiry, nil
	}
	bad := fault.Invalidf("expiry must be a whole number followed by s, m, h or d (e.g. 10m, 7d), or a duration such as 1h30m, "+
		"from %s to 7d; got %q", files.MinLinkExpiry, fault.Clip(raw))
	var d time.Duration
	digits, unit := raw[:len(raw)-1], expiryUnits[raw[len(raw)-1]]
	if unit != 0 && digits != "" && strings.Trim(digits, "0123456789") == "" {
		n, err := strconv.ParseInt(digits, 10, 64)
		if err != nil || n > int64(files.MaxLinkExpiry/unit) {
			return 0, bad
		}
		d = time.Duration(n) * unit
	} else {
		var err error
		if d, err = time.ParseDuration(raw); err != nil {
			return 0, bad
		}
	}
	if d < files.MinLinkExpiry || d > files.MaxLinkExpiry {
		return 0, bad
	}
	return d, nil
}
