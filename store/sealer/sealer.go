// Package sealer runs the sealing of closed weeks into compressed chunks
// (issue 21, store/chunks.go and store/seal.go) as background work: one
// goroutine of its own, a pass every Config.Every, each week under a lock
// that keeps other nodes off it, a batch of about store.SealBatchRows rows
// per transaction, and a pause after each batch so that sealing takes at
// most Config.Duty of the time. A pass resumes what a crash left: a
// batch is one transaction, and whatever the head still holds of a
// closed week is sealed by the next pass.
package sealer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/openbdp/bdp/store"
)

// Config says when and how fast closed weeks are sealed.
type Config struct {
	// Grace is how long after a week ends it is sealed: late writes
	// into it until then stay rows. Default DefaultGrace.
	Grace time.Duration
	// Duty is the share of time the sealer works, (0, 1]: after a batch
	// that took d it waits d*(1-Duty)/Duty. Default DefaultDuty.
	Duty float64
	// Every is the time between passes. Default DefaultEvery.
	Every time.Duration
	// Now is the clock; default time.Now.
	Now func() time.Time
}

// Defaults: a week is sealed three days after it ends (edge devices and
// gateways that buffer through an outage deliver within that), at most a
// twentieth of the time, looked for every ten minutes. At a quarter of the
// time Kafka ingestion beside a first pass lost 13-26 % of its pace,
// PostgreSQL's deletes and writes the most of it; a twentieth still seals
// about 15,000 observations a second on a 2-core machine, hundreds of
// times what a large building sends (bdp admin storage seal works through
// a backlog at full speed).
const (
	DefaultGrace = 72 * time.Hour
	DefaultDuty  = 0.05
	DefaultEvery = 10 * time.Minute
)

// Validate fills in the defaults and refuses what cannot work.
func (c *Config) Validate() error {
	if c.Grace < 0 {
		return errors.New("sealer: grace must not be negative")
	}
	if c.Grace == 0 {
		c.Grace = DefaultGrace
	}
	if c.Duty == 0 {
		c.Duty = DefaultDuty
	}
	if c.Duty < 0 || c.Duty > 1 {
		return fmt.Errorf("sealer: duty %g is not in (0, 1]", c.Duty)
	}
	if c.Every < 0 {
		return errors.New("sealer: every must not be negative")
	}
	if c.Every == 0 {
		c.Every = DefaultEvery
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return nil
}

// Sealer is the background sealing of one node.
type Sealer struct {
	st      *store.Store
	cfg     Config
	log     *slog.Logger
	metrics metrics

	cancel context.CancelFunc
	done   sync.WaitGroup
}

// New makes a sealer; Start runs it, Pass runs one pass.
func New(st *store.Store, cfg Config, log *slog.Logger, reg prometheus.Registerer) (*Sealer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Sealer{st: st, cfg: cfg, log: log.With(slog.String("part", "sealer")), metrics: newMetrics()}
	if reg != nil {
		if err := s.metrics.register(reg); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Start runs passes on the sealer's own goroutine until Close.
func (s *Sealer) Start() {
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	s.done.Add(1)
	go func() {
		defer s.done.Done()
		for {
			if _, err := s.Pass(ctx); err != nil && ctx.Err() == nil {
				s.metrics.errors.Inc()
				s.log.Error("seal pass", slog.Any("error", err))
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(s.cfg.Every):
			}
		}
	}()
}

// Close stops the sealer and waits for it: a batch in progress rolls
// back.
func (s *Sealer) Close() {
	if s.cancel != nil {
		s.cancel()
		s.done.Wait()
	}
}

// PassResult is what one pass did.
type PassResult struct {
	Weeks      int   // weeks sealed (others were another node's)
	Rows       int64 // head rows moved into chunks
	Chunks     int   // chunks written
	Truncated  int   // partitions emptied
	Throttled  time.Duration
	WeeksAhead int // weeks that were due at the start of the pass
}

// Pass seals every closed week that is due, then updates the storage
// figures.
func (s *Sealer) Pass(ctx context.Context) (PassResult, error) {
	var res PassResult
	horizon := s.cfg.Now().Add(-s.cfg.Grace)
	weeks, err := s.st.SealableWeeks(ctx, horizon)
	if err != nil {
		return res, err
	}
	res.WeeksAhead = len(weeks)
	s.metrics.weeksDue.Set(float64(len(weeks)))
	for i, week := range weeks {
		sealed, err := s.sealWeek(ctx, week, &res)
		if err != nil {
			return res, err
		}
		if sealed {
			res.Weeks++
		}
		s.metrics.weeksDue.Set(float64(len(weeks) - i - 1))
	}
	if err := s.UpdateFigures(ctx); err != nil {
		return res, err
	}
	if res.Rows > 0 {
		s.log.Info("sealed", slog.Int("weeks", res.Weeks), slog.Int64("rows", res.Rows), slog.Int("chunks", res.Chunks),
			slog.Int("truncated", res.Truncated), slog.Duration("throttled", res.Throttled))
	}
	return res, nil
}

// sealWeek seals one week in batches, unless another node holds it.
func (s *Sealer) sealWeek(ctx context.Context, week time.Time, res *PassResult) (bool, error) {
	unlock, ok, err := s.st.TryLock(ctx, "seal-week/"+week.Format(time.DateOnly))
	if err != nil || !ok {
		return false, err
	}
	defer unlock()
	rows, err := s.st.WeekRows(ctx, week)
	if err != nil {
		return false, err
	}
	for _, batch := range store.SealBatches(rows) {
		began := time.Now()
		r, err := s.st.SealWeek(ctx, week, batch)
		if err != nil {
			return false, err
		}
		took := time.Since(began)
		res.Rows += r.Rows
		res.Chunks += r.Chunks
		s.metrics.rows.Add(float64(r.Rows))
		s.metrics.chunks.Add(float64(r.Chunks))
		s.metrics.seconds.Add(took.Seconds())
		if pause := time.Duration(float64(took) * (1 - s.cfg.Duty) / s.cfg.Duty); pause > 0 {
			res.Throttled += pause
			select {
			case <-ctx.Done():
				return false, ctx.Err()
			case <-time.After(pause):
			}
		}
	}
	truncated, err := s.st.TruncateIfEmpty(ctx, week)
	if err != nil {
		return false, err
	}
	if truncated {
		res.Truncated++
	}
	return true, nil
}

// UpdateFigures reads the storage figures into the metrics.
func (s *Sealer) UpdateFigures(ctx context.Context) error {
	f, err := s.st.StorageFigures(ctx, false)
	if err != nil {
		return err
	}
	s.metrics.set(f)
	return nil
}
