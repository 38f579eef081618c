package http

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/adaptor"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
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
