package window

import (
	"errors"
	"math"
	"testing"
)

func TestAbsoluteHumidity(t *testing.T) {
	def := HumidityUnits{}
	pct := HumidityUnits{RH: "percent"}
	nan := math.NaN()
	cases := []struct {
		name      string
		rh, t, p  float64
		u         HumidityUnits
		formula   float64 // the formula of decisions.md 5, computed by hand (Python, float64)
		reference float64 // psychrometric tables (ASHRAE), which use a finer vapour pressure fit
		tol       float64 // allowed distance from reference
	}{
		{"20 °C 50 %", 0.5, 20, 101325, def, 7.242879035637301, 7.26, 0.02},
		{"20 °C 50 % in percent", 50, 20, 101325, pct, 7.242879035637301, 7.26, 0.02},
		{"30 °C 70 %", 70, 30, 101325, pct, 18.740720641670457, 18.80, 0.07},
		{"0 °C 100 %", 1, 0, 101325, def, 3.7747200482952685, 3.77, 0.01},
		{"−10 °C 80 % (over water)", 0.8, -10, 101325, def, 1.4127910488336828, 1.41, 0.01},
		{"dry air", 0, 25, 101325, def, 0, 0, 0},
		{"no pressure pin: NaN means 101325 Pa", 0.5, 20, nan, HumidityUnits{Pressure: "hPa"}, 7.242879035637301, 7.26, 0.02},
		{"kelvin", 0.5, 293.15, 101325, HumidityUnits{Temperature: "kelvin"}, 7.242879035637301, 7.26, 0.02},
		{"fahrenheit", 0.5, 68, 101325, HumidityUnits{Temperature: "Fahrenheit"}, 7.242879035637301, 7.26, 0.02},
		{"hPa", 0.5, 20, 1013.25, HumidityUnits{Pressure: "hPa"}, 7.242879035637301, 7.26, 0.02},
		{"kPa", 0.5, 20, 101.325, HumidityUnits{Pressure: "kpa"}, 7.242879035637301, 7.26, 0.02},
		{"bar", 0.5, 20, 1.01325, HumidityUnits{Pressure: "BAR"}, 7.242879035637301, 7.26, 0.02},
		{"symbols", 50, 20, 101325, HumidityUnits{RH: "%", Temperature: "°C", Pressure: "Pa"}, 7.242879035637301, 7.26, 0.02},
		{"90 kPa raises the ratio", 0.5, 20, 90000, def, 8.166240364075405, 8.17, 0.01},
		{"slight overshoot is saturation", 1.02, 0, 101325, def, 3.7747200482952685, 3.77, 0.01},
	}
	for _, c := range cases {
		got, err := AbsoluteHumidity(c.rh, c.t, c.p, c.u)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if math.Abs(got-c.formula) > 1e-9 {
			t.Errorf("%s: %.12f, formula gives %.12f", c.name, got, c.formula)
		}
		if math.Abs(got-c.reference) > c.tol {
			t.Errorf("%s: %.4f g/kg, reference %.2f ± %.2f", c.name, got, c.reference, c.tol)
		}
	}
}

func TestAbsoluteHumidityRejects(t *testing.T) {
	for _, c := range []struct {
		name     string
		rh, t, p float64
		u        HumidityUnits
		field    string // a FieldError on this field, else ErrHumidityInput
	}{
		{"percent read as count", 50, 20, 101325, HumidityUnits{}, ""},
		{"negative RH", -0.1, 20, 101325, HumidityUnits{}, ""},
		{"NaN RH", math.NaN(), 20, 101325, HumidityUnits{}, ""},
		{"too hot", 0.5, 120, 101325, HumidityUnits{}, ""},
		{"NaN temperature", 0.5, math.NaN(), 101325, HumidityUnits{}, ""},
		{"zero pressure", 0.5, 20, 0, HumidityUnits{}, ""},
		{"vapour pressure reaches the pressure", 1, 90, 50000, HumidityUnits{}, ""},
		{"RH unit", 0.5, 20, 101325, HumidityUnits{RH: "kelvin"}, "relative_humidity_unit"},
		{"temperature unit", 0.5, 20, 101325, HumidityUnits{Temperature: "C"}, "temperature_unit"},
		{"pressure unit", 0.5, 20, 101325, HumidityUnits{Pressure: "m"}, "pressure_unit"},
	} {
		_, err := AbsoluteHumidity(c.rh, c.t, c.p, c.u)
		var fe *FieldError
		switch {
		case c.field == "" && !errors.Is(err, ErrHumidityInput):
			t.Errorf("%s: %v, want ErrHumidityInput", c.name, err)
		case c.field != "" && (!errors.As(err, &fe) || fe.Field != c.field):
			t.Errorf("%s: %v, want a FieldError on %s", c.name, err, c.field)
		case c.field != "" && c.u.Validate() == nil:
			t.Errorf("%s: Validate accepted %+v", c.name, c.u)
		}
	}
	if err := (HumidityUnits{RH: "Percent", Temperature: "KELVIN", Pressure: "mbar"}).Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
}
