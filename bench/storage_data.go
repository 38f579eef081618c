package bench

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/openbdp/bdp/store"
)

// The data of bdp-bench storage: a month of one-minute measurements from
// the BSRN station Payerne (June 2016: irradiance, air temperature,
// humidity, pressure), as pvlib 0.10.5 ships it on PyPI
// (scripts/fetch-pvlib-data.sh), turned into the kinds of series a
// building sends and stretched over -weeks by reading each series from
// its own minute of the month on, wrapping round at the month's end.

// bsrnMinutes is June's length in minutes: the file's LR0100 block has a
// record for every one of them.
const bsrnMinutes = 30 * 24 * 60

// bsrn columns, in the order of an LR0100 record's averages.
const (
	colGHI      = iota // global irradiance, W/m², whole numbers
	colDNI             // direct normal irradiance
	colDHI             // diffuse irradiance
	colLWD             // longwave downward irradiance
	colTemp            // air temperature, °C to 0.1
	colRH              // relative humidity, % to 0.1
	colPressure        // hPa, whole numbers
	bsrnColumns
)

// bsrnMonth is the month's averages by column and minute; NaN where the
// station recorded none.
type bsrnMonth [bsrnColumns][]float64

// DefaultStorageData is where scripts/fetch-pvlib-data.sh caches the file.
func DefaultStorageData() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		dir = filepath.Join(os.Getenv("HOME"), ".cache")
	}
	return filepath.Join(dir, "bdp", "pvlib-0.10.5", "bsrn-pay0616.dat.gz")
}

// readBSRN parses the LR0100 block of a BSRN station-to-archive file
// (gzipped): two lines a minute, "day minute" and the averages, minimum,
// maximum and deviation of global and direct irradiance on the first;
// diffuse and longwave the same way, then temperature, humidity and
// pressure on the second. -999 and -99.9 mark what is missing.
func readBSRN(path string) (*bsrnMonth, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("storage data (run scripts/fetch-pvlib-data.sh): %w", err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("storage data %s: %w", path, err)
	}
	m, err := parseBSRN(zr)
	if err != nil {
		return nil, fmt.Errorf("storage data %s: %w", path, err)
	}
	return m, nil
}

func parseBSRN(r io.Reader) (*bsrnMonth, error) {
	var m bsrnMonth
	for c := range m {
		m[c] = make([]float64, bsrnMinutes)
		for i := range m[c] {
			m[c][i] = math.NaN()
		}
	}
	sc := bufio.NewScanner(r)
	in, records := false, 0
	var first []string
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "*") {
			if in {
				break
			}
			in = line == "*U0100" || line == "*C0100"
			continue
		}
		if !in {
			continue
		}
		fields := strings.Fields(line)
		if first == nil {
			first = fields
			continue
		}
		if len(first) != 10 || len(fields) != 11 {
			return nil, fmt.Errorf("LR0100 record %d: %d and %d fields, want 10 and 11", records+1, len(first), len(fields))
		}
		day, err1 := strconv.Atoi(first[0])
		minute, err2 := strconv.Atoi(first[1])
		at := (day-1)*1440 + minute
		if err1 != nil || err2 != nil || at < 0 || at >= bsrnMinutes {
			return nil, fmt.Errorf("LR0100 record %d: day %q minute %q", records+1, first[0], first[1])
		}
		for c, s := range []string{first[2], first[6], fields[0], fields[4], fields[8], fields[9], fields[10]} {
			v, err := strconv.ParseFloat(s, 64)
			if err != nil {
				return nil, fmt.Errorf("LR0100 record %d: %w", records+1, err)
			}
			if v != -999 && v != -99.9 {
				m[c][at] = v
			}
		}
		first = nil
		records++
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if records != bsrnMinutes {
		return nil, fmt.Errorf("%d LR0100 records, want %d (one a minute of June)", records, bsrnMinutes)
	}
	return &m, nil
}

// at is a column's value at minute i of the stretched series (wrapping).
func (m *bsrnMonth) at(c, i int) float64 { return m[c][i%bsrnMinutes] }

// storageKind is a kind of series; each is sealed into datapoints of its
// own, so that its bytes can be told apart.
type storageKind string

const (
	kindFixed    storageKind = "fixed_cadence"   // decimal sensors on the minute
	kindJittered storageKind = "jittered"        // the same a minute, ± 2 s at millisecond resolution
	kindCOV      storageKind = "change_of_value" // only changes, at irregular seconds
	kindOnOff    storageKind = "on_off"          // 0 or 1 a minute
	kindMeter    storageKind = "meter"           // monotonic energy, kWh to 0.01
	kindFull     storageKind = "full_precision"  // a virtual datapoint's moving mean, float64
)

// storageKinds lists the kinds in the report's order.
func storageKinds() []storageKind {
	return []storageKind{kindFixed, kindJittered, kindFull, kindCOV, kindOnOff, kindMeter}
}

// storageLayout is the kind of each datapoint of a group of twelve, the
// mix a building sends: mostly sensors polled on a fixed cadence, some
// through gateways that stamp their own (jittered) time, a sensor
// reporting on change, on/off states of pumps and lights, a meter and a
// computed output. Datapoint i is of kind storageLayout()[i%12].
func storageLayout() []storageKind {
	return []storageKind{kindFixed, kindFixed, kindFixed, kindFixed, kindFixed, kindJittered, kindJittered,
		kindCOV, kindOnOff, kindOnOff, kindMeter, kindFull}
}

// series makes one datapoint's observations, a week at a time, in order:
// change-of-value, on/off and meter series carry state from week to week.
type series struct {
	kind   storageKind
	col    int     // the column it derives from
	offset int     // its minute of the month at the data's start
	scale  float64 // values are multiples of 1/scale (10: 0.1, 100: 0.01); 0: full precision
	a, b   float64 // value = a×column + b before rounding
	band   float64 // change of value: the smallest change reported
	rng    *rand.Rand

	last  float64 // change of value: the last value reported; on/off: the state
	sent  bool
	meter float64 // kWh so far
}

// newSeries derives datapoint i's series from seed, deterministically.
func newSeries(seed uint64, i int) *series {
	rng := rand.New(rand.NewPCG(seed, uint64(i)))
	s := &series{kind: storageLayout()[i%len(storageLayout())], offset: rng.IntN(bsrnMinutes), rng: rng, a: 1}
	switch s.kind {
	case kindFixed:
		// Even slots: a column as the station's sensor reports it (0.1 °C,
		// 0.1 %, whole W/m² and hPa), offset by whole steps so that
		// datapoints differ. Odd slots: a room or supply temperature
		// following the outside air, reported to 0.01 °C.
		if i%2 == 0 {
			s.col = []int{colTemp, colRH, colGHI, colDHI, colLWD, colPressure}[rng.IntN(6)]
			s.scale = 1
			if s.col == colTemp || s.col == colRH {
				s.scale = 10
			}
			s.b = float64(rng.IntN(41)-20) / s.scale
		} else {
			s.col, s.scale, s.a, s.b = colTemp, 100, 0.2+0.4*rng.Float64(), 15+5*rng.Float64()
		}
	case kindJittered:
		s.col, s.scale, s.a, s.b = colTemp, 100, 0.2+0.4*rng.Float64(), 15+5*rng.Float64()
	case kindCOV:
		s.col, s.scale = colTemp, 10
		s.band = 0.2
		if rng.IntN(2) == 0 {
			s.col, s.band = colRH, 1
		}
	case kindOnOff:
		s.col, s.b = colGHI, 50+350*rng.Float64() // on above this irradiance, off below 80 % of it
	case kindMeter:
		// A roof's PV yield: irradiance × area × efficiency, integrated.
		s.col, s.a, s.scale = colGHI, (10+90*rng.Float64())*0.18/1000/60, 100
		s.meter = float64(rng.IntN(5_000_000)) / 100
	case kindFull:
		s.col, s.a, s.b = []int{colTemp, colGHI, colRH}[rng.IntN(3)], 0.5+rng.Float64(), 10*rng.Float64()
	}
	return s
}

func (s *series) round(v float64) float64 { return math.Round(v*s.scale) / s.scale }

// week appends week w's observations of datapoint dp, whose data starts
// at start, to dst.
func (s *series) week(m *bsrnMonth, dp int64, start time.Time, w int, dst []store.Row) []store.Row {
	const perWeek = 7 * 24 * 60
	for k := w * perWeek; k < (w+1)*perWeek; k++ {
		at := start.Add(time.Duration(k) * time.Minute)
		x := m.at(s.col, s.offset+k)
		switch s.kind {
		case kindFixed:
			if !math.IsNaN(x) {
				dst = append(dst, store.Row{Datapoint: dp, Time: at, Value: s.round(s.a*x + s.b)})
			}
		case kindJittered:
			if !math.IsNaN(x) {
				jitter := time.Duration(s.rng.IntN(4001)-2000) * time.Millisecond
				dst = append(dst, store.Row{Datapoint: dp, Time: at.Add(jitter), Value: s.round(s.a*x + s.b)})
			}
		case kindCOV:
			if v := s.round(x); !math.IsNaN(x) && (!s.sent || math.Abs(v-s.last) >= s.band-1e-9) {
				s.last, s.sent = v, true
				at = at.Add(time.Duration(s.rng.IntN(60)) * time.Second)
				dst = append(dst, store.Row{Datapoint: dp, Time: at, Value: v})
			}
		case kindOnOff:
			// Hysteresis: on above the threshold, off below 80 % of it; a
			// gap in the irradiance leaves the state as it was.
			if x > s.b {
				s.last = 1
			} else if x < 0.8*s.b {
				s.last = 0
			}
			dst = append(dst, store.Row{Datapoint: dp, Time: at, Value: s.last})
		case kindMeter:
			if x > 0 {
				s.meter += s.a * x
			}
			dst = append(dst, store.Row{Datapoint: dp, Time: at, Value: s.round(s.meter)})
		case kindFull:
			// A 15-minute moving mean, scaled, as a formula's output: no
			// rounding anywhere.
			var sum float64
			n := 0
			for j := range 15 {
				if v := m.at(s.col, s.offset+k+bsrnMinutes-j); !math.IsNaN(v) {
					sum += v
					n++
				}
			}
			if n > 0 {
				dst = append(dst, store.Row{Datapoint: dp, Time: at, Value: s.a*sum/float64(n) + s.b})
			}
		}
	}
	return dst
}
