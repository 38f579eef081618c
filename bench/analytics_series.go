package bench

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/openbdp/bdp/store"
)

// Synthetic 1-minute series for the analysis functions: every pin of a
// mapped component gets a shape a building would show, derived from one
// plant per component so that its pins agree (the pump runs while the
// operating message says on, the meter counts what the power pin draws,
// the supply temperature follows the outdoor temperature along a heating
// curve and swings around its setpoint). The kernels need plausible
// values, not a building's physics.

// plant is the building part behind one mapped component. Minute 0 is a
// Monday 00:00 UTC; seed varies the cycles and the weather between plants.
type plant struct {
	component string
	seed      uint64
}

const minutesPerDay = 24 * 60

// noise is a deterministic pseudo-random number in [-1, 1) for minute i
// (splitmix64 of seed and i).
func (pl plant) noise(i int) float64 {
	z := pl.seed*0x9e3779b97f4a7c15 + uint64(i)
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	z ^= z >> 31
	return float64(z>>11)/float64(1<<52) - 1
}

// occupied: working days 07:00 to 18:00.
func occupied(i int) bool {
	day, m := i/minutesPerDay, i%minutesPerDay
	return day%7 < 5 && m >= 7*60 && m < 18*60
}

// operating is the plant's on/off pattern: cycles of 24 to 40 minutes,
// on for 65 % of each cycle from 06:00 to 22:00 and 25 % at night.
func (pl plant) operating(i int) bool {
	cycle := 24 + int(pl.seed%17)
	duty := 0.25
	if m := i % minutesPerDay; m >= 6*60 && m < 22*60 {
		duty = 0.65
	}
	return float64((i+int(pl.seed))%cycle) < duty*float64(cycle)
}

func (pl plant) on(i int) float64 {
	if pl.operating(i) {
		return 1
	}
	return 0
}

// outdoor temperature, °C: a daily swing around a mean that drifts over
// days, coldest at 03:00.
func (pl plant) outdoor(i int) float64 {
	day := float64(i) / minutesPerDay
	return 4 + 5*math.Sin(2*math.Pi*(day-0.375)) + 3*math.Sin(2*math.Pi*day/5.3+float64(pl.seed%7))
}

// curve is the supply temperature a heating curve through (-12 °C, 70 °C)
// and (20 °C, 25 °C) asks for.
func curve(outdoor float64) float64 {
	return 70 - (min(max(outdoor, -12), 20)+12)*45/32
}

// swing is a control loop's oscillation around its setpoint: a 14-minute
// period, 1.2 K, with some noise.
func (pl plant) swing(i int) float64 {
	return 1.2*math.Sin(2*math.Pi*float64(i)/14) + 0.2*pl.noise(i)
}

// co2 in ppm: outdoor level at night, rising with occupancy to about
// 1,300 ppm in the afternoon.
func (pl plant) co2(i int) float64 {
	m := i % minutesPerDay
	v := 420 + 15*pl.noise(i)
	if occupied(i) {
		v += 880 * math.Pow(math.Sin(math.Pi*float64(m-7*60)/(11*60)), 0.8)
	}
	return v
}

// series returns the generator of pin's values, to be called with minute
// 0, 1, 2, ... in order (a meter's generator keeps its count).
func (pl plant) series(pin store.CatalogPin) func(i int) float64 {
	name := pin.AlphanumericID
	switch pin.Unit {
	case "binary":
		return pl.binary(name)
	case "kWh":
		// A counter of what the matching power pin draws.
		power := pl.power(strings.TrimSuffix(strings.TrimSuffix(name, "_meter"), "energy"))
		var count float64
		return func(i int) float64 {
			count += power(i) / 60
			return 10_000 + count
		}
	case "kW":
		return pl.power(name)
	case "°C":
		return pl.temperature(name)
	case "ppm":
		switch name {
		case "co2_setpoint":
			return func(int) float64 { return 1000 }
		case "voc":
			return func(i int) float64 { return 150 + 0.4*(pl.co2(i)-420) }
		case "exhaust_co", "exhaust_nox":
			return func(i int) float64 { return 50*pl.on(i) + 5*pl.noise(i) + 5 }
		}
		return pl.co2
	case "%":
		switch {
		case name == "valve_position_setpoint":
			return func(int) float64 { return 45 }
		case name == "valve_position":
			return func(i int) float64 { return 45 + 15*pl.swing(i) }
		case strings.Contains(name, "humidity"):
			return func(i int) float64 { return 45 + 8*math.Sin(2*math.Pi*float64(i)/minutesPerDay) + pl.noise(i) }
		case name == "inverter_speed":
			return func(i int) float64 { return 70 * pl.on(i) }
		}
		return func(i int) float64 { return 50 + 40*math.Sin(2*math.Pi*float64(i)/(3*minutesPerDay)) }
	case "l/s":
		return func(i int) float64 { return 0.75*pl.on(i) + 0.05 + 0.01*pl.noise(i) }
	case "m³/h":
		return func(i int) float64 { return 4000*pl.on(i) + 20*pl.noise(i) }
	case "rpm":
		return func(i int) float64 { return 1800 * pl.on(i) }
	case "Pa":
		return func(i int) float64 { return 250*pl.on(i) + 3*pl.noise(i) }
	case "W/m²":
		return func(i int) float64 {
			return max(0, 550*math.Sin(math.Pi*float64(i%minutesPerDay-6*60)/(12*60)))
		}
	case "m/s":
		return func(i int) float64 { return 3 + 2*math.Sin(2*math.Pi*float64(i)/(2*minutesPerDay)) + 0.5*pl.noise(i) }
	}
	return func(i int) float64 { return pl.noise(i) }
}

func (pl plant) binary(name string) func(int) float64 {
	switch name {
	case "presence":
		return func(i int) float64 { return b2f(occupied(i)) }
	case "window_opening":
		return func(i int) float64 { return b2f(occupied(i) && i%120 < 10) }
	case "malfunction_message", "dew_point_alarm":
		// One half-hour event a week, on Wednesdays at 10:00.
		return func(i int) float64 {
			return b2f(i/minutesPerDay%7 == 2 && i%minutesPerDay >= 600 && i%minutesPerDay < 630)
		}
	}
	return pl.on
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// power in kW of a power pin (or of the power a meter counts).
func (pl plant) power(name string) func(int) float64 {
	switch {
	case name == "power" || name == "": // an electricity meter: the building's load
		return func(i int) float64 { return 6 + 18*b2f(occupied(i)) + 2*pl.noise(i) + 2 }
	case strings.Contains(name, "heat"): // heat_flow, condenser_heat_flow, evaporator_heat_flow, heat
		return func(i int) float64 { return 25*pl.on(i) + 0.5*pl.noise(i) + 0.5 }
	case strings.Contains(name, "generation"):
		return func(i int) float64 { return 15 * pl.on(i) }
	}
	return func(i int) float64 { return 4*pl.on(i) + 0.2 + 0.05*pl.noise(i) }
}

// temperature in °C of a temperature pin of pl's component.
func (pl plant) temperature(name string) func(int) float64 {
	supply := func(i int) float64 { return curve(pl.outdoor(i)) }
	hot := func(i int) float64 { // a supply under control: on its curve, swinging
		if !pl.operating(i) {
			return supply(i) - 4
		}
		return supply(i) + pl.swing(i)
	}
	switch name {
	case "outside_air_temperature", "reference_temperature":
		return pl.outdoor
	case "dew_point":
		return func(i int) float64 { return pl.outdoor(i) - 3 }
	case "operative_temperature":
		return func(i int) float64 {
			return 21 + 1.5*b2f(occupied(i)) + 0.6*math.Sin(2*math.Pi*float64(i)/minutesPerDay)
		}
	case "temperature_setpoint":
		return func(i int) float64 { return 19 + 2*b2f(occupied(i)) }
	case "temperature":
		if pl.component == "weather_station" {
			// The sensor reads warm in the midday sun.
			return func(i int) float64 {
				return pl.outdoor(i) + 0.3 + 2.5*max(0, math.Sin(math.Pi*float64(i%minutesPerDay-9*60)/(6*60)))
			}
		}
		return func(i int) float64 { return 20.5 + 1.5*b2f(occupied(i)) + pl.swing(i)/3 }
	case "supply_air_temperature_setpoint":
		return func(int) float64 { return 19 }
	case "supply_air_temperature":
		return func(i int) float64 { return 19 + pl.swing(i) }
	case "return_air_temperature":
		return func(i int) float64 { return 22 + 0.3*pl.noise(i) }
	case "exhaust_air_temperature":
		return func(i int) float64 { return 21 + 0.3*pl.noise(i) }
	case "exhaust_temperature":
		return func(i int) float64 { return 60 + 50*pl.on(i) }
	case "condenser_outlet_temperature_setpoint":
		return func(int) float64 { return 45 }
	case "condenser_outlet_temperature":
		return func(i int) float64 { return 45 + pl.swing(i) }
	case "condenser_inlet_temperature":
		return func(i int) float64 { return 39 + 0.3*pl.noise(i) }
	case "evaporator_outlet_temperature_setpoint":
		return func(int) float64 { return 4 }
	case "evaporator_inlet_temperature":
		return func(i int) float64 { return 8 + 0.3*pl.noise(i) }
	case "evaporator_outlet_temperature":
		return func(i int) float64 { return 4 + pl.swing(i)/2 }
	case "outlet_temperature_setpoint":
		return supply
	case "return_temperature":
		return func(i int) float64 { return hot(i) - 10 }
	case "outlet_temperature":
		if pl.component == "heat_meter" { // a heat meter's outlet is the return
			return func(i int) float64 { return hot(i) - 10 }
		}
		return hot
	case "inlet_temperature":
		switch pl.component {
		case "heat_meter":
			return hot
		case "thermal_control_loop": // from the generator, ahead of the mixing valve
			return func(i int) float64 { return supply(i) + 3 }
		}
		return func(i int) float64 { return hot(i) - 10 } // a generator's inlet is the return
	}
	return func(i int) float64 { return 20 + pl.noise(i) }
}

// seriesLoad is one datapoint to fill: its name in the project and the
// generator of its values.
type seriesLoad struct {
	name   string
	values func(i int) float64
}

// loadSeries creates the datapoints of project and stores minutes
// 1-minute values of each from first on, with COPY, two datapoints at a
// time (the machine has two cores; PostgreSQL does the most of the work).
func loadSeries(ctx context.Context, st *store.Store, project int64, loads []seriesLoad, first time.Time, minutes int) error {
	names := make([]string, len(loads))
	for i, l := range loads {
		names[i] = l.name
	}
	ids, err := st.EnsureDatapoints(ctx, project, names)
	if err != nil {
		return err
	}
	if err := st.EnsurePartitions(ctx, first, first.Add(time.Duration(minutes)*time.Minute)); err != nil {
		return err
	}
	work := make(chan seriesLoad)
	errs := make(chan error, 2)
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]store.Row, 0, 7*minutesPerDay)
			for l := range work {
				for i := range minutes {
					v := math.Round(l.values(i)*100) / 100
					buf = append(buf, store.Row{Datapoint: ids[l.name], Time: first.Add(time.Duration(i) * time.Minute), Value: v})
					if len(buf) == cap(buf) || i == minutes-1 {
						if err := st.WriteObservations(ctx, buf); err != nil {
							errs <- fmt.Errorf("load %s: %w", l.name, err)
							return
						}
						buf = buf[:0]
					}
				}
			}
		}()
	}
	var failed error
feed:
	for _, l := range loads {
		select {
		case work <- l:
		case failed = <-errs:
			break feed
		}
	}
	close(work)
	wg.Wait()
	close(errs)
	if failed != nil {
		return failed
	}
	return <-errs // nil when no worker failed
}

// settle makes the loaded history look like one a running platform has
// had for a while: VACUUM sets the visibility map, without which the
// runs' index-only scans visit every heap page (autovacuum would have done
// it long ago), and ANALYZE gives the planner its statistics. The
// throwaway cluster commits asynchronously, and VACUUM marks a page
// all-visible only once its rows' commits are flushed: CHECKPOINT flushes
// them first, and once more after, so that the vacuum's own writes are
// not flushed in the middle of a measurement.
func settle(ctx context.Context, db *pgx.Conn) error {
	for _, sql := range []string{`CHECKPOINT`, `VACUUM (ANALYZE) observations`, `CHECKPOINT`} {
		if _, err := db.Exec(ctx, sql); err != nil {
			return fmt.Errorf("%s: %w", sql, err)
		}
	}
	return nil
}
