package http

import (
	"bufio"
	"errors"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/openbdp/bdp/fault"
	"github.com/openbdp/bdp/rbac"
	"github.com/openbdp/bdp/store"
)

// route is the single declaration of one endpoint: the router, the
// persisted catalog and the OpenAPI document are all made from it.
type route struct {
	ID      int32  // persisted catalog id, filled in at start
	Method  string // GET, POST, PUT, DELETE
	Path    string // template in API form: /v2/project/{project_id}
	Tag     string // store.TagMeta, TagUser, TagCompany, TagProject or TagGeneral
	Op      string // envelope operation of its answers: create, update, delete or ""
	Summary string
	Doc     string  // a longer description for the OpenAPI document: defaults, limits, rules
	Query   []param // query parameters, for the OpenAPI document
	Body    any     // request body type (a zero value), nil for none
	Resp    any     // success body type (a zero value)
	Status  int     // success status; 200 when 0
	// Errors describes error statuses beyond those every route of its
	// kind answers (openapi.go, errorStatuses), or when a common one
	// needs saying, for the OpenAPI document.
	Errors map[int]string
	Handle handlerFunc
	// StreamBody routes read the request body themselves, as a stream
	// (c.Context().RequestBodyStream()), and enforce their own limit;
	// for all others wrap reads it whole, within the route's body limit.
	StreamBody bool
	// RespAlt is a second shape of the success answer, as a JSON schema
	// (the short answer of GET /v2/datapoint/timeseries); the document
	// offers it and Resp as oneOf.
	RespAlt map[string]any
	// FormToo routes take their body form-encoded as well as JSON
	// (aedifion's clients send some bodies as forms).
	FormToo bool
	// LargeBody routes take bodies up to Config.BodyLimit (the JSON
	// upload); every other route's body is small by nature and held to
	// smallBodyLimit (bodyLimit).
	LargeBody bool
	// RefusedQuery and RefusedBody name the query parameters and top-level
	// body fields aedifion's API documents for this operation that bdp
	// does not support: a request carrying one answers 400 naming it,
	// before anything is done (params.go, decisions.md 10).
	RefusedQuery, RefusedBody []string
	// PagedByWrap list routes answer their whole list and wrap cuts the
	// page asked for out of it (set by pageLists, paging.go).
	PagedByWrap bool
}

// smallBodyLimit is the body limit of every route but the JSON upload:
// an administration object, a role with its TagAuths or a virtual
// datapoint configuration is far smaller, and a request's memory grows
// with its body, so no route accepts more than it can need.
const smallBodyLimit = 256 << 10

// bodyLimit is the largest body r accepts, in bytes.
func (s *Server) bodyLimit(r *route) int {
	switch {
	case r.StreamBody:
		return s.cfg.ImportLimit
	case r.LargeBody:
		return s.cfg.BodyLimit
	}
	return min(smallBodyLimit, s.cfg.BodyLimit)
}

// param documents a query parameter; wrap enforces MaxLength (in
// characters, 0: none but the URI's own limit).
type param struct {
	Name, Type, Doc string
	Required        bool
	MaxLength       int
}

// call is what the wrapper learned about a request before the handler
// runs: who is calling, with which permissions, on which project.
type call struct {
	Principal store.Principal
	Perms     *rbac.Permissions
	ProjectID int64 // 0 when the route has no project
}

// handlerFunc does the work of one route. It returns the body to send
// (encoded as JSON with the route's success status) or an error with a
// fault kind; it never writes status codes itself.
type handlerFunc func(c *fiber.Ctx, cl *call) (any, error)

// envelope is the success answer of mutating operations (api.md 2.1).
type envelope struct {
	Success   bool   `json:"success"`
	Operation string `json:"operation"`
	Resource  any    `json:"resource"`
}

func ok(op string, resource any) envelope {
	if resource == nil {
		resource = struct{}{}
	}
	return envelope{Success: true, Operation: op, Resource: resource}
}

// wrap turns a route into a fiber handler: authenticate (a user, except
// for meta routes; the operator token for operator routes), resolve the
// project, check the grant, and only then read and
// check the body (a caller without the grant never makes the server hold
// or parse one), run, encode.
func (s *Server) wrap(r *route) fiber.Handler {
	return func(c *fiber.Ctx) error {
		c.Locals(localOperation, r.Op)
		cl := &call{}
		switch r.Tag {
		case store.TagMeta:
		case tagOperator:
			if err := s.checkOperator(c); err != nil {
				return err
			}
		default:
			p, perms, err := s.authenticate(c)
			if err != nil {
				return err
			}
			cl.Principal, cl.Perms = p, perms
			if cl.ProjectID, err = s.projectOf(c, r, perms); err != nil {
				return err
			}
			if err := perms.Check(r.ID, cl.ProjectID); err != nil {
				return err
			}
		}
		if err := checkParams(c, r.Query); err != nil {
			return err
		}
		if err := checkQueryNames(c, r); err != nil {
			return err
		}
		var page pageRequest
		if r.PagedByWrap {
			var err error
			if page, err = pageRequestOf(c); err != nil {
				return err
			}
		}
		if !r.StreamBody {
			if err := s.readBody(c, s.bodyLimit(r)); err != nil {
				return err
			}
			if err := checkBodyFields(c, r); err != nil {
				return err
			}
		}
		res, err := r.Handle(c, cl)
		if err != nil {
			return err
		}
		if r.PagedByWrap {
			res = page.apply(c, res)
		}
		status := r.Status
		if status == 0 {
			status = fiber.StatusOK
		}
		if raw, isRaw := res.(rawJSON); isRaw {
			c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSONCharsetUTF8)
			return c.Status(status).Send(raw)
		}
		if stream, isStream := res.(streamedJSON); isStream {
			c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSONCharsetUTF8)
			id, log := requestID(c), s.log
			c.Status(status).Context().SetBodyStreamWriter(func(w *bufio.Writer) {
				if err := stream(w); err != nil {
					log.Warn("streamed answer cut short", slog.String("request_id", id), slog.Any("error", err))
				}
			})
			return nil
		}
		return c.Status(status).JSON(res)
	}
}

// localBodyRead marks a request whose streamed body was read to its end.
const localBodyRead = "bdp.body_read"

// readBody reads the request body whole and checks its text
// (checkBodyText), answering 413 beyond limit bytes, by Content-Length and
// by the bytes that come. fiber streams request bodies (StreamRequestBody,
// for imports), and then its BodyLimit, the larger of BodyLimit and
// ImportLimit, bounds nothing, so this is where every other route gets
// its limit; c.Body() then returns what was read.
func (s *Server) readBody(c *fiber.Ctx, limit int) error {
	if err := s.limitBody(c, limit); err != nil {
		return err
	}
	return checkBodyText(c)
}

func (s *Server) limitBody(c *fiber.Ctx, limit int) error {
	req := c.Request()
	n := req.Header.ContentLength() // -1 chunked, -2 none
	stream := c.Context().RequestBodyStream()
	tooLarge := fault.TooLargef("request body too large: at most %d bytes", limit)
	if stream == nil || n == 0 || n == -2 {
		if len(req.Body()) > limit { // fasthttp read it already
			return tooLarge
		}
		return nil
	}
	if n > limit {
		// Read a little, so that a small client sees the answer, then
		// close the connection rather than read it all.
		_, _ = io.CopyN(io.Discard, stream, 1<<20)
		c.Context().SetConnectionClose()
		return tooLarge
	}
	var body []byte
	var err error
	if n > 0 {
		body = make([]byte, n)
		_, err = io.ReadFull(stream, body)
	} else {
		body, err = io.ReadAll(io.LimitReader(stream, int64(limit)+1))
		if err == nil && len(body) > limit {
			c.Context().SetConnectionClose()
			return tooLarge
		}
	}
	if err != nil {
		c.Context().SetConnectionClose()
		return fault.Wrap(fault.Invalid, err, "the request body ended early")
	}
	req.SetBodyRaw(body)
	return nil
}

// refusedBodyDrain is how much of a body left unread by an early answer
// (a 401, 403 or 413 before the body, a 404) is read and dropped before
// the answer goes out, within refusedBodyWait: a client that waits for
// the answer before it sends its body holds nothing up for long.
const (
	refusedBodyDrain = 4 << 20
	refusedBodyWait  = 5 * time.Second
)

// closeUnreadBody settles a request whose streamed body was not read to
// its end. What is left of it would be taken for the next request, so the
// connection must not carry one unless the rest is read; and closing a
// socket with unread data makes the kernel answer with a reset, which can
// reach a client still sending its body before the answer does, so that
// it sees "connection reset" instead of the 401. The rest is therefore
// read, up to refusedBodyDrain bytes; only a longer body closes the
// connection without being read.
func (s *Server) closeUnreadBody(c *fiber.Ctx) error {
	err := c.Next()
	stream := c.Context().RequestBodyStream()
	if stream == nil || c.Locals(localBodyRead) != nil {
		return err
	}
	if n := c.Request().Header.ContentLength(); n == 0 || n == -2 {
		return err
	}
	if conn := c.Context().Conn(); conn != nil {
		_ = conn.SetReadDeadline(time.Now().Add(refusedBodyWait)) // fasthttp sets it anew for the next request
	}
	if _, derr := io.CopyN(io.Discard, stream, refusedBodyDrain); !errors.Is(derr, io.EOF) {
		c.Context().SetConnectionClose()
	}
	return err
}

// rawJSON is a body that is JSON already.
type rawJSON []byte

// projectOf finds the project a project route addresses (path or query
// project_id) and makes sure it belongs to the caller's company. A project
// of another company, or none at all, answers 403 either way: its
// existence is nobody else's business (decisions.md 3).
func (s *Server) projectOf(c *fiber.Ctx, r *route, perms *rbac.Permissions) (int64, error) {
	if r.Tag != store.TagProject {
		return 0, nil
	}
	raw := c.Params("project_id")
	if !strings.Contains(r.Path, "{project_id}") {
		raw = c.Query("project_id")
	}
	if raw == "" {
		return 0, fault.Invalidf("project_id is required")
	}
	id, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || id <= 0 {
		return 0, fault.Invalidf("project_id must be a positive integer, got %q", raw)
	}
	company, err := s.authz.projectCompany(c.UserContext(), id)
	if err != nil && !fault.Is(err, fault.NotFound) {
		return 0, err
	}
	if err != nil || company != perms.CompanyID {
		return 0, fault.Forbiddenf("unauthorized access to project %d", id)
	}
	return id, nil
}

// pathID reads a positive integer path parameter.
func pathID(c *fiber.Ctx, name string) (int64, error) {
	raw := c.Params(name)
	id, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || id <= 0 {
		return 0, fault.Invalidf("%s must be a positive integer, got %q", name, raw)
	}
	return id, nil
}

// fiberPath turns /v2/project/{project_id} into /v2/project/:project_id.
func fiberPath(p string) string {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '{':
			b.WriteByte(':')
		case '}':
		default:
			b.WriteByte(p[i])
		}
	}
	return b.String()
}
