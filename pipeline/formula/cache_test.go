package formula

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestCacheShares(t *testing.T) {
	c := NewCache()
	tests := []struct {
		src    string
		pins   []string
		values [2][]float64 // one input per Program
		want   [2]float64
	}{
		{"P1 + P2", []string{"P1", "P2"}, [2][]float64{{1, 2}, {10, 20}}, [2]float64{3, 30}},
		{"median(P1, P2, P3)", []string{"P1", "P2", "P3"}, [2][]float64{{3, 1, 2}, {9, 7, 8}}, [2]float64{2, 8}},
		{"a = P1 x 2; if(a > 5, a, P1)", []string{"P1"}, [2][]float64{{4}, {1}}, [2]float64{8, 1}},
	}
	for _, tc := range tests {
		p1, err := c.Compile(tc.src, tc.pins)
		if err != nil {
			t.Fatalf("Compile(%q): %v", tc.src, err)
		}
		p2, err := c.Compile(tc.src, tc.pins)
		if err != nil {
			t.Fatalf("second Compile(%q): %v", tc.src, err)
		}
		if p1 == p2 {
			t.Fatalf("%q: Cache.Compile returned the same Program twice", tc.src)
		}
		if p1.c != p2.c {
			t.Errorf("%q: Programs do not share the compiled part", tc.src)
		}
		if p1.Source() != tc.src || p2.String() != p1.String() {
			t.Errorf("%q: Source = %q, String = %q and %q", tc.src, p1.Source(), p1.String(), p2.String())
		}
		// Interleave the runs: neither may see the other's state.
		for range 2 {
			for i, p := range []*Program{p1, p2} {
				if v, ok, err := p.Eval(tc.values[i]); v != tc.want[i] || !ok || err != nil {
					t.Errorf("%q on %v = %v, %v, %v; want %v", tc.src, tc.values[i], v, ok, err, tc.want[i])
				}
			}
		}
	}
	if n := c.len(); n != len(tests) {
		t.Errorf("cache has %d entries, want %d", n, len(tests))
	}
}

func TestCacheDistinguishes(t *testing.T) {
	c := NewCache()
	base, err := c.Compile("P1 + P2", []string{"P1", "P2"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		src  string
		pins []string
	}{
		{"other src", "P1 - P2", []string{"P1", "P2"}},
		{"src with space", "P1 +  P2", []string{"P1", "P2"}},
		{"pins reordered", "P1 + P2", []string{"P2", "P1"}},
		{"extra pin", "P1 + P2", []string{"P1", "P2", "P3"}},
		{"pin renamed", "P1 + P2", []string{"P1", "P2", "P1x"}},
	}
	for _, tc := range tests {
		p, err := c.Compile(tc.src, tc.pins)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if p.c == base.c {
			t.Errorf("%s: shares the compiled part of %q %v", tc.name, base.Source(), base.c.pins)
		}
	}
	// Same pins in the same order, as a different slice: shared.
	p, err := c.Compile("P1 + P2", append([]string(nil), "P1", "P2"))
	if err != nil {
		t.Fatal(err)
	}
	if p.c != base.c {
		t.Error("equal pins list in a new slice: compiled part not shared")
	}
	if v, ok, err := p.Eval([]float64{1, 2}); v != 3 || !ok || err != nil {
		t.Errorf("Eval = %v, %v, %v; want 3", v, ok, err)
	}
}

func TestCacheKey(t *testing.T) {
	// Valid pins contain neither ',' nor NUL, so these must all differ.
	tests := []struct {
		src  string
		pins []string
	}{
		{"a", nil},
		{"a", []string{}},
		{"", []string{"a"}},
		{"b", []string{"a"}},
		{"a\x00b", nil},
		{"b", []string{"a", "b"}},
		{"a,b", nil},
		{"\x00b", []string{"a"}},
	}
	seen := map[string]int{}
	for i, tc := range tests {
		k := cacheKey(tc.src, tc.pins)
		if want := strings.Join(tc.pins, ",") + "\x00" + tc.src; k != want {
			t.Errorf("cacheKey(%q, %q) = %q, want %q", tc.src, tc.pins, k, want)
		}
		if j, ok := seen[k]; ok && (tests[j].src != tc.src || len(tests[j].pins) != len(tc.pins)) {
			t.Errorf("cacheKey(%q, %q) = cacheKey(%q, %q)", tc.src, tc.pins, tests[j].src, tests[j].pins)
		}
		seen[k] = i
	}
}

func TestCacheErrorsNotCached(t *testing.T) {
	c := NewCache()
	tests := []struct {
		src  string
		pins []string
	}{
		{"P1 +", []string{"P1"}},                                       // syntax error
		{"foo(P1)", []string{"P1"}},                                    // unknown function
		{"P1", []string{"P1", "P1"}},                                   // duplicate pin
		{"P1", []string{"P1", "null"}},                                 // reserved pin name
		{"P1", []string{"P1", "a\x00b"}},                               // not an identifier
		{"P1", []string{"a", "b", "c", "d", "e", "f", "g", "h", "P1"}}, // too many pins
	}
	for _, tc := range tests {
		for range 2 {
			p, err := c.Compile(tc.src, tc.pins)
			_, want := Compile(tc.src, tc.pins)
			if err == nil || p != nil {
				t.Fatalf("Compile(%q, %q) = %v, nil; want an error", tc.src, tc.pins, p)
			}
			if want == nil || err.Error() != want.Error() {
				t.Errorf("Compile(%q, %q) error %q, package Compile gives %v", tc.src, tc.pins, err, want)
			}
		}
	}
	if n := c.len(); n != 0 {
		t.Errorf("cache has %d entries after errors only", n)
	}
}

func TestCacheConcurrent(t *testing.T) {
	c := NewCache()
	const src = "a = median(P1, P2, P3); b = max(P1, P2, P3) - min(P1, P2, P3); a x 100 + b"
	pins := []string{"P1", "P2", "P3"}
	const goroutines, runs = 4, 2000
	programs := make([]*Program, goroutines)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			p, err := c.Compile(src, pins)
			if err != nil {
				t.Error(err)
				return
			}
			programs[g] = p
			for i := range runs {
				// Each goroutine has its own inputs, so crossed state shows.
				x := float64(g*runs + i)
				want := (x+1)*100 + 2
				if v, ok, err := p.Eval([]float64{x + 2, x, x + 1}); v != want || !ok || err != nil {
					t.Errorf("goroutine %d: Eval = %v, %v, %v; want %v", g, v, ok, err, want)
					return
				}
			}
		})
	}
	wg.Wait()
	for g, p := range programs {
		if p == nil || p.c != programs[0].c {
			t.Errorf("goroutine %d: compiled part not shared", g)
		}
	}
	if n := c.len(); n != 1 {
		t.Errorf("cache has %d entries, want 1", n)
	}
}

func TestCacheDropsUnused(t *testing.T) {
	c := NewCache()
	keep, err := c.Compile("P1 x 2", []string{"P1"})
	if err != nil {
		t.Fatal(err)
	}
	func() {
		// Out of scope, and so unreachable, after this function returns.
		for i := range 3 {
			for range 2 {
				if _, err := c.Compile(fmt.Sprintf("P1 + %d", i), []string{"P1"}); err != nil {
					t.Fatal(err)
				}
			}
		}
	}()
	if n := c.len(); n != 4 {
		t.Fatalf("cache has %d entries, want 4", n)
	}
	// Cleanups run on their own goroutine after a GC, so give them time.
	for i := 0; c.len() > 1 && i < 100; i++ {
		runtime.GC()
		time.Sleep(time.Millisecond * time.Duration(min(i+1, 20)))
	}
	if n := c.len(); n != 1 {
		t.Fatalf("cache has %d entries after GC, want 1 (the live one)", n)
	}
	again, err := c.Compile("P1 x 2", []string{"P1"})
	if err != nil {
		t.Fatal(err)
	}
	if again.c != keep.c {
		t.Error("the live formula's entry was dropped")
	}
	// A dropped formula compiles afresh and works.
	p, err := c.Compile("P1 + 2", []string{"P1"})
	if err != nil {
		t.Fatal(err)
	}
	if v, ok, err := p.Eval([]float64{1}); v != 3 || !ok || err != nil {
		t.Errorf("Eval = %v, %v, %v; want 3", v, ok, err)
	}
	runtime.KeepAlive(keep)
}

func BenchmarkCacheCompileHit(b *testing.B) {
	c := NewCache()
	keep, err := c.Compile(bench5Pins, testPins)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Compile(bench5Pins, testPins); err != nil {
			b.Fatal(err)
		}
	}
	runtime.KeepAlive(keep)
}

// BenchmarkProgramHeap reports the live heap each additional Program of one
// formula takes, from Compile and from a Cache, freshly made and after one
// Eval (which sizes the VM's stack).
func BenchmarkProgramHeap(b *testing.B) {
	for _, bc := range []struct {
		name   string
		cached bool
		eval   bool
	}{
		{"Compile", false, false},
		{"Cache", true, false},
		{"Compile/evaluated", false, true},
		{"Cache/evaluated", true, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			c := NewCache()
			compile := Compile
			if bc.cached {
				compile = c.Compile
				// The first Program pays for the shared part; measure the rest.
				if _, err := c.Compile(bench5Pins, testPins); err != nil {
					b.Fatal(err)
				}
			}
			values := []float64{10, 20, 1, 2, 3}
			programs := make([]*Program, b.N)
			before := liveHeap()
			for i := 0; i < b.N; i++ {
				p, err := compile(bench5Pins, testPins)
				if err != nil {
					b.Fatal(err)
				}
				if bc.eval {
					if _, _, err := p.Eval(values); err != nil {
						b.Fatal(err)
					}
				}
				programs[i] = p
			}
			after := liveHeap()
			runtime.KeepAlive(programs)
			b.ReportMetric(float64(after-before)/float64(b.N), "B/program")
		})
	}
}

func liveHeap() int64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}
