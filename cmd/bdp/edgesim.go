package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/openbdp/bdp/edge/sim"
	"github.com/openbdp/bdp/store"
)

const edgeSimUsage = `bdp edge-sim: a simulated edge device speaking the edge protocol (docs/edge-protocol.md)

Usage:
  bdp edge-sim -broker tcp://host:port -project N [-username U] [-password P]
               [-datapoints a,b=20,c] [-crash-after 10m] [-data-interval 60s]

The password may come from BDP_EDGE_SIM_PASSWORD instead of -password (kept
out of the process list). SIGUSR1 simulates a crash; SIGINT or SIGTERM stops.
`

// runEdgeSim runs one simulated edge device until ctx ends.
func runEdgeSim(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) error {
	cfg, crashAfter, err := parseEdgeSimFlags(args, getenv, stderr)
	if err != nil {
		return err
	}
	cfg.Log = slog.New(slog.NewTextHandler(stderr, nil))
	s, err := sim.New(cfg)
	if err != nil {
		return usageError{err.Error()}
	}
	crashSignal := make(chan os.Signal, 1)
	signal.Notify(crashSignal, syscall.SIGUSR1)
	defer signal.Stop(crashSignal)
	var crashTimer <-chan time.Time
	if crashAfter > 0 {
		crashTimer = time.After(crashAfter)
	}
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	cfg.Log.Info("edge-sim running", "broker", cfg.Broker, "project_id", cfg.ProjectID, "user", cfg.Username)
	for {
		select {
		case err := <-done:
			return err
		case <-crashSignal:
			s.Crash("SIGUSR1")
		case <-crashTimer:
			s.Crash("simulated crash after " + crashAfter.String())
		}
	}
}

func parseEdgeSimFlags(args []string, getenv func(string) string, stderr io.Writer) (sim.Config, time.Duration, error) {
	fs := flag.NewFlagSet("edge-sim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, edgeSimUsage); fs.PrintDefaults() }
	broker := fs.String("broker", "", "the platform's MQTT broker, tcp://host:port")
	project := fs.Int64("project", 0, "the project id")
	username := fs.String("username", "", "MQTT user (default edge-{project})")
	password := fs.String("password", "", "MQTT password (default $BDP_EDGE_SIM_PASSWORD)")
	datapoints := fs.String("datapoints", "", "writable datapoints, comma-separated, each optionally =relinquish default; empty: any datapoint")
	crashAfter := fs.Duration("crash-after", 0, "simulate a crash after this long (0: never)")
	state := fs.String("state", "", "file keeping the app definitions, so that a restart is a reboot of the same device; empty: none")
	dataInterval := fs.Duration("data-interval", sim.DefaultDataInterval, "how often every present value is published")
	if err := fs.Parse(args); err != nil {
		return sim.Config{}, 0, usageError{err.Error()}
	}
	if fs.NArg() > 0 {
		return sim.Config{}, 0, usageError{fmt.Sprintf("unexpected argument %q", fs.Arg(0))}
	}
	if err := checkMQTTURL(*broker); err != nil {
		return sim.Config{}, 0, usageError{"-broker " + err.Error()}
	}
	if *project <= 0 {
		return sim.Config{}, 0, usageError{"-project must be a project id"}
	}
	if *crashAfter < 0 {
		return sim.Config{}, 0, usageError{"-crash-after must not be negative"}
	}
	cfg := sim.Config{Broker: *broker, ProjectID: *project, Username: *username, Password: *password, DataInterval: *dataInterval, StateFile: *state}
	if cfg.Username == "" {
		cfg.Username = store.EdgeUsername(*project)
	}
	if cfg.Password == "" {
		cfg.Password = getenv("BDP_EDGE_SIM_PASSWORD")
	}
	points, err := parseDatapointList(*datapoints)
	if err != nil {
		return sim.Config{}, 0, usageError{"-datapoints: " + err.Error()}
	}
	cfg.Datapoints = points
	return cfg, *crashAfter, nil
}

// parseDatapointList reads "a,b=20,c": datapoints with optional relinquish
// defaults.
func parseDatapointList(s string) (map[string]*float64, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	out := map[string]*float64{}
	for _, item := range strings.Split(s, ",") {
		id, def, hasDefault := strings.Cut(strings.TrimSpace(item), "=")
		if id == "" {
			return nil, errors.New("empty datapoint id")
		}
		if _, dup := out[id]; dup {
			return nil, fmt.Errorf("datapoint %q twice", id)
		}
		out[id] = nil
		if hasDefault {
			v, err := strconv.ParseFloat(def, 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("relinquish default of %q is not a finite number", id)
			}
			out[id] = &v
		}
	}
	return out, nil
}
