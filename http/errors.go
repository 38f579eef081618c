package http

import (
	"errors"
	"log/slog"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/openbdp/bdp/auth"
	"github.com/openbdp/bdp/fault"
	"github.com/openbdp/bdp/store"
)

// statusOf maps every fault kind to its status code (decisions.md 3). The
// switch is exhaustive: errors_test.go fails when a kind is missing.
func statusOf(k fault.Kind) int {
	switch k {
	case fault.Invalid:
		return fiber.StatusBadRequest
	case fault.Unauthenticated:
		return fiber.StatusUnauthorized
	case fault.Forbidden:
		return fiber.StatusForbidden
	case fault.NotFound:
		return fiber.StatusNotFound
	case fault.Conflict:
		return fiber.StatusConflict
	case fault.TooLarge:
		return fiber.StatusRequestEntityTooLarge
	case fault.Unprocessable:
		return fiber.StatusUnprocessableEntity
	case fault.Unavailable:
		return fiber.StatusServiceUnavailable
	case fault.Throttled:
		return fiber.StatusTooManyRequests
	case fault.Internal:
		return fiber.StatusInternalServerError
	}
	return fiber.StatusInternalServerError
}

// fiberKinds translates the errors fiber itself raises (no route, body too
// large, bad method) into our kinds.
func fiberKind(e *fiber.Error) (fault.Kind, string) {
	switch e.Code {
	case fiber.StatusNotFound:
		return fault.NotFound, "no such resource"
	case fiber.StatusMethodNotAllowed:
		return fault.NotFound, "no such resource for this method"
	case fiber.StatusRequestEntityTooLarge:
		return fault.TooLarge, "request body too large"
	case fiber.StatusBadRequest, fiber.StatusRequestHeaderFieldsTooLarge, fiber.StatusUnsupportedMediaType:
		return fault.Invalid, e.Message
	case fiber.StatusRequestTimeout:
		// The client stopped sending: its fault, not a server error.
		return fault.Invalid, "the request did not arrive in time"
	}
	return fault.Internal, ""
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
	var fe *fiber.Error
	if errors.As(err, &fe) {
		kind, msg = fiberKind(fe)
		if kind == fault.Internal {
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
	status := statusOf(kind)
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
	return c.Status(status).JSON(errorBody{Success: false, Error: msg, Operation: op})
}
