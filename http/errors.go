package http

import (
	"errors"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"

	"github.com/openbdp/bdp/auth"
	"github.com/openbdp/bdp/fault"
	"github.com/openbdp/bdp/store"
)

// statusOf maps every fault kind to its status code (decisions.md 3) by
// kindStatus; errors_test.go fails when a kind is missing from it.
func statusOf(k fault.Kind) int {
	if s, ok := kindStatus[k]; ok {
		return s
	}
	return fiber.StatusInternalServerError
}

// kindStatus is the status code of each kind; TestStatusOfEveryKind fails
// for a kind that is not here.
var kindStatus = map[fault.Kind]int{
	fault.Internal:        fiber.StatusInternalServerError,
	fault.Invalid:         fiber.StatusBadRequest,
	fault.Unauthenticated: fiber.StatusUnauthorized,
	fault.Forbidden:       fiber.StatusForbidden,
	fault.NotFound:        fiber.StatusNotFound,
	fault.Conflict:        fiber.StatusConflict,
	fault.TooLarge:        fiber.StatusRequestEntityTooLarge,
	fault.Unprocessable:   fiber.StatusUnprocessableEntity,
	fault.Unavailable:     fiber.StatusServiceUnavailable,
	fault.Throttled:       fiber.StatusTooManyRequests,
}

// fiberKinds translates the errors fiber itself raises (no route, body too
// large) into our kinds.
func fiberKind(e *fiber.Error) (fault.Kind, string) {
	switch e.Code {
	case fiber.StatusNotFound:
		return fault.NotFound, "no such resource"
	case fiber.StatusRequestEntityTooLarge:
		return fault.TooLarge, "request body too large"
	case fiber.StatusBadRequest, fiber.StatusUnsupportedMediaType:
		return fault.Invalid, e.Message
	}
	return fault.Internal, ""
}

// transportErrors are the refusals of the HTTP layer itself, before any
// route runs, that keep their own status rather than a fault kind: they
// say what is wrong with the request as HTTP, not with its content.
var transportErrors = map[int]string{
	fiber.StatusMethodNotAllowed:            "method not allowed on this path; the Allow header lists the methods it takes",
	fiber.StatusRequestTimeout:              "the request headers did not arrive in time",
	fiber.StatusRequestURITooLong:           "request URI too long",
	fiber.StatusRequestHeaderFieldsTooLarge: "request headers too large",
}

// errorBody is the failure envelope of api.md 2.1 and decisions.md 3.
type errorBody struct {
	Success   bool   `json:"success"`
	Error     string `json:"error"`
	Operation string `json:"operation"`
}

// handleError is fiber's ErrorHandler: the one place where an error
// becomes a status code and a body. Internal errors are logged with the
// request id and answered without detail.
func (s *Server) handleError(c *fiber.Ctx, err error) error {
	if requestID(c) == "" {
		// The server refused the request before any middleware ran (a body
		// over the limit): it still gets an id to quote.
		assignRequestID(c)
	}
	kind, msg := fault.KindOf(err), fault.Message(err)
	status := 0
	var fe *fiber.Error
	if errors.As(err, &fe) {
		if m, ok := transportErrors[fe.Code]; ok {
			kind, msg, status = fault.Invalid, m, fe.Code
		} else if kind, msg = fiberKind(fe); kind == fault.Internal {
			msg = "internal error"
		}
	}
	if kind == fault.Internal && store.IsUnavailable(err) {
		// PostgreSQL is down or restarting (the managed one is restarted
		// by its supervisor): the client should retry, not report a bug.
		kind, msg = fault.Unavailable, "the database is unavailable; try again shortly"
		c.Set(fiber.HeaderRetryAfter, "1")
		s.log.Warn("database unavailable", slog.String("request_id", requestID(c)), slog.String("path", c.Path()), slog.Any("error", err))
	}
	if status == 0 {
		status = statusOf(kind)
	}
	if kind == fault.Internal {
		s.log.Error("request failed", slog.String("request_id", requestID(c)),
			slog.String("method", c.Method()), slog.String("path", c.Path()), slog.Any("error", err))
	}
	var throttled *auth.Throttled
	if errors.As(err, &throttled) {
		c.Set(fiber.HeaderRetryAfter, strconv.FormatInt(throttled.RetrySeconds(), 10))
	}
	if kind == fault.Unauthenticated {
		challenge := `Basic realm="bdp"`
		if strings.HasPrefix(c.Path(), "/operator/") {
			challenge = `Bearer realm="bdp-operator"` // the operator API takes only its token
		}
		c.Set(fiber.HeaderWWWAuthenticate, challenge)
	}
	op, _ := c.Locals(localOperation).(string)
	return c.Status(status).JSON(errorBody{Success: false, Error: clipMessage(msg), Operation: op})
}

// Error messages quote the input they refuse (%q, mostly), and an input
// may be megabytes long. clipMessage, applied to every message on its way
// out, keeps maxQuoted characters of each quoted part and maxMessage of
// the whole, so no answer echoes a large input back.
const (
	maxQuoted  = fault.MaxQuoted
	maxMessage = 400
)

// quotedRe matches a double-quoted part with its escapes, as %q writes it.
var quotedRe = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)

func clipMessage(msg string) string {
	if len(msg) <= maxQuoted { // bytes >= characters: nothing to clip
		return msg
	}
	msg = quotedRe.ReplaceAllStringFunc(msg, func(q string) string {
		if len(q) <= maxQuoted+2 {
			return q
		}
		if s, err := strconv.Unquote(q); err == nil {
			if utf8.RuneCountInString(s) <= maxQuoted {
				return q
			}
			return strconv.Quote(fault.Clip(s))
		}
		return `"` + fault.Clip(q[1:len(q)-1]) + `"`
	})
	return fault.ClipTo(msg, maxMessage)
}
