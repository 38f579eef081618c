package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// AppsOptions configure `bdp-bench apps`: running schedule apps on the
// real bdp serve, with simulated edge devices outside its process.
type AppsOptions struct {
	Binary   string
	Projects int           // projects, one simulated device each (in this process)
	Rooms    int           // rooms per project, one schedule app each
	Idle     time.Duration // the window with no schedule boundary over which bdp's CPU is measured
	Progress io.Writer
}

// Apps measures what running schedule apps cost bdp serve: heap per app
// and CPU while they wait for their next boundary.
//
// Every room's schedule has one entry, three days from now, so the idle
// window has no boundary; each app writes its current value (the
// schedule's default) once when it starts, through bdp's write path to
// the project's simulated device, and then only waits.
//
// Heap: bdp serve offers no way to force a collection, so the figure is
// bdp's go_memstats_heap_alloc_bytes scraped right after one of its own
// collections has finished sweeping (remoteHeapAfterGC), taken with the
// apps created but not run and again with all of them Running; the
// difference over the apps is heap_bytes_per_app. CPU: bdp serve's
// utime+stime from /proc/PID/stat over the idle window, as a percentage
// of one core, with all apps Running (idle_cpu_percent) and, for
// comparison, over a window of the same length before the run, with the
// apps created but not running (idle_cpu_percent_no_apps). The simulated
// devices keep sending heartbeats every 5 s, and bdp keeps ticking and
// pinging each connection, in both windows, as in production.
func Apps(ctx context.Context, o AppsOptions) (map[string]any, error) {
	progress := func(format string, args ...any) {
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, "apps: "+format+"\n", args...)
		}
	}
	load0 := loadAverage()
	setupStart := time.Now()
	p, err := Start(ctx, Options{Binary: o.Binary})
	if err != nil {
		return nil, err
	}
	defer p.Close()
	devCtx, stopDevices := context.WithCancel(ctx)
	defer stopDevices()
	var dps []string
	for r := 0; r < o.Rooms; r++ {
		dps = append(dps, fmt.Sprintf("room%d_sp", r))
	}
	projects, err := edgeProjects(devCtx, p, o.Projects, dps)
	if err != nil {
		return nil, err
	}
	progress("%d projects with online devices after %.1f s; creating %d apps", len(projects), time.Since(setupStart).Seconds(), len(projects)*o.Rooms)
	room, setpointPin, err := roomComponent(ctx, p)
	if err != nil {
		return nil, err
	}
	schedule := farSchedule(time.Now().UTC())
	if err := forEachProject(ctx, projects, 4, func(pid int64) error {
		for _, dp := range dps {
			if _, err := createScheduleApp(ctx, p, pid, room, setpointPin, dp, schedule); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return nil, err
	}
	setup := time.Since(setupStart) // bdp started, projects, devices online, rooms mapped, apps created
	client := &http.Client{Timeout: 30 * time.Second}
	scrape := func(ctx context.Context, series ...string) (map[string]float64, error) {
		return scrapeMetrics(ctx, client, p.Base, series...)
	}
	before, err := remoteHeapAfterGC(ctx, scrape)
	if err != nil {
		return nil, err
	}
	// The same window before the run: what the devices (heartbeats,
	// pings) and the rest of bdp cost without running apps.
	progress("idle window of %s with the apps created, not running", o.Idle)
	withoutApps, _, err := idleCPU(ctx, p.cmd.Process.Pid, o.Idle)
	if err != nil {
		return nil, err
	}
	runStart := time.Now()
	for _, pid := range projects {
		if err := p.Do(ctx, "POST", fmt.Sprintf("/v2/controls/apps/run?project_id=%d", pid), map[string]any{"run": true}, nil, false); err != nil {
			return nil, err
		}
	}
	apps := len(projects) * o.Rooms
	const (
		runningSeries  = "bdp_controls_apps_running"
		acceptedSeries = `bdp_controls_app_writes_total{result="accepted"}`
		writtenSeries  = `bdp_edge_setpoint_operations_total{state="written"}`
	)
	deadline := time.Now().Add(2 * time.Minute)
	var m map[string]float64
	for {
		if m, err = scrape(ctx, runningSeries, acceptedSeries, writtenSeries); err != nil {
			return nil, err
		}
		if int(m[runningSeries]) == apps && int(m[acceptedSeries]) >= apps {
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("after 2 minutes %v of %d apps run and %v wrote", m[runningSeries], apps, m[acceptedSeries])
		}
		time.Sleep(100 * time.Millisecond)
	}
	allRunning := time.Since(runStart)
	running, err := countRunning(ctx, p, projects)
	if err != nil {
		return nil, err
	}
	if running != apps {
		return nil, fmt.Errorf("%d of %d apps have status Running", running, apps)
	}
	progress("%d apps Running %.1f s after the run requests; letting the writes finish", apps, allRunning.Seconds())
	time.Sleep(3 * time.Second)
	after, err := remoteHeapAfterGC(ctx, scrape)
	if err != nil {
		return nil, err
	}
	if m, err = scrape(ctx, runningSeries, acceptedSeries, writtenSeries); err != nil {
		return nil, err
	}

	progress("idle window of %s with the apps running", o.Idle)
	withApps, window, err := idleCPU(ctx, p.cmd.Process.Pid, o.Idle)
	if err != nil {
		return nil, err
	}
	end, err := scrape(ctx, acceptedSeries)
	if err != nil {
		return nil, err
	}
	perApp := func(series string) int { return int((after[series] - before[series]) / float64(apps)) }
	return map[string]any{
		"scenario": "apps", "apps": apps, "projects": len(projects),
		"heap_bytes_per_app":       perApp("go_memstats_heap_alloc_bytes"),
		"heap_inuse_bytes_per_app": perApp("go_memstats_heap_inuse_bytes"),
		"stack_bytes_per_app":      perApp("go_memstats_stack_inuse_bytes"),
		"goroutines_per_app":       round((after["go_goroutines"] - before["go_goroutines"]) / float64(apps)),
		"idle_cpu_percent":         round(withApps),
		"idle_cpu_percent_no_apps": round(withoutApps),
		"idle_window_s":            round(window.Seconds()),
		"idle_writes":              int(end[acceptedSeries] - m[acceptedSeries]),
		"start_writes_accepted":    int(m[acceptedSeries]), "start_writes_written": int(m[writtenSeries]),
		"all_running_s": round(allRunning.Seconds()), "setup_s": round(setup.Seconds()),
		"loadavg_before": load0, "loadavg_after": loadAverage(),
	}, nil
}

// farSchedule is a setpoint_schedule whose only entry lies three days
// after now (in UTC, the apps' zone without schedule_timezone): no
// boundary falls within the next two days.
func farSchedule(now time.Time) string {
	day := strings.ToLower(now.AddDate(0, 0, 3).Weekday().String())
	return fmt.Sprintf(`[{"day":%q,"start":"08:00","end":"12:00","value":21}]`, day)
}

// requester sends an API request as a user of the project, or as the
// operator: a Platform, or a Load on any deployment.
type requester interface {
	Do(ctx context.Context, method, path string, body, out any, asOperator bool) error
}

// roomComponent finds the catalog's room component and its
// temperature_setpoint pin.
func roomComponent(ctx context.Context, p requester) (component, pin int64, err error) {
	var comps []struct {
		ID             int64  `json:"id"`
		AlphanumericID string `json:"alphanumeric_id"`
	}
	if err := p.Do(ctx, "GET", "/v2/components", nil, &comps, false); err != nil {
		return 0, 0, err
	}
	for _, c := range comps {
		if c.AlphanumericID == "room" {
			component = c.ID
		}
	}
	if component == 0 {
		return 0, 0, fmt.Errorf("the catalog has no component room")
	}
	var pins []struct {
		ID             int64  `json:"id"`
		AlphanumericID string `json:"alphanumeric_id"`
	}
	if err := p.Do(ctx, "GET", fmt.Sprintf("/v2/component/%d/pins", component), nil, &pins, false); err != nil {
		return 0, 0, err
	}
	for _, pn := range pins {
		if pn.AlphanumericID == "temperature_setpoint" {
			return component, pn.ID, nil
		}
	}
	return 0, 0, fmt.Errorf("the room component has no pin temperature_setpoint")
}

// createScheduleApp maps a room of project pid whose setpoint pin is dp,
// gives it the schedule and a default of 17 and creates (not runs) its
// schedule app; it answers the app's id.
func createScheduleApp(ctx context.Context, p requester, pid, room, setpointPin int64, dp, schedule string) (string, error) {
	var cip struct {
		Resource struct {
			ID int64 `json:"id"`
		} `json:"resource"`
	}
	base := fmt.Sprintf("/v2/project/%d/componentInProject", pid)
	if err := p.Do(ctx, "POST", base, map[string]any{"component_id": room, "nameEN": "room " + dp}, &cip, false); err != nil {
		return "", err
	}
	id := cip.Resource.ID
	steps := []struct {
		path string
		body map[string]any
	}{
		{"/pin/datapoint", map[string]any{"componentinproject_id": id, "pin_id": setpointPin, "dataPointID": dp}},
		{"/attribute", map[string]any{"componentinproject_id": id, "key": "setpoint_schedule", "value": json.RawMessage(schedule)}},
		{"/attribute", map[string]any{"componentinproject_id": id, "key": "setpoint_schedule_default", "value": 17}},
	}
	for _, s := range steps {
		if err := p.Do(ctx, "POST", base+s.path, s.body, nil, false); err != nil {
			return "", err
		}
	}
	q := url.Values{"project_id": {fmt.Sprint(pid)}, "componentinproject_id": {fmt.Sprint(id)}, "algorithm": {"schedule"}, "name": {dp}}
	var app struct {
		Resource struct {
			ID string `json:"id"`
		} `json:"resource"`
	}
	err := p.Do(ctx, "POST", "/v2/controls/app?"+q.Encode(), nil, &app, false)
	return app.Resource.ID, err
}

// countRunning counts the apps whose status is Running (202) through the
// API, project by project.
func countRunning(ctx context.Context, p requester, projects []int64) (int, error) {
	n := 0
	for _, pid := range projects {
		var list struct {
			Items []json.RawMessage `json:"items"`
		}
		q := url.Values{"project_id": {fmt.Sprint(pid)}, "filter": {"status_code=202"}, "per_page": {"1000"}}
		if err := p.Do(ctx, "GET", "/v2/controls/apps?"+q.Encode(), nil, &list, false); err != nil {
			return 0, err
		}
		n += len(list.Items)
	}
	return n, nil
}

// forEachProject runs f for every project, workers at a time, and
// answers the first error.
func forEachProject(ctx context.Context, projects []int64, workers int, f func(int64) error) error {
	work := make(chan int64)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for pid := range work {
				if err := f(pid); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	go func() { wg.Wait(); close(errs) }()
	for _, pid := range projects {
		select {
		case work <- pid:
		case err := <-errs:
			close(work)
			return err
		case <-ctx.Done():
			close(work)
			return ctx.Err()
		}
	}
	close(work)
	for err := range errs {
		return err
	}
	return nil
}

// idleCPU waits d and answers the process's CPU over it as a
// percentage of one core, and the window's wall time.
func idleCPU(ctx context.Context, pid int, d time.Duration) (float64, time.Duration, error) {
	c0, err := processCPU(pid)
	if err != nil {
		return 0, 0, err
	}
	t0 := time.Now()
	select {
	case <-ctx.Done():
		return 0, 0, ctx.Err()
	case <-time.After(d):
	}
	c1, err := processCPU(pid)
	if err != nil {
		return 0, 0, err
	}
	window := time.Since(t0)
	return float64(c1-c0) / float64(window) * 100, window, nil
}

// clockTicks is Linux's USER_HZ, the unit of /proc/PID/stat's times
// (100 on every architecture Go supports there).
const clockTicks = 100

// processCPU answers a process's user+system CPU time so far.
func processCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return parseProcStatCPU(b)
}

// parseProcStatCPU reads utime and stime (fields 14 and 15) from a
// /proc/PID/stat line. The command name (field 2) is in parentheses and
// may itself hold spaces and parentheses, so the fields are counted from
// the last ')'.
func parseProcStatCPU(stat []byte) (time.Duration, error) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc stat: no command name in %q", stat)
	}
	fields := strings.Fields(string(stat[i+1:])) // from field 3, the state
	if len(fields) < 13 {
		return 0, fmt.Errorf("/proc stat: %d fields after the command name, want at least 13", len(fields))
	}
	var ticks int64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc stat: %w", err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}
