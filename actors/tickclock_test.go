package actors

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/openbdp/bdp/clock"
)

// The engine's one clock sends each waiting actor its tick when the
// boundary comes, not before; an earlier boundary asked for later still
// fires first; past boundaries fire at once; nothing is sent once the
// clock is stopped. Time is synctest's: the boundaries pass without the
// test waiting for them.
func TestTickClockSendsEachTickOnItsBoundary(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var mu sync.Mutex
		var got []string
		c := newTickClock(clock.Real{}, func(pid *actor.PID, tk *tick) {
			mu.Lock()
			defer mu.Unlock()
			// Which actor, for which boundary, sent how long after the start.
			got = append(got, fmt.Sprintf("%s@%s+%s", pid.Id, tk.at.Sub(start), time.Since(start)))
		}, func() {}, 0)
		pid := func(id string) *actor.PID { return &actor.PID{Id: id} }
		c.wake(pid("a"), start.Add(time.Minute))
		c.wake(pid("b"), start.Add(time.Minute))
		c.wake(pid("c"), start.Add(2*time.Minute))
		c.wake(pid("d"), start.Add(30*time.Second)) // earlier than the armed one
		c.wake(pid("e"), start.Add(-time.Second))   // already past
		time.Sleep(90 * time.Second)
		c.wake(pid("f"), start.Add(3*time.Minute))
		time.Sleep(time.Minute)
		c.stop()
		c.wake(pid("g"), start.Add(4*time.Minute))
		time.Sleep(5 * time.Minute)
		synctest.Wait()

		mu.Lock()
		defer mu.Unlock()
		want := []string{"e@-1s+0s", "d@30s+30s", "a@1m0s+1m0s", "b@1m0s+1m0s", "c@2m0s+2m0s"}
		if len(got) >= 4 {
			slices.Sort(got[2:4]) // a and b share a boundary, in no set order
		}
		if !slices.Equal(got, want) {
			t.Errorf("ticks %v, want %v (f and g: after the stop)", got, want)
		}
	})
}

// A boundary's ticks go out in tranches, each once the engine keeps up
// with the one before (pace returns), and a stop ends them between two
// tranches.
func TestTickClockPacesABoundarysTicks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var sent atomic.Int64
		keepUp := make(chan struct{})
		c := newTickClock(clock.Real{}, func(*actor.PID, *tick) { sent.Add(1) }, func() { <-keepUp }, 0)
		at := time.Now().Add(time.Minute)
		for i := range 3 * tickTranche {
			c.wake(&actor.PID{Id: fmt.Sprint(i)}, at)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		if n := sent.Load(); n != tickTranche {
			t.Fatalf("%d ticks sent while the engine was behind, want the first tranche of %d", n, tickTranche)
		}
		keepUp <- struct{}{}
		synctest.Wait()
		if n := sent.Load(); n != 2*tickTranche {
			t.Fatalf("%d ticks sent once the engine kept up once, want two tranches, %d", n, 2*tickTranche)
		}
		c.stop()
		keepUp <- struct{}{}
		synctest.Wait()
		if n := sent.Load(); n != 2*tickTranche {
			t.Errorf("%d ticks sent after the stop, want none more than %d", n, 2*tickTranche)
		}
	})
}
