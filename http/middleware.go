package http

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/adaptor"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/valyala/fasthttp"
)

const (
	headerRequestID = "X-Request-Id"
	localRequestID  = "bdp.request_id"
	localOperation  = "bdp.operation"
	localCall       = "bdp.call"
)

// requestID takes the client's X-Request-Id when it is sane, or makes one,
// and echoes it, so a client can quote it when reporting a failure.
func (s *Server) requestID(c *fiber.Ctx) error {
	assignRequestID(c)
	return c.Next()
}

func assignRequestID(c *fiber.Ctx) {
	id := c.Get(headerRequestID)
	if id == "" || len(id) > 64 {
		id = newRequestID()
	}
	c.Locals(localRequestID, id)
	c.Set(headerRequestID, id)
}

func requestID(c *fiber.Ctx) string {
	id, _ := c.Locals(localRequestID).(string)
	return id
}

func newRequestID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func randomKey() []byte {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return b
}

// metrics are the HTTP figures on /metrics, labelled by route template so
// that ids in paths do not explode the series count.
type metrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	gatherer prometheus.Gatherer
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bdp_http_requests_total", Help: "HTTP requests by method, route template and status.",
		}, []string{"method", "route", "status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "bdp_http_request_duration_seconds", Help: "HTTP request latency by method and route template.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 10},
		}, []string{"method", "route"}),
	}
	for _, c := range []prometheus.Collector{m.requests, m.latency} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register metrics: %w", err)
		}
	}
	m.gatherer = prometheus.DefaultGatherer
	if g, ok := reg.(prometheus.Gatherer); ok {
		m.gatherer = g
	}
	return m, nil
}

func (m *metrics) handler() fiber.Handler {
	return adaptor.HTTPHandler(promhttp.HandlerFor(m.gatherer, promhttp.HandlerOpts{}))
}

// observe runs the rest of the chain, lets the error handler write its
// answer, then counts the request and writes one access-log line.
func (s *Server) observe(c *fiber.Ctx) error {
	start := time.Now()
	if err := c.Next(); err != nil {
		if herr := s.app.ErrorHandler(c, err); herr != nil {
			return herr
		}
	}
	elapsed := time.Since(start)
	status := c.Response().StatusCode()
	route := c.Route().Path
	if route == "/" && c.Path() != "/" {
		route = "unmatched" // the catch-all: keep scanners out of the label set
	}
	// Label values outlive the request: copied, whatever fiber's settings.
	method := strings.Clone(c.Method())
	s.metrics.requests.WithLabelValues(method, route, strconv.Itoa(status)).Inc()
	s.metrics.latency.WithLabelValues(method, route).Observe(elapsed.Seconds())
	if s.log.Enabled(c.UserContext(), slog.LevelInfo) {
		s.log.LogAttrs(c.UserContext(), slog.LevelInfo, "http",
			slog.String("request_id", requestID(c)), slog.String("method", c.Method()),
			slog.String("path", c.Path()), slog.String("route", route), slog.Int("status", status),
			slog.Duration("duration", elapsed), slog.String("remote", c.IP()))
	}
	return nil
}

// logPanic records a recovered panic with its stack; the client gets the
// plain 500 envelope from the error handler.
func (s *Server) logPanic(c *fiber.Ctx, e any) {
	s.log.Error("panic in handler", slog.String("request_id", requestID(c)),
		slog.String("method", c.Method()), slog.String("path", c.Path()), slog.Any("panic", e),
		slog.String("stack", string(debug.Stack())))
}

// maxURILength is the longest request URI (path and query) bdp reads; a
// longer one answers 414. The read buffer (readBufferSize) holds the
// request line with every header; a request beyond it answers 431, or 414
// when the request line alone fills it (transportError).
const (
	maxURILength   = 8 << 10
	readBufferSize = 16 << 10
)

// limitURI refuses request URIs over maxURILength.
func limitURI(c *fiber.Ctx) error {
	if len(c.Request().RequestURI()) > maxURILength {
		return fiber.ErrRequestURITooLong
	}
	return c.Next()
}

// transportError answers the requests fasthttp refuses before fiber
// routes them (headers beyond the read buffer, a header read timeout)
// with the error envelope. fiber's own translation knows no 414: a
// request line that alone fills the read buffer is one, told from the
// buffer's start and end that fasthttp quotes in the error.
func (s *Server) transportError(ctx *fasthttp.RequestCtx, err error) {
	c := s.app.AcquireCtx(ctx)
	defer s.app.ReleaseCtx(c)
	var small *fasthttp.ErrSmallBuffer
	var netErr net.Error
	switch {
	case errors.As(err, &small) && requestLineUnfinished(err.Error()):
		err = fiber.ErrRequestURITooLong
	case errors.As(err, &small):
		err = fiber.ErrRequestHeaderFieldsTooLarge
	case errors.As(err, &netErr) && netErr.Timeout(), strings.Contains(err.Error(), "timeout"):
		err = fiber.ErrRequestTimeout
	case errors.Is(err, fasthttp.ErrBodyTooLarge):
		err = fiber.ErrRequestEntityTooLarge
	default:
		err = fiber.NewError(fiber.StatusBadRequest, "malformed HTTP request")
	}
	_ = s.handleError(c, err)
}

// requestLineUnfinished reads fasthttp's small-buffer error, which quotes
// the first and last 200 bytes of the full buffer: when neither holds a
// line feed, the request line had not ended.
func requestLineUnfinished(msg string) bool {
	_, contents, ok := strings.Cut(msg, "contents: ")
	if !ok {
		return false
	}
	for contents != "" {
		q, err := strconv.QuotedPrefix(contents)
		if err != nil {
			break
		}
		s, err := strconv.Unquote(q)
		if err != nil || strings.Contains(s, "\n") {
			return false
		}
		contents = strings.TrimPrefix(contents[len(q):], "...")
	}
	return true
}

// routeMethods is a path template with the methods it is routed for.
type routeMethods struct {
	segments []string // "{…}" matches any one segment; a last "*" any rest
	methods  []string
}

// allowIndex knows, for any path, the methods it has routes for: a
// request on a path that exists with another method answers 405 with
// Allow rather than 404.
type allowIndex []routeMethods

func (x *allowIndex) add(method, path string) {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	for i := range *x {
		if slices.Equal((*x)[i].segments, segs) {
			if !slices.Contains((*x)[i].methods, method) {
				(*x)[i].methods = append((*x)[i].methods, method)
			}
			return
		}
	}
	*x = append(*x, routeMethods{segments: segs, methods: []string{method}})
}

// methods lists the methods of the routes path matches, GET with HEAD
// (fiber answers HEAD for every GET route), sorted.
func (x allowIndex) methods(path string) []string {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	var out []string
	for _, r := range x {
		if !templateMatches(r.segments, segs) {
			continue
		}
		for _, m := range r.methods {
			if !slices.Contains(out, m) {
				out = append(out, m)
			}
			if m == fiber.MethodGet && !slices.Contains(out, fiber.MethodHead) {
				out = append(out, fiber.MethodHead)
			}
		}
	}
	slices.Sort(out)
	return out
}

func templateMatches(tmpl, segs []string) bool {
	for i, t := range tmpl {
		if t == "*" {
			return true
		}
		if i >= len(segs) {
			return false
		}
		if strings.HasPrefix(t, "{") && strings.HasSuffix(t, "}") {
			if segs[i] == "" {
				return false
			}
			continue
		}
		if !strings.EqualFold(t, segs[i]) { // fiber routes case-insensitively
			return false
		}
	}
	return len(tmpl) == len(segs)
}

// notRouted is the catch-all after every route: 405 with Allow when the
// path exists for other methods, else 404.
func (s *Server) notRouted(c *fiber.Ctx) error {
	if allowed := s.allow.methods(c.Path()); len(allowed) > 0 {
		c.Set(fiber.HeaderAllow, strings.Join(allowed, ", "))
		return fiber.ErrMethodNotAllowed
	}
	return fiber.ErrNotFound
}
