package http

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/openbdp/bdp/analytics"
	"github.com/openbdp/bdp/fault"
	"github.com/openbdp/bdp/store"
	"github.com/openbdp/bdp/units"
)

// How a stored result is shown: an analytics.Outcome holds both languages
// and the kernel's units; a reader picks the language and the units
// system and currency, converted here on the way out.

// resultView is what a request asked for: a language and the units and
// currency systems values are shown in.
type resultView struct {
	lang  string // "en" or "de"
	units *kpiUnits
}

// resultViewOf reads the language parameter named langParam (en, the
// default, or de) and units_system and currency_system, which default to
// the project's settings.
func (s *Server) resultViewOf(c *fiber.Ctx, cl *call, langParam string) (resultView, error) {
	lang := strings.ToLower(strings.TrimSpace(c.Query(langParam)))
	switch lang {
	case "":
		lang = "en"
	case "en", "de":
	default:
		return resultView{}, fault.Invalidf("%s must be en or de, got %q", langParam, fault.Clip(c.Query(langParam)))
	}
	ku, err := s.kpiUnitsOf(c, cl)
	if err != nil {
		return resultView{}, err
	}
	return resultView{lang: lang, units: ku}, nil
}

func (v resultView) text(t analytics.Text) string {
	if v.lang == "de" {
		return t.DE
	}
	return t.EN
}

// fill is t in the view's language with figs written into its marks.
func (v resultView) fill(t analytics.Text, figs map[string]analytics.Figure) string {
	return analytics.Fill(v.text(t), v.lang, figs)
}

// figure is a value of unit as the view shows it: converted, then
// rounded (analytics.Round), the one way every figure of a result is
// shown, in the KPI list and in the texts alike.
func (v resultView) figure(value float64, unit string) (analytics.Figure, error) {
	conv, err := v.units.of(unit)
	if err != nil {
		return analytics.Figure{}, err
	}
	return analytics.Figure{Value: analytics.Round(conv.value(value)), Unit: conv.unit}, nil
}

// figuresOf is every figure of o the texts' marks may name (its KPIs and
// the thresholds the run judged against) as the view shows it. A figure
// that cannot be converted (a currency without an exchange rate) keeps
// the kernel's unit here: a list's text is not refused for it, and a
// detail whose KPIs need it is refused (422) by kpisOf anyway.
func (v resultView) figuresOf(o analytics.Outcome) map[string]analytics.Figure {
	figs := make(map[string]analytics.Figure, len(o.KPIs)+len(o.Thresholds))
	for _, list := range [][]analytics.OutcomeKPI{o.KPIs, o.Thresholds} {
		for _, k := range list {
			f, err := v.figure(k.Value, k.Unit)
			if err != nil {
				f = analytics.Figure{Value: analytics.Round(k.Value), Unit: k.Unit}
			}
			figs[k.Identifier] = f
		}
	}
	return figs
}

// kpiUnits converts the units of KPIs, plots and summaries into one units
// system and currency system. One per request: it remembers each unit's
// conversion and reads the exchange rates at most once.
type kpiUnits struct {
	unitsSystem, currencySystem string
	rates                       func() (units.Rates, error) // the operator's, read once when first needed
	known                       map[string]kpiConversion
}

// kpiConversion is the unit a value is shown in and how it gets there;
// convert nil keeps the value.
type kpiConversion struct {
	unit    string
	convert func(float64) float64
}

func (k kpiConversion) value(v float64) float64 {
	if k.convert == nil {
		return v
	}
	return k.convert(v)
}

// kpiUnitsOf takes units_system and currency_system from the query (400
// for one GET /v2/labels/systems does not list) or else from the
// project's settings (api.md 4.8).
func (s *Server) kpiUnitsOf(c *fiber.Ctx, cl *call) (*kpiUnits, error) {
	us, cs := c.Query("units_system"), c.Query("currency_system")
	if us == "" || cs == "" {
		settings, err := s.store.ProjectSettings(c.UserContext(), cl.ProjectID)
		if err != nil {
			return nil, err
		}
		if us == "" {
			us = settings.UnitsSystem
		}
		if cs == "" {
			cs = settings.CurrencySystem
		}
	}
	systems := units.Systems()
	u, known := knownSystem(systems.UnitsSystems, us)
	if !known {
		return nil, fault.Invalidf("units_system must be one of %s, got %q", systemIDs(systems.UnitsSystems), fault.Clip(us))
	}
	cur, known := knownSystem(systems.CurrencySystems, cs)
	if !known {
		return nil, fault.Invalidf("currency_system must be one of %s, got %q", systemIDs(systems.CurrencySystems), fault.Clip(cs))
	}
	ctx := c.UserContext()
	return &kpiUnits{unitsSystem: u, currencySystem: cur, known: map[string]kpiConversion{},
		rates: sync.OnceValues(func() (units.Rates, error) { return s.currencyRates(ctx) })}, nil
}

// temperatureDifference is the unit the kernels give differences of
// temperature in. Package units knows kelvin only as a temperature on its
// scale, whose conversion to °F would add the offset: a difference
// converts by the factor alone.
const temperatureDifference = "K"

// of answers how values of unit are shown. A unit package units does not
// know ("count", "-") or that has no other form in the system is kept as
// the kernel wrote it; a currency without an exchange rate is
// fault.Unprocessable (422), naming it.
func (k *kpiUnits) of(unit string) (kpiConversion, error) {
	if conv, seen := k.known[unit]; seen {
		return conv, nil
	}
	conv, err := k.resolve(unit)
	if err != nil {
		return kpiConversion{}, err
	}
	k.known[unit] = conv
	return conv, nil
}

func (k *kpiUnits) resolve(unit string) (kpiConversion, error) {
	keep := kpiConversion{unit: unit}
	if unit == temperatureDifference {
		if k.unitsSystem == units.Imperial {
			return kpiConversion{unit: "°F", convert: func(v float64) float64 { return v * 9 / 5 }}, nil
		}
		return keep, nil
	}
	to, err := units.ForSystem(unit, k.unitsSystem)
	if err != nil {
		return keep, nil // not a unit of the table: nothing to convert
	}
	if to, err = units.ForCurrencySystem(to, k.currencySystem); err != nil {
		return keep, nil
	}
	f, err := units.Rates{}.Converter(unit, to)
	if errors.Is(err, units.ErrNoRate) {
		rates, rerr := k.rates()
		if rerr != nil {
			return kpiConversion{}, rerr
		}
		f, err = rates.Converter(unit, to)
	}
	if errors.Is(err, units.ErrNoRate) {
		return kpiConversion{}, fault.Wrap(fault.Unprocessable, err, fmt.Sprintf("cannot convert %s to %s: %s (the operator's exchange rates lack it)",
			unit, to, err.Error()))
	}
	if err != nil || (f(0) == 0 && f(1) == 1 && f(100) == 100) {
		return keep, nil // the same unit under another name ("°C" is celsius): keep the kernel's
	}
	if u, ok := units.Lookup(to); ok && u.Symbol != "" {
		to = u.Symbol
	}
	return kpiConversion{unit: to, convert: f}, nil
}

// Answer shapes of a result (api.md 2.17; aedifion's AnalysisResult).

type resultKPI struct {
	Identifier string  `json:"identifier"`
	Name       string  `json:"name"`
	Unit       string  `json:"unit"`
	Value      float64 `json:"value"`
}

type resultPlot struct {
	Identifier string           `json:"identifier"`
	Title      string           `json:"title"`
	Type       string           `json:"type" doc:"pie_chart (categories with their shares as one series) or bar_chart (categories on the axis, a bar per value)"`
	Unit       string           `json:"unit"`
	Categories []string         `json:"categories"`
	Data       []resultPlotData `json:"data"`
}

type resultPlotData struct {
	Name   string    `json:"name"`
	Values []float64 `json:"values"`
}

// summaryKPI is the summary KPI of a period beside the one before it.
type summaryKPI struct {
	Current     summaryCurrent      `json:"current"`
	Development *summaryDevelopment `json:"development,omitempty" doc:"left out when the period before has no value or this one has none"`
}

type summaryCurrent struct {
	Identifier    string   `json:"identifier"`
	Name          string   `json:"name"`
	TimeReference string   `json:"time_reference" doc:"the period, as an ISO 8601 interval start/end"`
	Unit          string   `json:"unit"`
	Value         *float64 `json:"value,omitempty" doc:"converted and rounded as the KPI list shows it; left out when the period has no value (aedifion's schema has it a number, never null)"`
}

type summaryDevelopment struct {
	Arrow         string   `json:"arrow" enum:"up,down,right" doc:"up (the value grew by 1 % or more), down (it fell by 1 % or more) or right (it changed by less)"`
	TimeReference string   `json:"time_reference" doc:"the period before, of equal length and ending at start, as an ISO 8601 interval"`
	Unit          string   `json:"unit" doc:"always %"`
	Value         *float64 `json:"value,omitempty" doc:"(current − previous) / |previous| × 100, in the kernel's units, rounded; left out when previous is 0 and current is not (arrow then says the direction)"`
}

// developmentSteady is the relative change, in percent, below which the
// arrow points right.
const developmentSteady = 1.0

// interval formats a period as an ISO 8601 interval.
func interval(start, end time.Time) string {
	return start.UTC().Format(time.RFC3339) + "/" + end.UTC().Format(time.RFC3339)
}

// summaryOf shows the summary of outcome o over [start, end); nil when
// the outcome has none (a function without one, a run that did not
// succeed).
func (v resultView) summaryOf(o analytics.Outcome, figs map[string]analytics.Figure, start, end time.Time) (*summaryKPI, error) {
	sum := o.Summary
	if sum.Identifier == "" {
		return nil, nil
	}
	conv, err := v.units.of(sum.Unit)
	if err != nil {
		return nil, err
	}
	out := &summaryKPI{Current: summaryCurrent{Identifier: sum.Identifier, Name: v.fill(sum.Name, figs), Unit: conv.unit,
		TimeReference: interval(start, end)}}
	if sum.Current == nil || !finite(*sum.Current) {
		return out, nil
	}
	cur := analytics.Round(conv.value(*sum.Current))
	out.Current.Value = &cur
	if sum.Previous == nil || !finite(*sum.Previous) {
		return out, nil
	}
	d := &summaryDevelopment{Unit: "%", TimeReference: interval(start.Add(-end.Sub(start)), start), Arrow: "right"}
	now, before := *sum.Current, *sum.Previous
	if before != 0 {
		change := analytics.Round((now - before) / math.Abs(before) * 100)
		d.Value = &change
	} else if now == 0 {
		zero := 0.0
		d.Value = &zero
	}
	switch {
	case d.Value != nil && *d.Value >= developmentSteady, d.Value == nil && now > before:
		d.Arrow = "up"
	case d.Value != nil && *d.Value <= -developmentSteady, d.Value == nil && now < before:
		d.Arrow = "down"
	}
	out.Development = d
	return out, nil
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// kpisOf shows the KPIs of o in the view's language and units; their
// names state the thresholds in figs.
func (v resultView) kpisOf(o analytics.Outcome, figs map[string]analytics.Figure) ([]resultKPI, error) {
	out := make([]resultKPI, 0, len(o.KPIs))
	for _, k := range o.KPIs {
		f, err := v.figure(k.Value, k.Unit)
		if err != nil {
			return nil, err
		}
		out = append(out, resultKPI{Identifier: k.Identifier, Name: v.fill(k.Name, figs), Unit: f.Unit, Value: f.Value})
	}
	return out, nil
}

// plotsOf shows the plots in the view's language and units.
func (v resultView) plotsOf(plots []analytics.OutcomePlot) ([]resultPlot, error) {
	out := make([]resultPlot, 0, len(plots))
	for _, p := range plots {
		conv, err := v.units.of(p.Unit)
		if err != nil {
			return nil, err
		}
		rp := resultPlot{Identifier: p.Identifier, Title: v.text(p.Title), Type: p.Type, Unit: conv.unit,
			Categories: nonNilSlice(p.Categories), Data: make([]resultPlotData, len(p.Data))}
		for i, series := range p.Data {
			values := make([]float64, len(series.Values))
			for j, x := range series.Values {
				values[j] = analytics.Round(conv.value(x))
			}
			rp.Data[i] = resultPlotData{Name: series.Name, Values: values}
		}
		out = append(out, rp)
	}
	return out, nil
}

// outcomeOf decodes a stored outcome (the whole one or a list's brief);
// a result without one has the zero Outcome.
func outcomeOf(r store.AnalysisResult) (analytics.Outcome, error) {
	var o analytics.Outcome
	if len(r.Outcome) == 0 {
		return o, nil
	}
	if err := json.Unmarshal(r.Outcome, &o); err != nil {
		return o, fmt.Errorf("stored outcome of result %s: %w", r.ID, err)
	}
	return o, nil
}

// Texts of results that have no outcome to speak for them.
var (
	runningText = analytics.Text{EN: "The analysis is running.", DE: "Die Analyse läuft."}
	failedText  = analytics.Text{EN: "The analysis failed: ", DE: "Die Analyse ist fehlgeschlagen: "}
)

// interpretationOf is the interpretation of a result in the view's
// language: the outcome's with figs written in, or what a running or
// failed result is doing.
func (v resultView) interpretationOf(r store.AnalysisResult, o analytics.Outcome, figs map[string]analytics.Figure) string {
	switch r.Status {
	case store.AnalysisRunning:
		return v.text(runningText)
	case store.AnalysisFailed:
		return v.text(failedText) + r.Info
	}
	return v.fill(o.Interpretation, figs)
}
