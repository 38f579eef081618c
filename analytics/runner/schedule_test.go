package runner

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/openbdp/bdp/clock"
)

func TestAnalysisWeekStart(t *testing.T) {
	berlin := time.FixedZone("CET", 3600)
	for _, c := range []struct{ at, want time.Time }{
		{time.Date(2024, 3, 4, 0, 0, 0, 0, time.UTC), time.Date(2024, 3, 4, 0, 0, 0, 0, time.UTC)},
		{time.Date(2024, 3, 10, 23, 59, 59, 0, time.UTC), time.Date(2024, 3, 4, 0, 0, 0, 0, time.UTC)},
		{time.Date(2024, 3, 11, 0, 30, 0, 0, berlin), time.Date(2024, 3, 4, 0, 0, 0, 0, time.UTC)}, // Sunday 23:30 UTC
		{time.Date(2024, 1, 3, 12, 0, 0, 0, time.UTC), time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)},
	} {
		if got := WeekStart(c.at); !got.Equal(c.want) {
			t.Errorf("WeekStart(%s) = %s, want %s", c.at, got, c.want)
		}
	}
}

// weeklyRuns lists the weekly runs as "instance@week start" with how many
// there are of each.
func (e *env) weeklyRuns(t *testing.T) map[string]int {
	t.Helper()
	rows, err := e.db.Query(context.Background(), `SELECT instance_id, period_start, period_end FROM analysis_results WHERE weekly`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var inst int64
		var start, end time.Time
		if err := rows.Scan(&inst, &start, &end); err != nil {
			t.Fatal(err)
		}
		if end.Sub(start) != Week || !WeekStart(start).Equal(start) {
			t.Fatalf("weekly run of instance %d over %s to %s", inst, start, end)
		}
		out[fmt.Sprintf("%d@%s", inst, start.UTC().Format("2006-01-02"))]++
	}
	return out
}

func runKey(inst int64, week time.Time) string {
	return fmt.Sprintf("%d@%s", inst, week.Format("2006-01-02"))
}

// waitRuns waits until the weekly runs are want, then checks they stay so.
func (e *env) waitRuns(t *testing.T, want map[string]int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for fmt.Sprint(e.weeklyRuns(t)) != fmt.Sprint(want) {
		if time.Now().After(deadline) {
			t.Fatalf("weekly runs %v, want %v", e.weeklyRuns(t), want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (e *env) startSchedule(t *testing.T, c *clock.Fake) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	s := NewSchedule(ScheduleConfig{Store: e.st, Clock: c, Log: e.log})
	go func() { defer close(done); s.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

// Each Monday 00:00 UTC every enabled instance gets one run over the week
// before; a disabled one none.
func TestAnalysisWeeklyRunEachMonday(t *testing.T) {
	e := newEnv(t)
	created := t0.Add(2*24*time.Hour + 9*time.Hour) // Wednesday 09:00 of week t0
	a := e.instance(t, e.function(t, "a"), true, created)
	b := e.instance(t, e.function(t, "b"), true, created)
	off := e.instance(t, e.function(t, "off"), false, created)
	fake := clock.NewFake(created.Add(time.Hour))
	e.startSchedule(t, fake)
	waitTimers(t, fake, 1)
	e.waitRuns(t, map[string]int{}) // nothing has ended since the instances were made

	// Sunday evening: not yet.
	fake.Set(t0.Add(Week - time.Minute))
	waitTimers(t, fake, 1)
	e.waitRuns(t, map[string]int{})

	fake.Set(t0.Add(Week)) // Monday 00:00
	e.waitRuns(t, map[string]int{runKey(a, t0): 1, runKey(b, t0): 1})
	waitTimers(t, fake, 1)

	// The next Monday, one more week each; the disabled one, enabled
	// meanwhile, from its first Monday as enabled on.
	if _, err := e.db.Exec(context.Background(), `UPDATE analysis_instances SET enabled = true WHERE id = $1`, off); err != nil {
		t.Fatal(err)
	}
	fake.Set(t0.Add(2*Week + time.Second))
	e.waitRuns(t, map[string]int{runKey(a, t0): 1, runKey(b, t0): 1,
		runKey(a, t0.Add(Week)): 1, runKey(b, t0.Add(Week)): 1, runKey(off, t0.Add(Week)): 1})
}

// Weeks that ended while bdp was down are made up at its start, at most
// the last CatchUpWeeks of them, never one before the instance existed.
func TestAnalysisWeeklyCatchUp(t *testing.T) {
	e := newEnv(t)
	created := t0.Add(2*24*time.Hour + 9*time.Hour)
	a := e.instance(t, e.function(t, "a"), true, created)
	old := e.instance(t, e.function(t, "old"), true, t0.Add(-20*Week))
	// Down over two Mondays: started on the Wednesday after the second.
	fake := clock.NewFake(t0.Add(2*Week + 50*time.Hour))
	e.startSchedule(t, fake)
	waitTimers(t, fake, 1)
	want := map[string]int{runKey(a, t0): 1, runKey(a, t0.Add(Week)): 1}
	for i := range DefaultCatchUpWeeks {
		want[runKey(old, t0.Add(time.Duration(1-i)*Week))] = 1
	}
	e.waitRuns(t, want)
}

// Two schedules at once, a third started later, and manual runs of the
// same weeks racing with them: still one weekly run per instance and week,
// and every manual run kept.
func TestAnalysisWeeklyRunsNeverTwice(t *testing.T) {
	e := newEnv(t)
	created := t0.Add(-3 * Week)
	var insts []int64
	for i := range 20 {
		insts = append(insts, e.instance(t, e.function(t, fmt.Sprint("f", i)), true, created))
	}
	fake := clock.NewFake(t0.Add(Week + time.Hour))
	const manual = 5
	var wg sync.WaitGroup
	for _, inst := range insts[:manual] {
		wg.Go(func() { e.request(t, inst, t0, t0.Add(Week)) })
	}
	e.startSchedule(t, fake)
	e.startSchedule(t, fake)
	wg.Wait()
	waitTimers(t, fake, 2)
	want := map[string]int{}
	for _, inst := range insts {
		for w := -3; w <= 0; w++ {
			want[runKey(inst, t0.Add(time.Duration(w)*Week))] = 1
		}
	}
	e.waitRuns(t, want)

	// A restart, and both running schedules passing the next Monday.
	e.startSchedule(t, fake)
	waitTimers(t, fake, 3)
	fake.Set(t0.Add(2 * Week))
	for _, inst := range insts {
		want[runKey(inst, t0.Add(Week))] = 1
	}
	e.waitRuns(t, want)
	waitTimers(t, fake, 3)
	e.waitRuns(t, want)
	var manualRuns int
	if err := e.db.QueryRow(context.Background(), `SELECT count(*) FROM analysis_results WHERE NOT weekly AND period_start = $1`, t0).Scan(&manualRuns); err != nil {
		t.Fatal(err)
	}
	if manualRuns != manual {
		t.Fatalf("%d manual runs, want %d", manualRuns, manual)
	}
}
