package window

import (
	"errors"
	"fmt"
	"math"

	"github.com/openbdp/bdp/units"
)

// StandardPressure is the pressure used when the absolute humidity has no
// pressure pin (api.md 2.11), in Pa.
const StandardPressure = 101325.0

// HumidityUnits are the unit parameters of the absolute humidity type
// (api.md 2.11): relative_humidity_unit, temperature_unit, pressure_unit.
// Names are those of package units, so a datapoint's units tag fits
// unchanged, in any case: count (or ratio, fraction: φ as 0..1) and percent
// (%); celsius (°C), kelvin (K), fahrenheit (°F); Pa, hPa, kPa, mbar, bar
// (and psi). Empty fields take the defaults count, celsius and Pa.
type HumidityUnits struct {
	RH, Temperature, Pressure string
}

// resolve looks the three units up and checks that each measures the right
// thing; the errors name the config parameter.
func (u HumidityUnits) resolve() (rh, t, p units.Unit, err error) {
	if rh, err = lookupUnit("relative_humidity_unit", u.RH, "count", units.Ratio); err != nil {
		return
	}
	if t, err = lookupUnit("temperature_unit", u.Temperature, "celsius", units.Temperature); err != nil {
		return
	}
	p, err = lookupUnit("pressure_unit", u.Pressure, "Pa", units.Pressure)
	return
}

func lookupUnit(field, name, def string, dim units.Dimension) (units.Unit, error) {
	if name == "" {
		name = def
	}
	u, ok := units.Lookup(name)
	if !ok || u.Dimension != dim {
		return units.Unit{}, fieldErr(field, "%q is not a unit of %s", name, dimName(dim))
	}
	return u, nil
}

func dimName(d units.Dimension) string {
	switch d {
	case units.Ratio:
		return "relative humidity (count or percent)"
	case units.Temperature:
		return "temperature (celsius, kelvin or fahrenheit)"
	}
	return "pressure (Pa, hPa, kPa or bar)"
}

// Validate checks the unit parameters at configuration time.
func (u HumidityUnits) Validate() error {
	_, _, _, err := u.resolve()
	return err
}

// toBase converts v to the unit's dimension base (fraction, °C, Pa).
func toBase(u units.Unit, v float64) float64 { return (v + u.Offset) * u.Factor }

// ErrHumidityInput marks an input AbsoluteHumidity cannot compute from; the
// calculation then writes nothing (a sensor glitch must not stop the
// virtual datapoint).
var ErrHumidityInput = errors.New("absolute humidity: input out of range")

// AbsoluteHumidity is the humidity ratio in grams of water per kilogram of
// dry air (decisions.md 5): x = 622 · pv / (p − pv), pv = φ · ps(T),
// ps = 611.2 · exp(17.62 · T / (243.12 + T)) Pa (Magnus over water, T in
// °C). rh, temp and pressure are in the units of u. A NaN pressure means the
// pressure pin is absent (Calc.Values yields NaN for it): StandardPressure
// in Pa, whatever u.Pressure says.
//
// Ranges, each failure wrapping ErrHumidityInput: φ in [0, 1.05], with
// values above 1 taken as saturation (sensors overshoot 100 % by a few
// percent near condensation; anything more is a wrong unit, for example
// percent read as count); T in [−100, 100] °C (the Magnus fit is made for
// −45..60 °C, and past 100 °C water boils at sea level); p > 0 and above
// the vapour pressure.
func AbsoluteHumidity(rh, temp, pressure float64, u HumidityUnits) (float64, error) {
	urh, ut, up, err := u.resolve()
	if err != nil {
		return 0, err
	}
	phi := toBase(urh, rh)
	t := toBase(ut, temp)
	p := StandardPressure
	if !math.IsNaN(pressure) {
		p = toBase(up, pressure)
	}
	switch {
	case !(phi >= 0 && phi <= 1.05): // also catches NaN
		return 0, fmt.Errorf("%w: relative humidity %v %s is outside 0..105 %%", ErrHumidityInput, rh, urh.ID)
	case !(t >= -100 && t <= 100):
		return 0, fmt.Errorf("%w: temperature %v %s is outside -100..100 °C", ErrHumidityInput, temp, ut.ID)
	case !(p > 0) || math.IsInf(p, 0):
		return 0, fmt.Errorf("%w: pressure %v %s is not positive", ErrHumidityInput, pressure, up.ID)
	}
	phi = min(phi, 1)
	ps := 611.2 * math.Exp(17.62*t/(243.12+t))
	pv := phi * ps
	if pv >= p {
		return 0, fmt.Errorf("%w: vapour pressure %.0f Pa reaches the pressure %.0f Pa", ErrHumidityInput, pv, p)
	}
	return 622 * pv / (p - pv), nil
}
