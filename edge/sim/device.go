package sim

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/openbdp/bdp/edge"
)

// device is the simulated controller's state, without MQTT: priority arrays
// (volatile, lost in a crash), apps, and the non-volatile part a crash keeps
// (app definitions, which apps were running, the undelivered event log).
// The Simulator guards it with its mutex.
type device struct {
	// fixed: with known set, only these datapoints are writable; otherwise a
	// datapoint's priority array is created on its first write or read.
	known    map[string]*float64 // dataPointID -> relinquish default
	fixedSet bool

	// volatile
	points    map[string]*point
	running   map[string]bool // app id -> running now
	suspended map[string]bool // app id -> stopped by its alive time-out, restarted when the platform returns
	lastHeard time.Time       // last request from the platform

	// non-volatile ("flash")
	saved  map[string]savedApp
	events []edge.Event
}

type savedApp struct {
	def     edge.App
	running bool // what the platform asked for; reloaded after a crash
}

// point is one writable datapoint: BACnet priorities 1..16 at index 0..15,
// the relinquish default at index 16.
// The simulator has no out-of-service flag: keep_out_of_service is accepted
// and has no effect.
type point struct {
	slots [edge.PrioritySlots]*float64
}

// present is the most urgent non-null slot, else the relinquish default
// (nil when that is null too).
func (p *point) present() *float64 {
	for _, v := range p.slots {
		if v != nil {
			return v
		}
	}
	return nil
}

func (p *point) array() []*float64 {
	out := make([]*float64, edge.PrioritySlots)
	for i, v := range p.slots {
		out[i] = copyValue(v)
	}
	return out
}

func copyValue(v *float64) *float64 {
	if v == nil {
		return nil
	}
	c := *v
	return &c
}

func newDevice(known map[string]*float64, now time.Time) *device {
	d := &device{known: known, fixedSet: len(known) > 0, saved: map[string]savedApp{}}
	d.boot(now)
	return d
}

// boot sets up the volatile state as after power-on: every priority slot
// null, the relinquish defaults configured, no app running yet.
func (d *device) boot(now time.Time) {
	d.points = map[string]*point{}
	for id, def := range d.known {
		p := &point{}
		p.slots[edge.RelinquishDefault] = copyValue(def)
		d.points[id] = p
	}
	d.running = map[string]bool{}
	d.suspended = map[string]bool{}
	d.lastHeard = now
}

func (d *device) point(id string) (*point, error) {
	if p, ok := d.points[id]; ok {
		return p, nil
	}
	if d.fixedSet {
		return nil, fmt.Errorf("unknown datapoint %q", id)
	}
	if len(d.points) >= maxAutoPoints {
		return nil, fmt.Errorf("device holds %d datapoints, no more", maxAutoPoints)
	}
	p := &point{}
	d.points[id] = p
	return p, nil
}

// maxAutoPoints bounds the datapoints a device without a fixed list creates.
const maxAutoPoints = 10000

func (d *device) logEvent(now time.Time, kind, appID, msg string) {
	d.events = append(d.events, edge.Event{Time: now.UTC(), Kind: kind, AppID: appID, Message: msg})
	if over := len(d.events) - edge.MaxEvents; over > 0 {
		d.events = slices.Delete(d.events, 0, over) // keep the newest
	}
}

// changed lists datapoints whose present value an operation changed.
type changed map[string]*float64

func (c changed) note(id string, before, after *float64) {
	if !sameValue(before, after) {
		c[id] = after
	}
}

func sameValue(a, b *float64) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// handle answers one request; every request counts as the platform being
// there (apps' alive time-outs count from the last one).
func (d *device) handle(now time.Time, r edge.Request) (edge.Response, changed) {
	d.lastHeard = now
	ch := changed{}
	d.recover(now)
	resp := edge.Response{Reference: r.Reference, Status: edge.StatusOK}
	fail := func(err error) (edge.Response, changed) {
		return edge.Response{Reference: r.Reference, Status: edge.StatusError, Error: err.Error()}, ch
	}
	switch r.Operation {
	case edge.OpWrite:
		p, err := d.point(r.DataPointID)
		if err != nil {
			return fail(err)
		}
		before := p.present()
		resp.PriorityArray = p.array()
		resp.OverwrittenValue = copyValue(p.slots[r.Priority-1])
		p.slots[r.Priority-1] = copyValue(r.Value)
		resp.PresentValue = copyValue(p.present())
		ch.note(r.DataPointID, before, p.present())
	case edge.OpRead:
		p, err := d.point(r.DataPointID)
		if err != nil {
			return fail(err)
		}
		resp.PriorityArray = p.array()
		resp.PresentValue = copyValue(p.present())
	case edge.OpAppStart:
		if err := d.checkApp(*r.App); err != nil {
			return fail(err)
		}
		if _, ok := d.saved[r.App.ID]; !ok && len(d.saved) >= edge.MaxApps {
			return fail(fmt.Errorf("device holds %d apps, no more", edge.MaxApps))
		}
		d.saved[r.App.ID] = savedApp{def: *r.App, running: true}
		d.running[r.App.ID] = true
		delete(d.suspended, r.App.ID)
	case edge.OpAppConfig:
		s, ok := d.saved[r.App.ID]
		if !ok {
			return fail(fmt.Errorf("unknown app %q (app_start defines it)", r.App.ID))
		}
		if err := d.checkApp(*r.App); err != nil {
			return fail(err)
		}
		s.def = *r.App
		d.saved[r.App.ID] = s
	case edge.OpAppStop:
		s, ok := d.saved[r.App.ID]
		if !ok {
			return fail(fmt.Errorf("unknown app %q", r.App.ID))
		}
		s.running = false
		d.saved[r.App.ID] = s
		delete(d.running, r.App.ID)
		delete(d.suspended, r.App.ID)
		d.writeResetValues(s.def, ch)
	case edge.OpPing:
	}
	return resp, ch
}

// checkApp refuses an app that writes a datapoint this device does not have.
func (d *device) checkApp(a edge.App) error {
	for _, w := range a.Writes {
		if _, err := d.point(w.DataPointID); err != nil {
			return fmt.Errorf("app %q: %w", a.ID, err)
		}
	}
	return nil
}

// writeResetValues writes an app's reset values at the app's priorities (a
// null reset value relinquishes the slot).
func (d *device) writeResetValues(a edge.App, ch changed) {
	for _, w := range a.Writes {
		p, err := d.point(w.DataPointID)
		if err != nil {
			continue // checked at app_start; a fixed device does not lose points
		}
		before := p.present()
		p.slots[w.Priority-1] = copyValue(w.ResetValue)
		ch.note(w.DataPointID, before, p.present())
	}
}

// expire stops every running app whose alive time-out has passed since the
// platform was last heard from, after writing its reset values.
func (d *device) expire(now time.Time) changed {
	ch := changed{}
	for _, id := range slices.Sorted(maps.Keys(d.running)) {
		def := d.saved[id].def
		if def.AliveTimeout <= 0 || now.Sub(d.lastHeard) <= time.Duration(def.AliveTimeout)*time.Second {
			continue
		}
		d.writeResetValues(def, ch)
		delete(d.running, id)
		d.suspended[id] = true
		d.logEvent(now, edge.EventReset, id, fmt.Sprintf("platform not heard from for %s (alive time-out %d s): reset values written, app stopped",
			now.Sub(d.lastHeard).Round(time.Second), def.AliveTimeout))
	}
	return ch
}

// recover restarts apps their alive time-out stopped: the platform is back.
func (d *device) recover(now time.Time) {
	for _, id := range slices.Sorted(maps.Keys(d.suspended)) {
		delete(d.suspended, id)
		if !d.saved[id].running {
			continue
		}
		d.running[id] = true
		d.logEvent(now, edge.EventRecovered, id, "platform back: app restarted")
	}
}

// crash loses the volatile state, as a power loss or a reboot does.
func (d *device) crash(now time.Time, reason string) {
	d.boot(now)
	d.logEvent(now, edge.EventCrash, "", reason)
}

// reload restarts the apps that were running before a crash.
func (d *device) reload(now time.Time) {
	for _, id := range slices.Sorted(maps.Keys(d.saved)) {
		if d.saved[id].running && !d.running[id] && !d.suspended[id] {
			d.running[id] = true
			d.logEvent(now, edge.EventReload, id, "app reloaded after a crash")
		}
	}
}

// alive is the heartbeat with the undelivered events; takeEvents(n) drops
// the first n once the heartbeat is delivered.
func (d *device) alive(now time.Time) edge.Alive {
	a := edge.Alive{Time: now.UTC(), Apps: []edge.AppState{}}
	for _, id := range slices.Sorted(maps.Keys(d.saved)) {
		a.Apps = append(a.Apps, edge.AppState{ID: id, Running: d.running[id]})
	}
	a.Events = slices.Clone(d.events)
	return a
}

func (d *device) takeEvents(n int) {
	d.events = slices.Delete(d.events, 0, min(n, len(d.events)))
}

// observations are the present values of every datapoint that has one.
func (d *device) observations(now time.Time) []edge.Observation {
	var out []edge.Observation
	for _, id := range slices.Sorted(maps.Keys(d.points)) {
		if v := d.points[id].present(); v != nil {
			out = append(out, edge.Observation{DataPointID: id, Time: now.UTC(), Value: *v})
		}
	}
	return out
}
