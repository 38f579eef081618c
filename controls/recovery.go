package controls

import (
	"strconv"
	"strings"
	"time"

	"github.com/openbdp/bdp/edge"
)

// Subscriber is how the runtime hears the devices' heartbeats
// (mqtt.Broker).
type Subscriber interface {
	Subscribe(filter string, handler func(topic string, payload []byte)) (unsubscribe func(), err error)
}

// reassert asks an app's actor to write its current value again; why
// goes to the app's log.
type reassert struct{ why string }

// WatchDevices listens to every device's heartbeat. When a device
// reports that it reloaded an app after a crash (its priority arrays
// lost) or restarted one after its alive time-out had written the reset
// values (auto-recovery), the app's actor writes its current value
// again, so the building gets the app's setpoint back at once, not at the
// next boundary. When the device's list of apps lacks an app running
// here, the app is registered on it again (reconcile.go). The handler
// runs on the broker's delivery: it only hands over, and decodes only
// the heartbeats of projects with apps running here.
func (r *Runtime) WatchDevices(b Subscriber) (stop func(), err error) {
	return b.Subscribe("edge/+/alive", func(topic string, payload []byte) {
		heard := time.Now()
		rest, ok := strings.CutPrefix(topic, "edge/")
		p, ok2 := strings.CutSuffix(rest, "/alive")
		projectID, err := strconv.ParseInt(p, 10, 64)
		if !ok || !ok2 || err != nil {
			return
		}
		here := r.appsOf(projectID)
		if len(here) == 0 {
			return
		}
		a, err := edge.DecodeAlive(payload)
		if err != nil {
			return // garbage is the connection actor's to count
		}
		for _, e := range a.Events {
			if e.Kind == edge.EventReload || e.Kind == edge.EventRecovered {
				r.Reassert(projectID, strings.ToLower(e.AppID))
			}
		}
		r.reconcile(here, a.Apps, heard)
	})
}

// Reassert makes a running app of the project write its current value
// again; an app not running here is left alone.
func (r *Runtime) Reassert(projectID int64, appID string) {
	r.mu.Lock()
	pid := r.running[appID]
	var reg *registration
	if pid != nil {
		reg = r.plans[pid.Id]
	}
	r.mu.Unlock()
	if reg == nil || reg.plan.App.ProjectID != projectID {
		return // another project's device cannot move this app
	}
	r.system.Root.Send(pid, &reassert{why: "the edge device reloaded or recovered the app"})
}

// DeviceBack makes the running apps of a project write their values
// again when its edge device is online again after it was offline
// (edge.Setpoints.WatchBackOnline): a write meant for the device
// meanwhile failed (at once when its connection had ended), and the app
// would otherwise wait for its next boundary or input to write again.
// Runs on the edge connection's goroutine: it only hands over.
func (r *Runtime) DeviceBack(projectID int64) {
	for _, pid := range r.appsOf(projectID) {
		r.system.Root.Send(pid, &reassert{why: "the edge device is online again (a write meant for it meanwhile may have failed)"})
	}
}
