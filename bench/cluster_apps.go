package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/openbdp/bdp/edge"
	"github.com/openbdp/bdp/edge/sim"
)

// clusterApps is the controls side of bdp-bench cluster: projects whose
// simulated edge devices (in this process, on the cluster's broker) take
// the writes of schedule apps whose value changes on every minute, and
// projects whose devices crash now and then. The kill, the rejoin and the
// graceful stop move them between nodes. It counts, on the devices, the
// writes of each app per schedule minute and, in the apps' logs, the
// entries of each event the devices delivered.
type clusterApps struct {
	load     *Load
	broker   string                   // the devices connect here
	writers  map[int64]*sim.Simulator // project -> device of the schedule apps
	crashing map[int64]*sim.Simulator // project -> device that crashes
	apps     map[int64][]string       // project -> its apps' ids
	rooms    int
	started  time.Time // every app Running: the first minute counted begins after

	stopCrashes func()
	crashes     sync.WaitGroup
}

// Device timings of the scenario: heartbeats every second, so an event
// reaches the platform within one; a crash reboots within 200 ms and
// reloads its apps 500 ms later.
const (
	appsAliveInterval = time.Second
	appsBootDelay     = 200 * time.Millisecond
	appsReloadDelay   = 500 * time.Millisecond
)

// startClusterApps creates writers projects with rooms schedule apps each
// and crashers projects with one app each, connects their devices to
// broker, runs every app and waits until all are Running; then the
// crashing devices crash every crashEvery until close.
func startClusterApps(ctx context.Context, l *Load, broker string, writers, rooms, crashers int, crashEvery time.Duration) (*clusterApps, error) {
	c := &clusterApps{load: l, broker: broker, writers: map[int64]*sim.Simulator{}, crashing: map[int64]*sim.Simulator{}, apps: map[int64][]string{}, rooms: rooms}
	room, pin, err := roomComponent(ctx, l)
	if err != nil {
		return nil, err
	}
	devCtx, stopDevices := context.WithCancel(context.WithoutCancel(ctx))
	crashCtx, stopCrashes := context.WithCancel(devCtx)
	c.stopCrashes = func() { stopCrashes(); c.crashes.Wait(); stopDevices() }
	every := minuteSchedule(time.Now().UTC(), 60)
	for i := range writers + crashers {
		crashes := i >= writers
		n, schedule := rooms, every
		if crashes {
			n, schedule = 1, farSchedule(time.Now().UTC())
		}
		pid, dev, err := c.project(ctx, devCtx, fmt.Sprintf("apps-%d", i), n, room, pin, schedule)
		if err != nil {
			c.stopCrashes()
			return nil, err
		}
		if crashes {
			c.crashing[pid] = dev
		} else {
			c.writers[pid] = dev
		}
	}
	var projects []int64
	for pid := range c.apps {
		projects = append(projects, pid)
		if err := l.Do(ctx, "POST", fmt.Sprintf("/v2/controls/apps/run?project_id=%d", pid), map[string]any{"run": true}, nil, false); err != nil {
			c.stopCrashes()
			return nil, err
		}
	}
	want := writers*rooms + crashers
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		n, err := countRunning(ctx, l, projects)
		if err == nil && n == want {
			break
		}
		if time.Now().After(deadline) {
			c.stopCrashes()
			return nil, fmt.Errorf("after a minute %d of %d controls apps are Running (%v)", n, want, err)
		}
	}
	c.started = time.Now()
	for _, dev := range c.crashing {
		c.crashes.Add(1)
		go func() {
			defer c.crashes.Done()
			for tick := time.NewTicker(crashEvery); ; {
				select {
				case <-crashCtx.Done():
					tick.Stop()
					return
				case <-tick.C:
					dev.Crash("bdp-bench cluster power loss")
				}
			}
		}()
	}
	return c, nil
}

// project makes one project with setpoint writing, its device online and
// rooms schedule apps created; the device runs until devCtx ends.
func (c *clusterApps) project(ctx, devCtx context.Context, name string, rooms int, room, pin int64, schedule string) (int64, *sim.Simulator, error) {
	l := c.load
	var pr struct {
		Resource struct {
			Project struct{ ID int64 } `json:"project"`
		} `json:"resource"`
	}
	if err := l.Do(ctx, "POST", "/v2/company/project", map[string]any{"name": name}, &pr, false); err != nil {
		return 0, nil, err
	}
	pid := pr.Resource.Project.ID
	if err := l.Do(ctx, "PUT", fmt.Sprintf("/operator/projects/%d/settings", pid), map[string]any{"setpoint_writing_enabled": true}, nil, true); err != nil {
		return 0, nil, err
	}
	dev, err := simulatedDevice(ctx, l, pid, sim.Config{Broker: c.broker, AliveInterval: appsAliveInterval, BootDelay: appsBootDelay, ReloadDelay: appsReloadDelay})
	if err != nil {
		return 0, nil, err
	}
	go func() { _ = dev.Run(devCtx) }()
	for r := range rooms {
		dp := fmt.Sprintf("room%d_sp", r)
		if err := l.Do(ctx, "PUT", fmt.Sprintf("/operator/projects/%d/datapoints/%s/tags", pid, url.PathEscape(dp)), []map[string]any{{"key": "units", "value": "degC"}}, nil, true); err != nil {
			return 0, nil, err
		}
		if err := l.Do(ctx, "PUT", fmt.Sprintf("/v2/datapoint?project_id=%d&dataPointID=%s", pid, url.QueryEscape(dp)), map[string]any{"setpoint_min_value": 15, "setpoint_max_value": 25}, nil, false); err != nil {
			return 0, nil, err
		}
		id, err := createScheduleApp(ctx, l, pid, room, pin, dp, schedule)
		if err != nil {
			return 0, nil, err
		}
		c.apps[pid] = append(c.apps[pid], id)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		var st struct {
			Online bool `json:"online"`
		}
		if err := l.Do(ctx, "GET", fmt.Sprintf("/v2/project/%d/edge", pid), nil, &st, false); err == nil && st.Online {
			return pid, dev, nil
		}
		if time.Now().After(deadline) {
			return 0, nil, fmt.Errorf("the device of project %d is not online after a minute", pid)
		}
	}
}

// minuteSchedule is a setpoint_schedule whose value changes on each of
// the next minutes after now: 21, 22 and 23 in turn for one minute, the
// default (17) the next. Entries that would cross midnight are left out.
func minuteSchedule(now time.Time, minutes int) string {
	var entries []string
	for m := 1; m+1 <= minutes; m += 2 {
		from, to := now.Truncate(time.Minute).Add(time.Duration(m)*time.Minute), now.Truncate(time.Minute).Add(time.Duration(m+1)*time.Minute)
		if from.Day() != to.Day() {
			continue
		}
		entries = append(entries, fmt.Sprintf(`{"day":%q,"start":%q,"end":%q,"value":%d}`,
			strings.ToLower(from.Weekday().String()), from.Format("15:04"), to.Format("15:04"), 21+(m/2)%3))
	}
	return "[" + strings.Join(entries, ",") + "]"
}

// close stops the crashes and the devices, and deletes the projects with
// their apps, so that nothing of them runs on the nodes that follow.
func (c *clusterApps) close(ctx context.Context) error {
	c.stopCrashes()
	for pid := range c.apps {
		if err := c.load.Do(ctx, "DELETE", fmt.Sprintf("/v2/project/%d", pid), nil, nil, false); err != nil {
			return err
		}
		delete(c.apps, pid)
	}
	return nil
}

// writesPerMinute answers the most and the fewest writes one app's device
// took in one minute, over the minutes that began after the apps started
// and at least boundaryDue before until: each minute's value is due once
// (a schedule boundary on every minute), whichever node runs the app
// then.
func (c *clusterApps) writesPerMinute(until time.Time) (most, fewest int) {
	const boundaryDue = 10 * time.Second // the failover's bound
	first, last := c.started.Truncate(time.Minute).Add(time.Minute), until.Add(-boundaryDue).Truncate(time.Minute)
	if first.After(last) {
		return 0, 0
	}
	fewest = -1
	for _, dev := range c.writers {
		counts := map[string]int{}
		for _, w := range dev.Writes() {
			if at := w.Time.Truncate(time.Minute); !at.Before(first) && !at.After(last) {
				counts[w.DataPointID+" "+at.Format(time.RFC3339)]++
			}
		}
		for r := range c.rooms {
			for at := first; !at.After(last); at = at.Add(time.Minute) {
				n := counts[fmt.Sprintf("room%d_sp %s", r, at.Format(time.RFC3339))]
				most = max(most, n)
				if fewest < 0 || n < fewest {
					fewest = n
				}
			}
		}
	}
	return most, fewest
}

// eventsLogged answers the most and the fewest entries one delivered
// device event has in the logs of the apps it concerns (a crash: every
// app of the device; a reload: its app), waiting up to within for the
// events the devices delivered last.
func (c *clusterApps) eventsLogged(ctx context.Context, within time.Duration) (most, fewest, events int, err error) {
	for deadline := time.Now().Add(within); ; time.Sleep(time.Second) {
		most, fewest, events, err = c.countEvents(ctx)
		if err != nil || fewest >= 1 || time.Now().After(deadline) {
			return most, fewest, events, err
		}
	}
}

func (c *clusterApps) countEvents(ctx context.Context) (most, fewest, events int, err error) {
	fewest = -1
	for pid, dev := range c.crashing {
		logged := map[string]int{} // app, kind and device time -> entries
		for _, id := range c.apps[pid] {
			var list struct {
				Items []struct {
					Kind   string          `json:"kind"`
					Detail json.RawMessage `json:"detail"`
				} `json:"items"`
			}
			path := fmt.Sprintf("/v2/controls/app/%s/logs?project_id=%d&sort_order=asc&per_page=1000", id, pid)
			if err := c.load.Do(ctx, "GET", path, nil, &list, false); err != nil {
				return 0, 0, 0, err
			}
			for _, item := range list.Items {
				var d struct{ Event, Time string }
				if item.Kind == "device" && json.Unmarshal(item.Detail, &d) == nil {
					logged[id+" "+d.Event+" "+d.Time]++
				}
			}
		}
		for _, e := range dev.Events() {
			concerned := []string{e.AppID}
			if e.Kind == edge.EventCrash {
				concerned = c.apps[pid]
			}
			for _, id := range concerned {
				n := logged[id+" "+e.Kind+" "+e.Time.UTC().Format(time.RFC3339Nano)]
				events++
				most = max(most, n)
				if fewest < 0 || n < fewest {
					fewest = n
				}
			}
		}
	}
	return most, max(fewest, 0), events, nil
}
