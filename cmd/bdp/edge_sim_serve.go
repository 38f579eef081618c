package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/openbdp/bdp/auth"
	"github.com/openbdp/bdp/edge/sim"
	bdphttp "github.com/openbdp/bdp/http"
	"github.com/openbdp/bdp/store"
)

// edgeSimPoll is how often BDP_EDGE_SIMULATOR=1 looks for projects whose
// setpoint writing was enabled or disabled since.
const edgeSimPoll = 5 * time.Second

// edgeSimulators runs, inside bdp serve, one simulated edge device per
// project with setpoint writing enabled (decisions.md 7), over a real MQTT
// connection to the platform's broker. Being part of the platform, it gives
// each device fresh edge credentials through the store, as the operator
// route does: a real device of such a project loses its password.
type edgeSimulators struct {
	st        *store.Store
	hasher    *auth.Hasher
	passwords bdphttp.MQTTPasswords // external broker: the new password goes there too
	broker    string                // tcp://host:port
	log       *slog.Logger

	running map[int64]runningSim // by project id; only the poller goroutine touches it
}

type runningSim struct {
	sim  *sim.Simulator
	stop func() // stop and join
}

// edgeSimBroker is where the simulators connect: the external broker, or
// the embedded one's TCP listener (on loopback when it listens on all
// addresses).
func edgeSimBroker(cfg config, addrs map[string]string) string {
	if cfg.MQTTExternal != "" {
		return cfg.MQTTExternal
	}
	host, port, err := net.SplitHostPort(addrs["mqtt"])
	if err != nil {
		return "tcp://" + addrs["mqtt"]
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "tcp://" + net.JoinHostPort(host, port)
}

// startEdgeSimulators starts the simulators and a poller that follows the
// projects' settings; the returned func stops and joins all of them.
func startEdgeSimulators(st *store.Store, hasher *auth.Hasher, passwords bdphttp.MQTTPasswords, broker string, log *slog.Logger) func() {
	e := &edgeSimulators{st: st, hasher: hasher, passwords: passwords, broker: broker, log: log.With("component", "edge-sim"),
		running: map[int64]runningSim{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	// SIGUSR1 crashes every simulator, as it does one `bdp edge-sim`.
	crash := make(chan os.Signal, 1)
	signal.Notify(crash, syscall.SIGUSR1)
	go func() {
		defer close(done)
		defer signal.Stop(crash)
		tick := time.NewTicker(edgeSimPoll)
		defer tick.Stop()
		e.sync(ctx)
		for {
			select {
			case <-ctx.Done():
				return
			case <-crash:
				for _, r := range e.running {
					r.sim.Crash("SIGUSR1 to bdp serve")
				}
				e.log.Info("edge simulators crashed (SIGUSR1)", "count", len(e.running))
			case <-tick.C:
				e.sync(ctx)
			}
		}
	}()
	e.log.Info("edge simulators enabled", "broker", broker, "poll", edgeSimPoll)
	return func() {
		cancel()
		<-done
		for id, r := range e.running {
			r.stop()
			delete(e.running, id)
		}
	}
}

// sync starts a simulator for every project that newly has setpoint
// writing enabled and stops those of projects that no longer have it.
func (e *edgeSimulators) sync(ctx context.Context) {
	ids, err := e.st.SetpointWritingProjects(ctx)
	if err != nil {
		if ctx.Err() == nil {
			e.log.Error("edge simulators", slog.Any("error", err))
		}
		return
	}
	for id, r := range e.running {
		if !slices.Contains(ids, id) {
			r.stop()
			delete(e.running, id)
			e.log.Info("edge simulator stopped", "project_id", id)
		}
	}
	for _, id := range ids {
		if _, ok := e.running[id]; ok {
			continue
		}
		r, err := e.start(ctx, id)
		if err != nil {
			e.log.Error("edge simulator not started", "project_id", id, slog.Any("error", err))
			continue // tried again at the next poll
		}
		e.running[id] = r
		e.log.Info("edge simulator started", "project_id", id)
	}
}

func (e *edgeSimulators) start(ctx context.Context, projectID int64) (runningSim, error) {
	raw := make([]byte, 24)
	if _, err := rand.Read(raw); err != nil {
		return runningSim{}, err
	}
	password := base64.RawURLEncoding.EncodeToString(raw)
	hash, err := e.hasher.Hash(ctx, password)
	if err != nil {
		return runningSim{}, err
	}
	u, err := e.st.PutEdgeCredentials(ctx, projectID, hash)
	if err != nil {
		return runningSim{}, fmt.Errorf("edge credentials: %w", err)
	}
	if e.passwords != nil {
		if err := e.passwords.SetPassword(ctx, u, password); err != nil {
			return runningSim{}, fmt.Errorf("hand the password to the external broker: %w", err)
		}
	}
	s, err := sim.New(sim.Config{Broker: e.broker, Username: u.Username, Password: password, ProjectID: projectID,
		ClientID: "bdp-edge-sim-" + fmt.Sprint(projectID), Log: e.log})
	if err != nil {
		return runningSim{}, err
	}
	runCtx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := s.Run(runCtx); err != nil {
			e.log.Error("edge simulator stopped", "project_id", projectID, slog.Any("error", err))
		}
	}()
	return runningSim{sim: s, stop: func() { cancel(); wg.Wait() }}, nil
}
