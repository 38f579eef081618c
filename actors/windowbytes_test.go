package actors

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/openbdp/bdp/pipeline/window"
)

// WindowBytes adds up what every running datapoint's windows hold: each
// of three alike holds as much as the first, and no more than the window
// budget's estimate of its two count-10 windows.
func TestWindowBytesAddsUpEveryRunningDatapoint(t *testing.T) {
	e := newEnv(t)
	eng := e.engine(nil)
	ctx := context.Background()
	for i := range 10 {
		e.write("a", i, float64(i))
		e.write("b", i, float64(-i))
	}
	start := func(i int) {
		def := e.definition(fmt.Sprintf("out%d", i), TypeFormula, `{"pins": {
			"P1": {"dataPointID": "a", "data_range": {"count": 10}, "aggregate": "mean"},
			"P2": {"dataPointID": "b", "data_range": {"count": 10}, "aggregate": "max"}},
			"parameters": {"formula": "P1 + P2"}}`)
		if _, err := eng.Start(ctx, def); err != nil {
			t.Fatal(err)
		}
	}
	start(0)
	one, err := eng.WindowBytes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	start(1)
	start(2)
	three, err := eng.WindowBytes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	est := 2 * window.EstimateBytes(window.Range{Count: 10}, window.Mean, time.Minute)
	if one <= 0 || one > est || three != 3*one {
		t.Fatalf("windows hold %d B for one datapoint, %d B for three; the estimate of one is %d B", one, three, est)
	}
}
