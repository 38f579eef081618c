package actors

import (
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/openbdp/bdp/fault"
	"github.com/openbdp/bdp/pipeline/window"
)

// Budget bounds the heap that the windows of virtual datapoints hold, by
// their estimate (window.EstimateBytes): the windows of one virtual
// datapoint, and those of all running on the node together.
type Budget struct {
	// PerDatapoint is the most one configuration's windows may hold; a
	// larger one is refused at create and at run. 0: no limit.
	PerDatapoint int64
	// Node is the most the windows of all running virtual datapoints may
	// hold together; a start that would go over it is refused. 0: no limit.
	Node int64
	// SourceInterval is the shortest interval assumed between two
	// observations of a source, which bounds what a time or cron window
	// holds (window.Range.MaxKept). 0: DefaultSourceInterval.
	SourceInterval time.Duration
}

// The defaults of the budget. A kept observation costs 32 bytes (measured:
// window.TestEstimateBytesAgainstHeap). The largest count window (100,000)
// holds 3.5 MiB, 4.3 MiB with a median; a time window of a day or more at
// one value a second reaches the 100,000 cap too, 4.4 MiB by the estimate
// (its slice grows by append). 24 MiB per datapoint takes five of any of
// these but five capped time windows with a median (25.6 MiB). 1 GiB per
// node is some 40 datapoints at that size, or 700,000 of the two
// count-10 windows of the engine's benchmark (1.4 KiB each); the Go heap
// peaks at about twice its live data, so it asks 2 GiB of the machine.
const (
	DefaultDatapointBudget = 24 << 20
	DefaultNodeBudget      = 1 << 30
	DefaultSourceInterval  = time.Second
)

// WindowBytes is the estimated heap of a configuration's windows: the sum
// over its pins of window.EstimateBytes.
func WindowBytes(cfg Config, interval time.Duration) (int64, error) {
	if interval <= 0 {
		interval = DefaultSourceInterval
	}
	var total int64
	for _, pc := range cfg.Pins {
		r, err := pinRange(pc)
		if err != nil {
			return 0, err
		}
		agg, err := window.ParseAggregate(pc.Aggregate)
		if err != nil {
			return 0, err
		}
		total += window.EstimateBytes(r, agg, interval)
	}
	return total, nil
}

// windowBudget keeps what the running virtual datapoints' windows hold by
// the estimate, against the Budget. What each one holds is kept with it
// (runningVDP), under the engine's lock, which is taken before mu.
type windowBudget struct {
	Budget
	mu    sync.Mutex
	total int64
}

func newWindowBudget(b Budget, reg prometheus.Registerer) (*windowBudget, error) {
	if b.SourceInterval <= 0 {
		b.SourceInterval = DefaultSourceInterval
	}
	wb := &windowBudget{Budget: b}
	if reg == nil {
		return wb, nil
	}
	for _, g := range []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "bdp_window_estimated_bytes",
			Help: "Estimated heap held by the windows of the running virtual datapoints of this node."},
			func() float64 { return float64(wb.estimated()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "bdp_window_budget_bytes",
			Help: "Budget of the windows of all running virtual datapoints of this node (BDP_WINDOW_BUDGET_NODE); 0: none."},
			func() float64 { return float64(b.Node) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "bdp_window_datapoint_budget_bytes",
			Help: "Budget of the windows of one virtual datapoint (BDP_WINDOW_BUDGET_DATAPOINT); 0: none."},
			func() float64 { return float64(b.PerDatapoint) }),
	} {
		if err := reg.Register(g); err != nil {
			return nil, fmt.Errorf("register window budget metrics: %w", err)
		}
	}
	return wb, nil
}

func (wb *windowBudget) estimated() int64 {
	wb.mu.Lock()
	defer wb.mu.Unlock()
	return wb.total
}

// check refuses a definition whose windows exceed the per-datapoint
// budget (Invalid: the configuration itself is too large) and, with
// toRun, one that would take the node over its budget (Unavailable: it
// may fit once other datapoints stop). A datapoint already holding its
// share (held) is judged without it.
func (wb *windowBudget) check(def Definition, toRun bool, held int64) error {
	if wb.PerDatapoint > 0 && def.WindowBytes > wb.PerDatapoint {
		return fault.Invalidf("config: the windows need an estimated %s, more than the %s a virtual datapoint may hold (BDP_WINDOW_BUDGET_DATAPOINT); use shorter windows or fewer pins",
			formatBytes(def.WindowBytes), formatBytes(wb.PerDatapoint))
	}
	if !toRun || wb.Node <= 0 {
		return nil
	}
	wb.mu.Lock()
	others := wb.total - held
	wb.mu.Unlock()
	return wb.nodeError(def.WindowBytes, others)
}

func (wb *windowBudget) nodeError(need, others int64) error {
	if others+need <= wb.Node {
		return nil
	}
	return fault.Wrap(fault.Unavailable, nil, fmt.Sprintf(
		"the windows of the running virtual datapoints hold an estimated %s of this node's %s (BDP_WINDOW_BUDGET_NODE); this one needs %s more: stop others first",
		formatBytes(others), formatBytes(wb.Node), formatBytes(need)))
}

// reserve takes the share of the node budget of a definition that holds
// none yet, for as long as it runs, after the same checks as check.
func (wb *windowBudget) reserve(def Definition) error {
	if err := wb.check(def, false, 0); err != nil {
		return err
	}
	wb.mu.Lock()
	defer wb.mu.Unlock()
	if wb.Node > 0 {
		if err := wb.nodeError(def.WindowBytes, wb.total); err != nil {
			return err
		}
	}
	wb.total += def.WindowBytes
	return nil
}

// release gives back what a virtual datapoint held.
func (wb *windowBudget) release(held int64) {
	wb.mu.Lock()
	defer wb.mu.Unlock()
	wb.total -= held
}

// definitionBytes estimates the windows of a stored configuration.
func (wb *windowBudget) definitionBytes(raw json.RawMessage) (int64, error) {
	var cfg Config
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return 0, fmt.Errorf("stored config: %w", err)
	}
	return WindowBytes(cfg, wb.SourceInterval)
}

// CheckBudget tells whether a virtual datapoint fits the window budget:
// its own windows always, and with toRun the node's budget beside the
// running ones. Start enforces the same under its lock; this lets a caller
// refuse before it changes anything.
func (e *Engine) CheckBudget(def Definition, toRun bool) error {
	// Under the engine's lock, so the share held and the total are read
	// together, as Start's reserve does.
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.budget.check(def, toRun, e.running[def.key()].windowBytes)
}

// formatBytes writes a size the way the configuration takes it.
func formatBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB (%d bytes)", float64(n)/(1<<30), n)
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB (%d bytes)", float64(n)/(1<<20), n)
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB (%d bytes)", float64(n)/(1<<10), n)
	}
	return fmt.Sprintf("%d bytes", n)
}
