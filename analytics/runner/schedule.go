package runner

import (
	"context"
	"log/slog"
	"time"

	"github.com/openbdp/bdp/clock"
	"github.com/openbdp/bdp/store"
)

// Week is the period of a weekly run: Monday 00:00 UTC to the next.
const Week = 7 * 24 * time.Hour

// DefaultCatchUpWeeks is how many past weeks a start makes up at most.
// Eight weeks cover any outage a node is likely to come back from, while a
// thousand instances make at most eight thousand runs at once (minutes of
// work for the pool, waiting in PostgreSQL); weeks further back are worth
// little to operations and can be run by hand.
const DefaultCatchUpWeeks = 8

// retryDelay is how soon a schedule that failed (the database away) tries
// again.
const retryDelay = time.Minute

// ScheduleConfig is what the weekly schedule needs.
type ScheduleConfig struct {
	Store *store.Store
	Clock clock.Clock // nil: the real one
	// CatchUpWeeks: 0 means DefaultCatchUpWeeks.
	CatchUpWeeks int
	Log          *slog.Logger
}

// Schedule makes the weekly runs: every Monday 00:00 UTC, a run of every
// enabled instance over the week before, [Monday - 7 days, Monday). At
// its start it makes up the weeks missed while no node ran: every week
// of the last CatchUpWeeks that ended after the instance was created and
// has no weekly run yet. No week is ever run twice for an instance, also
// with several nodes each running a Schedule, or one started twice: the
// database's unique key decides (store.ScheduleWeeklyAnalysisRuns). A
// manual run over the same week is another result and changes nothing.
type Schedule struct {
	cfg ScheduleConfig
}

// NewSchedule makes a Schedule; Run runs it.
func NewSchedule(cfg ScheduleConfig) *Schedule {
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.CatchUpWeeks <= 0 {
		cfg.CatchUpWeeks = DefaultCatchUpWeeks
	}
	return &Schedule{cfg: cfg}
}

// WeekStart is the Monday 00:00 UTC at or before t.
func WeekStart(t time.Time) time.Time {
	t = t.UTC()
	day := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	return day.AddDate(0, 0, -((int(day.Weekday()) + 6) % 7))
}

// Run makes up the missed weeks, then the run of each week as it ends,
// until ctx ends.
func (s *Schedule) Run(ctx context.Context) {
	// done is the start of the newest week made; weeks after it and before
	// the current one are due, at most CatchUpWeeks of them. A clock that
	// jumps (a suspended machine) so makes up what it skipped.
	done := WeekStart(s.cfg.Clock.Now()).Add(-time.Duration(s.cfg.CatchUpWeeks+1) * Week)
	for {
		current := WeekStart(s.cfg.Clock.Now())
		from := done.Add(Week)
		if oldest := current.Add(-time.Duration(s.cfg.CatchUpWeeks) * Week); oldest.After(from) {
			from = oldest
		}
		if to := current.Add(-Week); !from.After(to) {
			if !s.make(ctx, from, to) {
				return
			}
			done = to
		}
		now := s.cfg.Clock.Now()
		if !s.sleep(ctx, WeekStart(now).Add(Week).Sub(now)) {
			return
		}
	}
}

// make makes the runs of the weeks starting from from to to, retrying
// while the database fails; false when ctx ended first.
func (s *Schedule) make(ctx context.Context, from, to time.Time) bool {
	for {
		n, err := s.cfg.Store.ScheduleWeeklyAnalysisRuns(ctx, from, to)
		if err == nil {
			if n > 0 {
				s.cfg.Log.Info("weekly analysis runs made", slog.Int64("runs", n),
					slog.Time("from_week", from), slog.Time("to_week", to))
			}
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		s.cfg.Log.Warn("make weekly analysis runs; retrying", slog.Any("error", err), slog.Duration("retry_in", retryDelay))
		if !s.sleep(ctx, retryDelay) {
			return false
		}
	}
}

// sleep waits d on the schedule's clock; false when ctx ended first.
func (s *Schedule) sleep(ctx context.Context, d time.Duration) bool {
	timer := clock.NewTimer(s.cfg.Clock, d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
		return true
	}
}
