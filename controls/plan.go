package controls

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/openbdp/bdp/fault"
	"github.com/openbdp/bdp/store"
)

// Catalog finds an abstract component by its numeric id
// (analytics.Catalog).
type Catalog interface {
	Component(id int64) (store.CatalogComponent, bool)
}

// Plan is what a running app does: the datapoint it writes and how, and
// its algorithm's parsed attributes.
type Plan struct {
	App    store.ControlsApp
	Config AppConfig
	// Pin is the setpoint pin written, Target the datapoint mapped on it
	// (empty when unmapped and not for a run).
	Pin, Target string
	Params      WriteParams
	// Input is the datapoint read (heating_curve: the outdoor
	// temperature).
	Input    string
	Schedule *Schedule // schedule
	Curve    *Curve    // heating_curve
}

// Targets are the datapoints and priorities the app writes, for the
// one-writer guard.
func (p Plan) Targets() []store.AppTarget {
	return []store.AppTarget{{DataPointID: p.Target, Priority: p.Params.Priority}}
}

// Curve is a heating curve: the supply setpoint Offset at 20 °C outdoor,
// rising by Slope per kelvin colder, held within [Min, Max].
type Curve struct{ Slope, Offset, Min, Max float64 }

// At is the supply setpoint for an outdoor temperature.
func (c Curve) At(outdoor float64) float64 {
	return math.Max(c.Min, math.Min(c.Max, c.Offset+c.Slope*(20-outdoor)))
}

// Prepare checks an app against its mapped component. With forRun it
// checks all a run needs: the setpoint pin mapped onto a datapoint with
// setpoint bounds, the priority allowed by the project, the algorithm's
// attributes set and valid, its input pin mapped (each 400, naming what
// is missing). Without, at creation, only what is set must be valid.
func Prepare(ctx context.Context, st *store.Store, cat Catalog, app store.ControlsApp, forRun bool) (Plan, error) {
	p := Plan{App: app}
	if err := json.Unmarshal(app.Config, &p.Config); err != nil {
		return p, fmt.Errorf("stored config of controls app %s: %w", app.ID, err)
	}
	cip, err := st.ComponentInProject(ctx, app.ProjectID, app.ComponentInProjectID)
	if err != nil {
		return p, err
	}
	comp, ok := cat.Component(cip.ComponentID)
	if !ok {
		return p, fault.Invalidf("component %d of component in project %d is no longer in the catalog", cip.ComponentID, cip.ID)
	}
	alg, ok := algorithmOf(app.Algorithm)
	if !ok {
		return p, fault.Invalidf("algorithm %q is unknown", app.Algorithm)
	}
	p.Pin = alg.output[comp.AlphanumericID]
	if p.Pin == "" {
		return p, fault.Invalidf("algorithm %s does not fit component %s", app.Algorithm, comp.AlphanumericID)
	}
	p.Params = p.Config.SetpointWritingParams[p.Pin]
	pins := map[string]string{} // pin alphanumeric id -> mapped dataPointID
	for _, pin := range comp.Pins {
		if dp, ok := cip.Pins[pin.ID]; ok {
			pins[pin.AlphanumericID] = dp
		}
	}
	attrs := map[string]string{} // key -> value
	for _, def := range comp.Attributes {
		if v, ok := cip.Attributes[def.ID]; ok {
			attrs[def.Key] = v
		}
	}
	p.Target = pins[p.Pin]
	if forRun {
		if err := checkTarget(ctx, st, p, cip.ID); err != nil {
			return p, err
		}
	}
	switch app.Algorithm {
	case AlgorithmSchedule:
		err = p.prepareSchedule(attrs, forRun)
	case AlgorithmHeatingCurve:
		in := alg.input[comp.AlphanumericID]
		p.Input = pins[in]
		if forRun && p.Input == "" {
			return p, fault.Invalidf("pin %s of component in project %d is not mapped: heating_curve reads the outdoor temperature there", in, cip.ID)
		}
		err = p.prepareCurve(attrs, forRun)
	}
	return p, err
}

// checkTarget refuses a run whose setpoint cannot be written: pin
// unmapped, datapoint without bounds, priority more urgent than the
// project allows (decisions.md 2).
func checkTarget(ctx context.Context, st *store.Store, p Plan, cipID int64) error {
	if p.Target == "" {
		return fault.Invalidf("setpoint pin %s of component in project %d is not mapped; map the datapoint the app writes first", p.Pin, cipID)
	}
	lo, hi, err := st.SetpointBounds(ctx, p.App.ProjectID, p.Target)
	if err != nil {
		return err
	}
	if lo == nil || hi == nil {
		return fault.Invalidf("datapoint %q has no setpoint bounds (setpoint_min_value, setpoint_max_value; PUT /v2/datapoint): the app's setpoints are refused", p.Target)
	}
	settings, err := st.ProjectSettings(ctx, p.App.ProjectID)
	if err != nil {
		return err
	}
	if p.Params.Priority < settings.SetpointMaxPriority {
		return fault.Invalidf("priority %d is more urgent than the project allows (%d to 16)", p.Params.Priority, settings.SetpointMaxPriority)
	}
	return nil
}

func (p *Plan) prepareSchedule(attrs map[string]string, forRun bool) error {
	raw, ok := attrs[AttrSchedule]
	if !ok {
		if forRun {
			return fault.Invalidf("attribute %s of component in project %d is not set: the schedule app writes its entries", AttrSchedule, p.App.ComponentInProjectID)
		}
		return nil
	}
	var def *float64
	if v, ok := attrs[AttrScheduleDefault]; ok {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return fault.Invalidf("attribute %s must be a number, got %q", AttrScheduleDefault, clip(v))
		}
		def = &f
	}
	s, err := ParseSchedule(raw, def, attrs[AttrScheduleTimezone])
	if err != nil {
		return fault.Invalidf("attribute %s", err.Error())
	}
	p.Schedule = s
	return nil
}

func (p *Plan) prepareCurve(attrs map[string]string, forRun bool) error {
	var c Curve
	missing := ""
	for _, a := range []struct {
		key string
		dst *float64
	}{{AttrCurveSlope, &c.Slope}, {AttrCurveOffset, &c.Offset}, {AttrCurveMin, &c.Min}, {AttrCurveMax, &c.Max}} {
		v, ok := attrs[a.key]
		if !ok {
			missing = a.key
			continue
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return fault.Invalidf("attribute %s must be a finite number, got %q", a.key, clip(v))
		}
		*a.dst = f
	}
	if missing != "" {
		if forRun {
			return fault.Invalidf("attribute %s of component in project %d is not set: heating_curve needs %s, %s, %s and %s",
				missing, p.App.ComponentInProjectID, AttrCurveSlope, AttrCurveOffset, AttrCurveMin, AttrCurveMax)
		}
		return nil
	}
	if c.Min > c.Max {
		return fault.Invalidf("attribute %s (%g) is above %s (%g)", AttrCurveMin, c.Min, AttrCurveMax, c.Max)
	}
	p.Curve = &c
	return nil
}
