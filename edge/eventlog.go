package edge

import (
	"context"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/openbdp/bdp/codec"
	"github.com/openbdp/bdp/mqtt"
	"github.com/openbdp/bdp/store"
)

// EventLog writes the events edge devices report in their heartbeats
// (crash, reload, reset, recovered; docs/edge-protocol.md) into the logs of
// the controls apps they concern (api.md 4.6): an app's event to that app,
// a crash to every app the heartbeat lists. It listens on edge/+/alive
// beside the connection actors; the broker's ACL keeps a device to its own
// project's topics, so the topic names the project.
type EventLog struct {
	st     *store.Store
	log    *slog.Logger
	queue  chan deviceAlive
	ctx    context.Context
	cancel context.CancelFunc
	done   sync.WaitGroup
	unsub  func()
}

type deviceAlive struct {
	projectID int64
	alive     Alive
}

// eventQueue bounds the heartbeats with events waiting to be logged;
// beyond, they are dropped with a warning (the broker's delivery must not
// wait for the database).
const eventQueue = 256

// StartEventLog subscribes to every project's alive topic. In a cluster
// every node hears every heartbeat and logs its events: the store keeps
// each event once (store.LogDeviceEvent), and an event heard while the
// node that runs the project's connection dies is still logged by the
// others.
func StartEventLog(broker mqtt.Broker, st *store.Store, log *slog.Logger) (*EventLog, error) {
	ctx, cancel := context.WithCancel(context.Background())
	l := &EventLog{st: st, log: log.With(slog.String("part", "edge-events")), queue: make(chan deviceAlive, eventQueue), ctx: ctx, cancel: cancel}
	l.done.Add(1)
	go l.run()
	unsub, err := broker.Subscribe("edge/+/alive", l.received)
	if err != nil {
		l.Close()
		return nil, err
	}
	l.unsub = unsub
	return l, nil
}

// Close unsubscribes and waits for the events being logged.
func (l *EventLog) Close() {
	if l.unsub != nil {
		l.unsub()
	}
	l.cancel()
	l.done.Wait()
}

func (l *EventLog) received(topic string, payload []byte) {
	rest, ok := strings.CutPrefix(topic, "edge/")
	p, ok2 := strings.CutSuffix(rest, "/alive")
	projectID, err := strconv.ParseInt(p, 10, 64)
	if !ok || !ok2 || err != nil || projectID <= 0 {
		return
	}
	if !MayHoldEvents(payload) {
		return
	}
	a, err := DecodeAlive(payload)
	if err != nil || len(a.Events) == 0 {
		return // garbage is the connection actor's to count
	}
	select {
	case l.queue <- deviceAlive{projectID: projectID, alive: a}:
	default:
		l.log.Warn("device events dropped: queue full", slog.Int64("project_id", projectID), slog.Int("events", len(a.Events)))
	}
}

func (l *EventLog) run() {
	defer l.done.Done()
	for {
		select {
		case <-l.ctx.Done():
			return
		case d := <-l.queue:
			for _, e := range d.alive.Events {
				l.record(d.projectID, d.alive, e)
			}
		}
	}
}

// eventLevels: what needs an operator's eye is a warning.
var eventLevels = map[string]string{EventCrash: store.LogWarning, EventReset: store.LogWarning,
	EventReload: store.LogInfo, EventRecovered: store.LogInfo}

var eventTexts = map[string]string{
	EventCrash:     "edge device crashed (lost its memory)",
	EventReload:    "edge device reloaded the app after a crash",
	EventReset:     "edge device lost the platform past the app's alive time-out: reset values written, app stopped",
	EventRecovered: "edge device restarted the app: the platform is back",
}

func (l *EventLog) record(projectID int64, a Alive, e Event) {
	apps := []string{e.AppID}
	if e.Kind == EventCrash {
		apps = apps[:0]
		for _, s := range a.Apps {
			apps = append(apps, s.ID)
		}
	}
	at := e.Time.UTC().Format(time.RFC3339Nano)
	key := e.Kind + " " + at // the device's event, whichever node hears it
	detail := map[string]any{"event": e.Kind, "time": at, "message": e.Message}
	msg := eventTexts[e.Kind]
	if e.Message != "" {
		msg += ": " + e.Message
	}
	for _, id := range slices.Compact(slices.Sorted(slices.Values(apps))) {
		if !codec.IsUUID(id) {
			continue // not a platform app (its ids are uuids)
		}
		if _, err := l.st.LogDeviceEvent(l.ctx, projectID, strings.ToLower(id), key, eventLevels[e.Kind], msg, detail); err != nil && l.ctx.Err() == nil {
			l.log.Error("device event not logged", slog.Int64("project_id", projectID), slog.String("app_id", id), slog.Any("error", err))
		}
	}
}
