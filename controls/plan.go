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
	// Continues: the app ran on another node of a cluster until now
	// (Reconcile). A value that activation wrote and the device took
	// stays; it is not written again (continueFrom).
	Continues bool
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
	if _, ok := attrs[AttrSchedule]; !ok && forRun {
		return fault.Invalidf("attribute %s of component in project %d is not set: the schedule app writes its entries", AttrSchedule, p.App.ComponentInProjectID)
	}
	s, err := scheduleOf(attrs)
	p.Schedule = s
	return err
}

// scheduleOf is the schedule the attributes set, nil when
// setpoint_schedule is unset; those set must be valid (400 naming one).
func scheduleOf(attrs map[string]string) (*Schedule, error) {
	var def *float64
	if v, ok := attrs[AttrScheduleDefault]; ok {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, fault.Invalidf("attribute %s must be a finite number, got %q", AttrScheduleDefault, fault.Clip(v))
		}
		def = &f
	}
	zone := attrs[AttrScheduleTimezone]
	if _, err := loadZone(zone); err != nil {
		return nil, fault.Invalidf("attribute %s", err.Error())
	}
	raw, ok := attrs[AttrSchedule]
	if !ok {
		return nil, nil
	}
	s, err := ParseSchedule(raw, def, zone)
	if err != nil {
		return nil, fault.Invalidf("attribute %s", err.Error())
	}
	return s, nil
}

func (p *Plan) prepareCurve(attrs map[string]string, forRun bool) error {
	c, missing, err := curveOf(attrs)
	switch {
	case err != nil:
		return err
	case missing != "" && forRun:
		return fault.Invalidf("attribute %s of component in project %d is not set: heating_curve needs %s, %s, %s and %s",
			missing, p.App.ComponentInProjectID, AttrCurveSlope, AttrCurveOffset, AttrCurveMin, AttrCurveMax)
	case missing == "":
		p.Curve = &c
	}
	return nil
}

// curveOf is the heating curve the attributes set and the first of its
// attributes unset ("" when all are); those set must be valid (400 naming
// one), the minimum no higher than the maximum.
func curveOf(attrs map[string]string) (c Curve, missing string, err error) {
	for _, a := range []struct {
		key string
		dst *float64
	}{{AttrCurveSlope, &c.Slope}, {AttrCurveOffset, &c.Offset}, {AttrCurveMin, &c.Min}, {AttrCurveMax, &c.Max}} {
		v, ok := attrs[a.key]
		if !ok {
			if missing == "" {
				missing = a.key
			}
			continue
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return c, missing, fault.Invalidf("attribute %s must be a finite number, got %q", a.key, fault.Clip(v))
		}
		*a.dst = f
	}
	_, hasMin := attrs[AttrCurveMin]
	_, hasMax := attrs[AttrCurveMax]
	if hasMin && hasMax && c.Min > c.Max {
		return c, missing, fault.Invalidf("attribute %s (%g) is above %s (%g)", AttrCurveMin, c.Min, AttrCurveMax, c.Max)
	}
	return c, missing, nil
}

// CheckAttributes checks a mapped component's attribute values (key ->
// value, as stored) with the rules a run applies, so that a value the run
// would refuse is refused when it is written: a schedule that does not
// parse or overlaps itself, a time of day past 24:00, an unknown time
// zone, a heating curve whose minimum is above its maximum. Attributes no
// algorithm reads pass.
func CheckAttributes(attrs map[string]string) error {
	if _, err := scheduleOf(attrs); err != nil {
		return err
	}
	_, _, err := curveOf(attrs)
	return err
}
