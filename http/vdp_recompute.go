package http

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/openbdp/bdp/actors"
	"github.com/openbdp/bdp/fault"
	"github.com/openbdp/bdp/store"
)

// Exact recompute of a virtual datapoint over a period (beyond api.md):
// POST /v2/project/{project_id}/virtual_datapoint/recompute answers 202 at
// once; the replay (actors.Recompute) runs in a goroutine the server owns,
// and its start, progress and end go to the datapoint's logs as entries of
// type "recompute". The datapoint need not run, and a running one keeps
// running: outputs its actor writes inside the period while the recompute
// runs may be replaced by it, or replace it (the last writer wins). The
// recompute reads everything first and then replaces the period in one
// transaction, so readers see the old outputs or the new, never a mix.

// maxRecomputePeriod bounds one request; a longer history is recomputed
// period by period.
const maxRecomputePeriod = 2 * 366 * 24 * time.Hour

var recomputeParams = []param{
	{Name: "dataPointID", Type: "string", Doc: "the virtual datapoint", Required: true},
	{Name: "start", Type: "string", Doc: "RFC 3339; the period is [start, end)", Required: true},
	{Name: "end", Type: "string", Doc: "RFC 3339, after start, at most 732 days later", Required: true},
}

// recomputeAccepted is the resource of the 202 answer.
type recomputeAccepted struct {
	DataPointID string `json:"dataPointID"`
	Start       string `json:"start"`
	End         string `json:"end"`
	Status      string `json:"status" doc:"accepted; progress and the end appear in the logs (type recompute)"`
}

func (s *Server) recomputeVDP(c *fiber.Ctx, cl *call) (any, error) {
	id, err := vdpParam(c)
	if err != nil {
		return nil, err
	}
	start, end, err := recomputePeriod(c)
	if err != nil {
		return nil, err
	}
	if err := s.requireVDPAccess(c, cl, id, needRun, nil); err != nil {
		return nil, err
	}
	v, err := s.store.VDP(c.UserContext(), cl.ProjectID, id)
	if err != nil {
		return nil, err
	}
	def, err := s.engine.Definition(cl.ProjectID, id, v.Type, v.Config)
	if err != nil {
		return nil, err
	}
	who := cl.Principal.User.Email
	err = s.recomputes.start(actors.Key{ProjectID: cl.ProjectID, DataPointID: id}, func(ctx context.Context, release func()) {
		s.runRecompute(ctx, def, start, end, who, release)
	})
	if err != nil {
		return nil, err
	}
	return ok("create", recomputeAccepted{DataPointID: id, Start: start.Format(time.RFC3339Nano),
		End: end.Format(time.RFC3339Nano), Status: "accepted"}), nil
}

// recomputePeriod reads start and end: both required, in the forms the
// export takes (a date, or an RFC 3339 date-time), start before end, at
// most maxRecomputePeriod apart.
func recomputePeriod(c *fiber.Ctx) (start, end time.Time, err error) {
	for name, dst := range map[string]*time.Time{"start": &start, "end": &end} {
		raw := c.Query(name)
		if strings.TrimSpace(raw) == "" {
			return start, end, fault.Invalidf("query parameter %s is required (a date or an RFC 3339 date-time)", name)
		}
		t, perr := parseQueryTime(name, raw)
		if perr != nil {
			return start, end, perr
		}
		if t.Year() < 1900 || t.Year() > 9999 {
			return start, end, fault.Invalidf("query parameter %s must lie between the years 1900 and 9999, got %q", name, raw)
		}
		*dst = t
	}
	if !start.Before(end) {
		return start, end, fault.Invalidf("start must be before end")
	}
	if end.Sub(start) > maxRecomputePeriod {
		return start, end, fault.Invalidf("the period may span at most %d days; recompute a longer one in parts",
			int(maxRecomputePeriod/(24*time.Hour)))
	}
	return start, end, nil
}

// runRecompute is the goroutine of one recompute. release frees the
// datapoint for the next recompute; it comes before the final log entry,
// so a client that sees the end may start another at once.
func (s *Server) runRecompute(ctx context.Context, def actors.Definition, start, end time.Time, who string, release func()) {
	began := time.Now()
	period := fmt.Sprintf("[%s, %s)", start.Format(time.RFC3339Nano), end.Format(time.RFC3339Nano))
	s.recomputeLog(ctx, def, fmt.Sprintf("recompute of %s started by %s", period, who))
	tenths := 0
	res, err := actors.RecomputeStored(ctx, s.store, def, start, end, func(done, total int) {
		// One entry per tenth of the period: enough to follow a long run,
		// few enough to keep the log readable.
		if t := done * 10 / total; t > tenths && t < 10 {
			tenths = t
			upTo := start.Add(time.Duration(done) * time.Second)
			s.recomputeLog(ctx, def, fmt.Sprintf("recompute of %s %d%% done (event time up to %s)",
				period, t*10, upTo.Format(time.RFC3339)))
		}
	})
	release()
	took := time.Since(began).Round(time.Millisecond)
	msg := fmt.Sprintf("recompute of %s finished: %d outputs written in %s", period, res.Outputs, took)
	if res.CalcErrors > 0 {
		msg += fmt.Sprintf("; failed calculations that emitted nothing: %d (the latest: %s)", res.CalcErrors, res.LastCalcError)
	}
	switch {
	case err == nil:
	case ctx.Err() != nil: // whatever failed, it failed because of the cancel
		msg = fmt.Sprintf("recompute of %s cancelled after %s: the server shut down; nothing was replaced", period, took)
	case fault.KindOf(err) == fault.Internal:
		// The log is shown to API clients: the detail goes to the
		// operator's log only.
		s.log.Error("recompute virtual datapoint", slog.Int64("project_id", def.ProjectID),
			slog.String("dataPointID", def.DataPointID), slog.Any("error", err))
		msg = fmt.Sprintf("recompute of %s failed after %s: internal error; nothing was replaced", period, took)
	default:
		msg = fmt.Sprintf("recompute of %s failed after %s: %s; nothing was replaced", period, took, fault.Message(err))
	}
	s.recomputeLog(ctx, def, msg)
}

// recomputeLog appends a recompute entry to the datapoint's log. It must
// get through also when ctx is cancelled (the entry that says so), hence
// a context of its own.
func (s *Server) recomputeLog(ctx context.Context, def actors.Definition, msg string) {
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := s.store.AppendVDPLog(lctx, def.ProjectID, def.DataPointID, store.LogRecompute, msg); err != nil {
		s.log.Warn("log recompute", slog.Int64("project_id", def.ProjectID),
			slog.String("dataPointID", def.DataPointID), slog.String("message", msg), slog.Any("error", err))
	}
}

// recomputes tracks the server's running recomputes: at most one per
// virtual datapoint, each with a context that Shutdown cancels. The zero
// value is ready to use.
type recomputes struct {
	mu      sync.Mutex
	running map[actors.Key]context.CancelFunc
	closed  bool
	wg      sync.WaitGroup
	// beforeRun, when set, runs first in every recompute goroutine: tests
	// hold a recompute with it to see one in progress.
	beforeRun func(ctx context.Context)
}

// start runs fn in a goroutine of its own unless k has one running
// (Conflict) or the server is shutting down (Unavailable).
func (r *recomputes) start(k actors.Key, fn func(ctx context.Context, release func())) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return fault.Wrap(fault.Unavailable, errors.New("server shutting down"), "the server is shutting down; try again")
	}
	if _, busy := r.running[k]; busy {
		return fault.Conflictf("a recompute of virtual datapoint %q is running; its end appears in the logs", k.DataPointID)
	}
	if r.running == nil {
		r.running = map[actors.Key]context.CancelFunc{}
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.running[k] = cancel
	hook := r.beforeRun
	var once sync.Once
	release := func() {
		once.Do(func() {
			r.mu.Lock()
			delete(r.running, k)
			r.mu.Unlock()
		})
	}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer cancel()
		defer release()
		if hook != nil {
			hook(ctx)
		}
		fn(ctx, release)
	}()
	return nil
}

// setBeforeRun installs the test hook.
func (r *recomputes) setBeforeRun(f func(ctx context.Context)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.beforeRun = f
}

// shutdown refuses new recomputes, cancels the running ones and waits for
// them (their last log entries included), at most until ctx ends.
func (r *recomputes) shutdown(ctx context.Context) error {
	r.mu.Lock()
	r.closed = true
	for _, cancel := range r.running {
		cancel()
	}
	r.mu.Unlock()
	done := make(chan struct{})
	go func() { r.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("recomputes still running: %w", ctx.Err())
	}
}
