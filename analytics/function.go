package analytics

import (
	"errors"

	"github.com/openbdp/bdp/analytics/kpi"
)

// Function is one analysis function of this release: which components it
// fits, which of their pins and attributes it reads, which KPIs it
// computes, and the kernel of package kpi that computes them. The table of
// functions is in functions.go; numeric ids are the database's
// (LoadFunctions).
type Function struct {
	ID             int64 // assigned at start, stable across restarts
	AlphanumericID string
	NameDE, NameEN string
	// Components lists the alphanumeric ids of the components the function
	// can run on.
	Components []string
	Pins       []FunctionPin
	// Attributes lists the attribute definition keys the function reads;
	// the ones not filled in take the kernel's documented default (schedule
	// and reference_curve have none: a run without them fails).
	Attributes []string
	// KPIs lists the identifiers of the KPIs a successful run reports;
	// SummaryKPI is the one compared with the period before.
	KPIs       []string
	SummaryKPI string

	// run calls the kernel with in.Series keyed by FunctionPin.Role (Run
	// resolves the pin ids); explain writes the interpretation and the
	// recommendations of a result with data.
	run     func(in Input) (kpi.Result, error)
	explain func(res kpi.Result) (Text, []Text)
	// someComponents lists the Attributes keys that not every component
	// of Components defines: where one is not defined it is never filled
	// in and the kernel's default holds.
	someComponents []string
}

// FunctionPin is one series a function reads, by its role in the kernel.
type FunctionPin struct {
	Role     string
	Required bool
	// PinIDs maps a component's alphanumeric id to the alphanumeric id of
	// its pin that plays this role.
	PinIDs map[string]string
	// oneOf names a group of pins of which a run needs at least one
	// mapped (an energy counter or a power pin); Required is false on
	// each.
	oneOf string
}

// Input is what one run reads: the mapped pins' stored series over the
// period (and any point before it that sets the value at its start), by
// pin alphanumeric id, and the filled-in attributes by key.
type Input struct {
	Component  string // alphanumeric id of the mapped component's abstract component
	Period     kpi.Period
	Series     map[string][]kpi.Point
	Attributes map[string]string
}

// ErrMissingPin is wrapped by Run when a required pin is not mapped: the run
// fails with that reason, naming the pin.
var ErrMissingPin = errors.New("a required pin is not mapped")

// ErrBadAttribute is wrapped by Run when an attribute's value does not
// parse for the function (a schedule that is not one, a negative price).
var ErrBadAttribute = errors.New("an attribute's value is not usable")

// Text is a text in both languages a result can be read in
// (result_language en|de).
type Text struct {
	EN string `json:"en"`
	DE string `json:"de"`
}

// Outcome is what a successful run computed, stored as JSON with its result
// row in both languages and in the units the kernel computed; the HTTP
// layer picks the language, converts units and currency on the way out and
// writes the figures into the texts' marks (Fill).
type Outcome struct {
	// NoData says the period held no value of a required pin: the run
	// succeeded, KPIs and Plots are empty, and the interpretation says so.
	NoData         bool          `json:"no_data"`
	SignalColor    string        `json:"signal_color"` // red, yellow or green; yellow when NoData
	KPIs           []OutcomeKPI  `json:"kpis"`
	Plots          []OutcomePlot `json:"plots"`
	Interpretation Text          `json:"interpretation"`
	Recommendation []Text        `json:"recommendation"`
	Summary        Summary       `json:"summary"`
	// Thresholds are the bounds the run judged against (kpi.Result's),
	// which texts and KPI names state: marks in them (figures.go) name
	// these and the KPIs.
	Thresholds []OutcomeKPI `json:"thresholds,omitempty"`
}

// OutcomeKPI is one KPI of a result.
type OutcomeKPI struct {
	Identifier string  `json:"identifier"`
	Name       Text    `json:"name"`
	Unit       string  `json:"unit"`
	Value      float64 `json:"value"`
}

// OutcomePlot is one chart of a result: "pie_chart" (Categories with their
// shares as one series) or "bar_chart" (Categories on the axis, one bar
// per series value).
type OutcomePlot struct {
	Identifier string       `json:"identifier"`
	Title      Text         `json:"title"`
	Type       string       `json:"type"`
	Unit       string       `json:"unit"`
	Categories []string     `json:"categories"`
	Data       []PlotSeries `json:"data"`
}

// PlotSeries is one named series of values of a plot.
type PlotSeries struct {
	Name   string    `json:"name"`
	Values []float64 `json:"values"`
}

// Summary is the summary KPI of a result beside its value in the period
// before (of the same length, ending where this one starts); Previous is
// nil when that period has no value.
type Summary struct {
	Identifier string   `json:"identifier"`
	Name       Text     `json:"name"`
	Unit       string   `json:"unit"`
	Current    *float64 `json:"current"`
	Previous   *float64 `json:"previous"`
}
