package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
)

// LoadOptions describe a deployment (one node or several) and the
// workload bdp-bench load drives against it.
type LoadOptions struct {
	HTTP []string // the nodes' base URLs; each request goes to one at random
	// OperatorToken creates a company and project of the harness's own,
	// the project deleted at the end (Close). Without it, Email, Password and ProjectID name a
	// project to work inside, whose datapoints the harness names with
	// Prefix and leaves there.
	OperatorToken   string
	Email, Password string
	ProjectID       int64
	Prefix          string // names of the harness's datapoints; default "load-"

	VDPs    int // running virtual datapoints, VDP i reading source i%Sources; with Mix, its total
	Sources int // source datapoints

	// Mix is how many datapoints of each kind (VDPKind) run; empty: VDPs
	// formula datapoints, VDP i = source i%Sources × (i+1).
	Mix map[VDPKind]int
	// Rates are the observations per second of each path (FeedRate); the
	// sources are shared out between the paths with a rate in proportion
	// to it, each source always on the same path. Empty: every source on
	// HTTP.
	Rates        map[Path]int
	KafkaBrokers []string // with a Kafka rate: the brokers
	KafkaTopic   string   // and the topic the deployment consumes (BDP_KAFKA_TOPIC)
	// MQTT are broker URLs (tcp://host:port), tried in turn: MQTT
	// ingestion, live subscribers and the simulated edge device connect
	// there.
	MQTT []string
	// Span is how many rounds the run feeds at most: round 0 lies that
	// many minutes, and at least a day, before the start, so that every
	// round is in the past.
	Span int
}

// Load is a workload on a deployment: virtual datapoints it created and
// ran, and the observations it sent and had acknowledged, to check every
// output against.
type Load struct {
	opts       LoadOptions
	client     *http.Client
	start      time.Time        // the time of round 0
	kinds      []VDPKind        // per datapoint
	bounded    bool             // humidity datapoints run: source values within 0..99, a temperature stored
	sourcePath []Path           // per source: the path that carries it
	onPath     map[Path][]int   // the sources each path carries
	kafkaQueue chan kafkaQueued // messages for the producer
	mqtt       paho.Client
	mqttSlots  chan struct{}  // a slot per publish waiting for its PUBACK
	mqttWaits  sync.WaitGroup // the waits for PUBACKs

	mu         sync.Mutex
	rounds     int                // rounds acknowledged on every path, in order
	dispatched int                // rounds handed to the paths
	pending    map[int]int        // round -> observations not acknowledged yet
	advanced   chan struct{}      // closed and replaced whenever rounds grows
	failed     error              // an asynchronous path's failure: the feed stops
	stopped    map[int]int        // datapoint -> rounds acknowledged when its stop was answered
	commands   []time.Duration    // the time of every command (run, stop, status)
	paths      map[Path]*pathLoad // what each path had acknowledged
	created    bool               // the project is the harness's own (operator token): Close deletes it
	mqttUsers  []int64            // MQTT users the harness created, deleted by Close
	closeFuncs []func()           // what Close stops before it deletes anything
}

// StartLoad creates the company (with an operator token) and project,
// connects the paths, and creates and runs the virtual datapoints, each
// through a node at random.
func StartLoad(ctx context.Context, opts LoadOptions) (*Load, error) {
	kinds := layOutKinds(opts.Mix, opts.VDPs)
	opts.VDPs = len(kinds)
	if len(opts.HTTP) == 0 || opts.VDPs <= 0 || opts.Sources <= 0 {
		return nil, fmt.Errorf("load: nodes, datapoints and sources are required")
	}
	if opts.Prefix == "" {
		opts.Prefix = "load-"
	}
	sourcePath, err := assignPaths(opts.Rates, opts.Sources)
	if err != nil {
		return nil, err
	}
	back := max(24*time.Hour, time.Duration(opts.Span+60)*time.Minute)
	l := &Load{opts: opts, client: &http.Client{Timeout: time.Minute}, stopped: map[int]int{},
		start: time.Now().UTC().Truncate(time.Minute).Add(-back), kinds: kinds, bounded: opts.Mix[VDPHumidity] > 0,
		sourcePath: sourcePath, pending: map[int]int{}, advanced: make(chan struct{}), paths: map[Path]*pathLoad{}}
	l.onPath = map[Path][]int{}
	for _, p := range Paths() {
		l.paths[p], l.onPath[p] = &pathLoad{}, l.sourcesOn(p)
	}
	if opts.OperatorToken != "" {
		if err := l.createCompany(ctx); err != nil {
			return nil, err
		}
	}
	if err := l.connectPaths(ctx); err != nil {
		_ = l.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	if l.bounded {
		if err := l.storeTemperature(ctx); err != nil {
			_ = l.Close(context.WithoutCancel(ctx))
			return nil, err
		}
	}
	for i := range opts.VDPs {
		typ, cfg := l.vdpConfig(i)
		if err := l.do(ctx, "POST", l.vdpPath("", "dataPointID", l.output(i), "type", typ), cfg, nil); err != nil {
			_ = l.Close(context.WithoutCancel(ctx))
			return nil, fmt.Errorf("create %s: %w", l.output(i), err)
		}
		if err := l.Run(ctx, i, true); err != nil {
			_ = l.Close(context.WithoutCancel(ctx))
			return nil, err
		}
	}
	return l, nil
}

func (l *Load) source(i int) string { return fmt.Sprintf("%ss%d", l.opts.Prefix, i) }
func (l *Load) output(i int) string { return fmt.Sprintf("%sout%d", l.opts.Prefix, i) }

// VDPs is how many virtual datapoints the harness runs.
func (l *Load) VDPs() int { return l.opts.VDPs }

// ProjectID is the project the harness works in.
func (l *Load) ProjectID() int64 { return l.opts.ProjectID }

func (l *Load) vdpPath(sub string, kv ...string) string {
	var q []string
	for i := 0; i+1 < len(kv); i += 2 {
		q = append(q, kv[i]+"="+kv[i+1])
	}
	return fmt.Sprintf("/v2/project/%d/virtual_datapoint%s?%s", l.opts.ProjectID, sub, strings.Join(q, "&"))
}

func (l *Load) createCompany(ctx context.Context) error {
	l.opts.Email, l.opts.Password = fmt.Sprintf("load-%d@bench.test", time.Now().UnixNano()), "load-password-12"
	body := fmt.Sprintf(`{"name":%q,"admin":{"firstName":"L","lastName":"H","email":%q,"password":%q}}`,
		"bdp-bench load "+time.Now().Format(time.RFC3339Nano), l.opts.Email, l.opts.Password)
	if err := l.send(ctx, "POST", "/operator/companies", body, nil, true); err != nil {
		return fmt.Errorf("create the company: %w", err)
	}
	var project struct {
		Resource struct {
			Project struct{ ID int64 } `json:"project"`
		} `json:"resource"`
	}
	if err := l.do(ctx, "POST", "/v2/company/project", `{"name":"load"}`, &project); err != nil {
		return fmt.Errorf("create the project: %w", err)
	}
	l.opts.ProjectID, l.created = project.Resource.Project.ID, true
	return nil
}

// createMQTTUser makes an MQTT user of the project with rights read or
// write, valid as long as the API allows (two hours), which Close
// deletes; it answers the username and password.
func (l *Load) createMQTTUser(ctx context.Context, rights string) (user, password string, err error) {
	user, password = fmt.Sprintf("%s%s-%d", l.opts.Prefix, rights, time.Now().UnixNano()), "load-mqtt-password-12"
	var created struct {
		Resource struct {
			ID int64 `json:"id"`
		} `json:"resource"`
	}
	body := fmt.Sprintf(`{"username":%q,"password":%q,"rights":%q,"validity":7200}`, user, password, rights)
	if err := l.do(ctx, "POST", fmt.Sprintf("/v2/project/%d/mqttuser", l.opts.ProjectID), body, &created); err != nil {
		return "", "", fmt.Errorf("create a %s MQTT user: %w", rights, err)
	}
	l.mu.Lock()
	l.mqttUsers = append(l.mqttUsers, created.Resource.ID)
	l.mu.Unlock()
	return user, password, nil
}

// onClose adds what Close stops first: connections, devices.
func (l *Load) onClose(f func()) {
	l.mu.Lock()
	l.closeFuncs = append(l.closeFuncs, f)
	l.mu.Unlock()
}

// Run starts (true) or stops a datapoint through a node at random, timed
// as a command. A stop records the rounds acknowledged by its answer:
// no output after them may appear.
func (l *Load) Run(ctx context.Context, i int, run bool) error {
	began := time.Now()
	var v struct {
		Status string `json:"status"`
	}
	err := l.do(ctx, "POST", l.vdpPath("/run", "dataPointID", l.output(i), "run", fmt.Sprint(run)), "", &v)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.commands = append(l.commands, time.Since(began))
	if err != nil {
		return fmt.Errorf("run=%t %s: %w", run, l.output(i), err)
	}
	if want := map[bool]string{true: "Running", false: "Stopped"}[run]; v.Status != want {
		return fmt.Errorf("run=%t %s: status %q", run, l.output(i), v.Status)
	}
	if !run {
		l.stopped[i] = l.rounds
	}
	return nil
}

// Status reads a datapoint's status through a node at random, timed as a
// command.
func (l *Load) Status(ctx context.Context, i int) error {
	began := time.Now()
	err := l.do(ctx, "GET", l.vdpPath("", "dataPointID", l.output(i)), "", nil)
	l.mu.Lock()
	l.commands = append(l.commands, time.Since(began))
	l.mu.Unlock()
	return err
}

// Close stops the paths, the live subscribers and the simulated device,
// deletes the MQTT users the harness made and its own project, with its
// datapoints and observations (a company stays: the API deletes none);
// in a given project it stops the harness's datapoints. Kafka keeps what
// was produced: the topic is the deployment's.
func (l *Load) Close(ctx context.Context) error {
	l.mu.Lock()
	closers, users := slices.Clone(l.closeFuncs), slices.Clone(l.mqttUsers)
	l.closeFuncs, l.mqttUsers = nil, nil
	l.mu.Unlock()
	for _, f := range slices.Backward(closers) {
		f()
	}
	var errs []error
	for _, id := range users {
		if err := l.do(ctx, "DELETE", fmt.Sprintf("/v2/project/%d/mqttuser/%d", l.opts.ProjectID, id), "", nil); err != nil {
			errs = append(errs, fmt.Errorf("delete MQTT user %d: %w", id, err))
		}
	}
	if l.created {
		if err := l.do(ctx, "DELETE", fmt.Sprintf("/v2/project/%d", l.opts.ProjectID), "", nil); err != nil {
			errs = append(errs, fmt.Errorf("delete the project: %w", err))
		}
		return errors.Join(errs...)
	}
	for i := range l.opts.VDPs {
		if _, ok := l.stopped[i]; !ok {
			if err := l.Run(ctx, i, false); err != nil {
				return errors.Join(append(errs, err)...)
			}
		}
	}
	return errors.Join(errs...)
}

// Do sends a request with a JSON body (nil: none) to a node at random,
// as the harness's user or the operator, and decodes a 2xx answer into
// out (nil: dropped).
func (l *Load) Do(ctx context.Context, method, path string, body, out any, asOperator bool) error {
	text := ""
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		text = string(b)
	}
	return l.send(ctx, method, path, text, out, asOperator)
}

func (l *Load) do(ctx context.Context, method, path, body string, out any) error {
	return l.send(ctx, method, path, body, out, false)
}

// send sends a request to a node at random, as the harness's user (or
// the operator).
func (l *Load) send(ctx context.Context, method, path, body string, out any, asOperator bool) error {
	base := l.opts.HTTP[rand.IntN(len(l.opts.HTTP))]
	req, err := http.NewRequestWithContext(ctx, method, base+path, bytes.NewReader([]byte(body)))
	if err != nil {
		return err
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if asOperator {
		req.Header.Set("Authorization", "Bearer "+l.opts.OperatorToken)
	} else {
		req.SetBasicAuth(l.opts.Email, l.opts.Password)
	}
	res, err := l.client.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(res.Body, 64<<20))
	if res.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s on %s: HTTP %d: %.300s", method, path, base, res.StatusCode, b)
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}
