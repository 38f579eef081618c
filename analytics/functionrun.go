package analytics

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/openbdp/bdp/analytics/kpi"
)

// Fits says whether the function can run on the component with this
// alphanumeric id.
func (f Function) Fits(componentAlphanumericID string) bool {
	return slices.Contains(f.Components, componentAlphanumericID)
}

// Run computes the function over in: the series of the component's
// mapped pins by pin alphanumeric id and its filled-in attributes by key.
// A mapped pin whose period holds no observation is in in.Series with an
// empty (or nil) slice; a pin not mapped is absent. Run is pure: it reads
// nothing but in.
//
// It fails, wrapping ErrMissingPin, when a required pin is not mapped,
// and, wrapping ErrBadAttribute, when an attribute's value does not parse;
// both name the pin or the attribute key. A period without data is no
// failure: the Outcome says NoData with signal_color yellow. The Outcome
// holds no NaN or infinity; Summary.Previous is left nil
// (SetSummaryPrevious fills it).
func (f Function) Run(in Input) (Outcome, error) {
	if !f.Fits(in.Component) {
		return Outcome{}, fmt.Errorf("analysis function %s does not fit component %q", f.AlphanumericID, in.Component)
	}
	// The kernel binding reads series by role, not by pin id, so one
	// binding serves every component.
	byRole := Input{Component: in.Component, Period: in.Period, Series: map[string][]kpi.Point{}, Attributes: in.Attributes}
	// A oneOf group needs one mapped pin; missing lists a group's pins
	// while none is.
	missing, satisfied := map[string][]string{}, map[string]bool{}
	for _, p := range f.Pins {
		pin := p.PinIDs[in.Component]
		series, mapped := in.Series[pin]
		if pin == "" || !mapped {
			if p.Required {
				return Outcome{}, fmt.Errorf("%w: pin %s (%s) of %s", ErrMissingPin, pin, p.Role, in.Component)
			}
			if p.oneOf != "" && pin != "" {
				missing[p.oneOf] = append(missing[p.oneOf], fmt.Sprintf("pin %s (%s)", pin, p.Role))
			}
			continue
		}
		satisfied[p.oneOf] = true
		if series == nil {
			// Mapped but empty is not "not mapped": an empty operating
			// message must still restrict the analysis (to nothing).
			series = []kpi.Point{}
		}
		byRole.Series[p.Role] = series
	}
	for group, pins := range missing {
		if !satisfied[group] {
			return Outcome{}, fmt.Errorf("%w: %s of %s", ErrMissingPin, pins[0], in.Component+strings.Join(append([]string{""}, pins[1:]...), ", or "))
		}
	}
	res, err := f.run(byRole)
	if err != nil {
		return Outcome{}, fmt.Errorf("analysis function %s: %w", f.AlphanumericID, err)
	}
	out, err := f.outcome(res)
	if err != nil {
		return Outcome{}, fmt.Errorf("analysis function %s: %w", f.AlphanumericID, err)
	}
	return out, nil
}

// outcome turns a kernel's result into the stored, bilingual Outcome.
func (f Function) outcome(res kpi.Result) (Outcome, error) {
	out := Outcome{KPIs: []OutcomeKPI{}, Plots: []OutcomePlot{}, Recommendation: []Text{}}
	if res.NoData || res.Color == kpi.Grey {
		out.NoData = true
		out.SignalColor = string(kpi.Yellow)
		out.Interpretation = noDataInterpretation
		out.Recommendation = []Text{noDataRecommendation}
		f.fillSummary(&out)
		return out, nil
	}
	for _, k := range res.KPIs {
		if !finite(k.Value) {
			return Outcome{}, fmt.Errorf("KPI %q computed no finite value", k.ID)
		}
		out.KPIs = append(out.KPIs, OutcomeKPI{Identifier: k.ID, Name: kpiName(k.ID), Unit: k.Unit, Value: k.Value})
	}
	for _, p := range res.Plots {
		for _, v := range p.Values {
			if !finite(v) {
				return Outcome{}, fmt.Errorf("plot %q computed no finite value", p.Title)
			}
		}
		id, title := plotTitle(p.Title)
		out.Plots = append(out.Plots, OutcomePlot{
			Identifier: id, Title: title, Type: p.Type, Unit: p.Unit,
			Categories: append([]string{}, p.Labels...),
			Data:       []PlotSeries{{Name: id, Values: append([]float64{}, p.Values...)}},
		})
	}
	for _, k := range res.Thresholds {
		out.Thresholds = append(out.Thresholds, OutcomeKPI{Identifier: k.ID, Name: kpiName(k.ID), Unit: k.Unit, Value: k.Value})
	}
	out.SignalColor = string(res.Color)
	out.Interpretation, out.Recommendation = f.explain(res)
	f.fillSummary(&out)
	return out, nil
}

// fillSummary names the function's summary KPI in out and takes its value
// in this period from out's KPIs (nil when the run computed none).
func (f Function) fillSummary(out *Outcome) {
	out.Summary = Summary{Identifier: f.SummaryKPI, Name: kpiName(f.SummaryKPI), Unit: summaryUnit(f.SummaryKPI)}
	if v, ok := out.kpi(f.SummaryKPI); ok {
		out.Summary.Current = &v
		out.Summary.Unit = out.unit(f.SummaryKPI)
	}
}

// SetSummaryPrevious fills cur.Summary.Previous with the value of cur's
// summary KPI in prev, the outcome of the same function over the period
// before cur's (of equal length, ending where cur's starts). It stays nil
// when prev has no such value (no data then, or a KPI given only when
// something happened, like cycle times).
func SetSummaryPrevious(cur *Outcome, prev Outcome) {
	cur.Summary.Previous = nil
	if v, ok := prev.kpi(cur.Summary.Identifier); ok {
		cur.Summary.Previous = &v
	}
}

func (o Outcome) kpi(id string) (float64, bool) {
	for _, k := range o.KPIs {
		if k.Identifier == id {
			return k.Value, true
		}
	}
	return 0, false
}

func (o Outcome) unit(id string) string {
	for _, k := range o.KPIs {
		if k.Identifier == id {
			return k.Unit
		}
	}
	return ""
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// attrs reads the attributes a binding needs, recording the first fault
// so a binding parses all its keys and checks once.
type attrs struct {
	values map[string]string
	err    error
}

func attributesOf(in Input) *attrs { return &attrs{values: in.Attributes} }

// badAttribute wraps ErrBadAttribute naming the key and at most the start
// of the value (an attribute may be a large JSON document).
func badAttribute(key, value, why string) error {
	if len(value) > 40 {
		value = value[:40] + "..."
	}
	return fmt.Errorf("%w: %s = %q: %s", ErrBadAttribute, key, value, why)
}

func (a *attrs) fail(err error) {
	if a.err == nil {
		a.err = err
	}
}

// float is the attribute key as a finite number at least min; def when
// not filled in.
func (a *attrs) float(key string, min, def float64) float64 {
	raw, ok := a.values[key]
	if !ok || strings.TrimSpace(raw) == "" {
		return def
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(raw), 64)
	switch {
	case err != nil || !finite(v):
		a.fail(badAttribute(key, raw, "not a finite number"))
	case v < min:
		a.fail(badAttribute(key, raw, fmt.Sprintf("below %g", min)))
	default:
		return v
	}
	return def
}

// text is the attribute key trimmed; "" when not filled in.
func (a *attrs) text(key string) string { return strings.TrimSpace(a.values[key]) }

// kernelAttributeError names the attribute key behind a kernel's refusal
// of an attribute value; other errors pass unchanged.
func kernelAttributeError(err error, key string, sentinels ...error) error {
	for _, s := range sentinels {
		if errors.Is(err, s) {
			return fmt.Errorf("%w: %s: %w", ErrBadAttribute, key, err)
		}
	}
	return err
}
