package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"sync"
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

	running map[int64]func() // project id -> stop and join its simulator
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
		running: map[int64]func(){}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(edgeSimPoll)
		defer tick.Stop()
		for {
			if err := e.sync(ctx); err != nil && ctx.Err() == nil {
				e.log.Error("edge simulators", slog.Any("error", err))
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	e.log.Info("edge simulators enabled", "broker", broker, "poll", edgeSimPoll)
	return func() {
		cancel()
		<-done
		for id, stop := range e.running {
			stop()
			delete(e.running, id)
		}
	}
}

// sync starts a simulator for every project that newly has setpoint
// writing enabled and stops those of projects that no longer have it.
func (e *edgeSimulators) sync(ctx context.Context) error {
	ids, err := e.st.SetpointWritingProjects(ctx)
	if err != nil {
		return err
	}
	for id, stop := range e.running {
		if !slices.Contains(ids, id) {
			stop()
			delete(e.running, id)
			e.log.Info("edge simulator stopped", "project_id", id)
		}
	}
	for _, id := range ids {
		if _, ok := e.running[id]; ok {
			continue
		}
		stop, err := e.start(ctx, id)
		if err != nil {
			e.log.Error("edge simulator not started", "project_id", id, slog.Any("error", err))
			continue // tried again at the next poll
		}
		e.running[id] = stop
		e.log.Info("edge simulator started", "project_id", id)
	}
	return nil
}

func (e *edgeSimulators) start(ctx context.Context, projectID int64) (func(), error) {
	raw := make([]byte, 24)
	if _, err := rand.Read(raw); err != nil {
		return nil, err
	}
	password := base64.RawURLEncoding.EncodeToString(raw)
	hash, err := e.hasher.Hash(ctx, password)
	if err != nil {
		return nil, err
	}
	u, err := e.st.PutEdgeCredentials(ctx, projectID, hash)
	if err != nil {
		return nil, fmt.Errorf("edge credentials: %w", err)
	}
	if e.passwords != nil {
		if err := e.passwords.SetPassword(ctx, u, password); err != nil {
			return nil, fmt.Errorf("hand the password to the external broker: %w", err)
		}
	}
	s, err := sim.New(sim.Config{Broker: e.broker, Username: u.Username, Password: password, ProjectID: projectID,
		ClientID: "bdp-edge-sim-" + fmt.Sprint(projectID), Log: e.log})
	if err != nil {
		return nil, err
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
	return func() { cancel(); wg.Wait() }, nil
}
