package bench

import (
	"context"
	"math"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openbdp/bdp/pipeline/kafkatest"
	"github.com/openbdp/bdp/store"
)

// Every kind of series comes out in time order, once a time, of the
// values its kind promises, and the same for the same seed.
func TestStorageSeries(t *testing.T) {
	var m bsrnMonth
	for c := range m {
		m[c] = make([]float64, bsrnMinutes)
		for i := range m[c] {
			// A day's curve, whole W/m² and tenths of a degree, and a gap.
			day := math.Max(0, math.Sin(2*math.Pi*float64(i%1440)/1440))
			m[c][i] = math.Round(day*800*10) / 10
			if i%5000 == 7 {
				m[c][i] = math.NaN()
			}
		}
	}
	start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range storageLayout() {
		a, b := newSeries(7, i), newSeries(7, i)
		var rows, again []store.Row
		for w := range 2 {
			rows = a.week(&m, 1, start, w, rows)
			again = b.week(&m, 1, start, w, again)
		}
		if !slices.Equal(rows, again) || len(rows) == 0 {
			t.Fatalf("%s: %d rows, again %d, not the same", a.kind, len(rows), len(again))
		}
		for j, r := range rows {
			if j > 0 && !r.Time.After(rows[j-1].Time) {
				t.Fatalf("%s: row %d at %v after %v", a.kind, j, r.Time, rows[j-1].Time)
			}
			switch a.kind {
			case kindOnOff:
				if r.Value != 0 && r.Value != 1 {
					t.Fatalf("on/off value %v", r.Value)
				}
			case kindMeter:
				if j > 0 && r.Value < rows[j-1].Value {
					t.Fatalf("meter goes back from %v to %v", rows[j-1].Value, r.Value)
				}
			case kindFixed, kindJittered, kindCOV:
				if s := a.scale; math.Round(r.Value*s)/s != r.Value {
					t.Fatalf("%s: %v is not a multiple of 1/%v", a.kind, r.Value, s)
				}
			}
		}
	}
}

// TestStorageTiny runs bdp-bench storage at a scale of seconds: every
// figure of issue 21's table is reported (not held to its goal here), and
// the late-write test lost or doubled nothing.
func TestStorageTiny(t *testing.T) {
	brokers := kafkatest.Brokers(t)
	data, err := exec.Command("bash", "../scripts/fetch-pvlib-data.sh").Output()
	if err != nil {
		t.Fatalf("scripts/fetch-pvlib-data.sh: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "bdp")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/bdp").CombinedOutput(); err != nil {
		t.Fatalf("build bdp: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := Storage(ctx, StorageOptions{Binary: bin, Brokers: brokers, Data: strings.TrimSpace(string(data)), Scale: 0.01,
		LateDuration: 3 * time.Second, Progress: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range StorageKeys {
		if _, ok := res[k]; !ok {
			t.Errorf("no %s in %v", k, res)
		}
	}
	if n, _ := res["lost_or_duplicated"].(int64); n != 0 {
		t.Errorf("lost_or_duplicated %d: %v", n, res)
	}
	if n, _ := res["late_writes"].(int64); n == 0 {
		t.Errorf("the late-write test wrote nothing: %v", res)
	}
}
