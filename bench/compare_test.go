package bench

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"
)

func TestCompareRuns(t *testing.T) {
	for _, tc := range []struct {
		name            string
		base, head      string // one JSON object a line, a run each
		wantBase        map[string]float64
		wantHead        map[string]float64
		wantRatio       map[string]float64
		wantKeysInOrder []string
	}{
		{
			name:            "odd rounds take the middle run",
			base:            `{"p99_ms":30,"rate":100}` + "\n" + `{"p99_ms":10,"rate":300}` + "\n" + `{"p99_ms":20,"rate":200}`,
			head:            `{"p99_ms":15,"rate":400}` + "\n" + `{"p99_ms":5,"rate":100}` + "\n" + `{"p99_ms":10,"rate":300}`,
			wantBase:        map[string]float64{"p99_ms": 20, "rate": 200},
			wantHead:        map[string]float64{"p99_ms": 10, "rate": 300},
			wantRatio:       map[string]float64{"p99_ms": 0.5, "rate": 1.5},
			wantKeysInOrder: []string{"p99_ms", "rate"},
		},
		{
			name:            "even rounds average the two middle runs",
			base:            `{"x":1}` + "\n" + `{"x":4}`,
			head:            `{"x":3}` + "\n" + `{"x":2}` + "\n" + `{"x":100}` + "\n" + `{"x":0}`,
			wantBase:        map[string]float64{"x": 2.5},
			wantHead:        map[string]float64{"x": 2.5},
			wantRatio:       map[string]float64{"x": 1},
			wantKeysInOrder: []string{"x"},
		},
		{
			name:            "labels are no figures; nested objects give dotted keys",
			base:            `{"vdps":10,"ok":true,"name":"a","functions":{"mean":{"p50_ms":8}}}`,
			head:            `{"vdps":10,"ok":false,"name":"b","functions":{"mean":{"p50_ms":4}}}`,
			wantBase:        map[string]float64{"vdps": 10, "functions.mean.p50_ms": 8},
			wantHead:        map[string]float64{"vdps": 10, "functions.mean.p50_ms": 4},
			wantRatio:       map[string]float64{"vdps": 1, "functions.mean.p50_ms": 0.5},
			wantKeysInOrder: []string{"functions.mean.p50_ms", "vdps"},
		},
		{
			// A figure one side's runs did not all report, or only one side
			// has (a key the base revision did not know yet), gets no ratio;
			// nor does a base of 0.
			name:            "a figure missing from a run or a side, or 0 on base, has no ratio",
			base:            `{"a":1,"z":0}` + "\n" + `{"a":3,"partial":1,"z":0}`,
			head:            `{"a":4,"new":7,"partial":1,"z":5}` + "\n" + `{"a":4,"new":9,"partial":1,"z":5}`,
			wantBase:        map[string]float64{"a": 2, "z": 0},
			wantHead:        map[string]float64{"a": 4, "new": 8, "partial": 1, "z": 5},
			wantRatio:       map[string]float64{"a": 2},
			wantKeysInOrder: []string{"a", "new", "partial", "z"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := CompareRuns(parseRuns(t, tc.base), parseRuns(t, tc.head))
			for _, m := range []struct {
				name      string
				got, want map[string]float64
			}{{"base", c.Base, tc.wantBase}, {"head", c.Head, tc.wantHead}, {"ratio", c.Ratio, tc.wantRatio}} {
				if !maps.Equal(m.got, m.want) {
					t.Errorf("%s medians %v, want %v", m.name, m.got, m.want)
				}
			}
			if !slices.Equal(c.Keys, tc.wantKeysInOrder) {
				t.Errorf("keys %v, want %v", c.Keys, tc.wantKeysInOrder)
			}
		})
	}
}

func parseRuns(t *testing.T, lines string) []map[string]any {
	t.Helper()
	var runs []map[string]any
	for _, l := range strings.Split(lines, "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatal(err)
		}
		runs = append(runs, m)
	}
	return runs
}

func TestLastJSONObject(t *testing.T) {
	for _, tc := range []struct {
		name    string
		out     string
		want    map[string]any
		wantErr string
	}{
		{name: "progress lines before, blank lines after", out: "loading 20M rows\n{\"a\":1}\n\n{\"p50_ms\":1.5}\n\n",
			want: map[string]any{"p50_ms": 1.5}},
		{name: "nothing printed", out: "\n\n", wantErr: "printed nothing"},
		{name: "last line no JSON", out: "{\"a\":1}\ndone\n", wantErr: "no JSON object"},
		{name: "last line a JSON array", out: "[1,2]\n", wantErr: "no JSON object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := LastJSONObject([]byte(tc.out))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestCompareTable(t *testing.T) {
	c := CompareRuns(parseRuns(t, `{"rate":200000,"p99_ms":12}`), parseRuns(t, `{"rate":150000}`))
	var b strings.Builder
	if err := c.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	want := [][]string{
		{"figure", "base", "median", "head", "median", "head/base"},
		{"p99_ms", "12", "-", "-"},
		{"rate", "200000", "150000", "0.750"},
	}
	if len(lines) != len(want) {
		t.Fatalf("table\n%s\nwant %d lines", b.String(), len(want))
	}
	for i, l := range lines {
		if got := strings.Fields(l); !slices.Equal(got, want[i]) {
			t.Errorf("line %d: %q, want the cells %q", i, l, want[i])
		}
	}
}
