package auth

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/openbdp/bdp/clock"
)

func newTestThrottle(t *testing.T, cfg ThrottleConfig) (*Throttle, *clock.Fake) {
	t.Helper()
	clk := clock.NewFake(time.Date(2026, 11, 24, 8, 0, 0, 0, time.UTC))
	cfg.Now = clk.Now
	th, err := NewThrottle(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return th, clk
}

var loopback = netip.MustParseAddr("127.0.0.1")

// fail runs one failed verification through Begin and Done.
func fail(t *testing.T, th *Throttle, account string, addr netip.Addr) {
	t.Helper()
	a, err := th.Begin(context.Background(), account, addr)
	if err != nil {
		t.Fatalf("attempt for %s from %s refused early: %v", account, addr, err)
	}
	a.Done(false)
}

func throttled(t *testing.T, err error) *Throttled {
	t.Helper()
	var th *Throttled
	if !errors.As(err, &th) {
		t.Fatalf("want a *Throttled error, got %v", err)
	}
	return th
}

func TestThrottleAccountAndAddressLimits(t *testing.T) {
	tests := []struct {
		name      string
		accountOf func(i int) string // account of the i-th failure
		addrOf    func(i int) netip.Addr
		failures  int    // tolerated
		scope     string // of the refusal that follows
		other     string // an account still allowed from the same address ("" none)
	}{
		{"one account, one address (loopback is not exempt)", func(int) string { return "ada@acme.test" },
			func(int) netip.Addr { return loopback }, 10, ScopeAccount, "bob@acme.test"},
		{"one account, case does not matter", func(i int) string { return []string{"Ada@Acme.test", "ada@acme.test"}[i%2] },
			func(int) netip.Addr { return loopback }, 10, ScopeAccount, "bob@acme.test"},
		{"one account, many addresses", func(int) string { return "ada@acme.test" },
			func(i int) netip.Addr { return netip.AddrFrom4([4]byte{10, 0, byte(i >> 8), byte(i)}) }, 10, ScopeAccount, ""},
		{"many accounts, one address", func(i int) string { return fmt.Sprintf("user%d@acme.test", i) },
			func(int) netip.Addr { return netip.MustParseAddr("192.0.2.7") }, 100, ScopeAddress, ""},
		{"many accounts, one IPv6 /64", func(i int) string { return fmt.Sprintf("user%d@acme.test", i) },
			func(i int) netip.Addr { return netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 15: byte(i)}) }, 100, ScopeAddress, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			th, clk := newTestThrottle(t, ThrottleConfig{})
			for i := range tt.failures {
				fail(t, th, tt.accountOf(i), tt.addrOf(i))
				clk.Advance(100 * time.Millisecond)
			}
			next := tt.failures
			err := th.Check(tt.accountOf(next), tt.addrOf(next))
			if r := throttled(t, err); r.Scope != tt.scope {
				t.Fatalf("refused for %s, want %s", r.Scope, tt.scope)
			}
			if _, err := th.Begin(context.Background(), tt.accountOf(next), tt.addrOf(next)); err == nil {
				t.Fatal("Begin admitted a throttled attempt")
			}
			if tt.other != "" {
				if err := th.Check(tt.other, tt.addrOf(next)); err != nil {
					t.Fatalf("another account from the same address refused: %v", err)
				}
			}
			// Another client elsewhere is not affected by an address limit.
			if tt.scope == ScopeAddress {
				if err := th.Check("someone@else.test", netip.MustParseAddr("198.51.100.1")); err != nil {
					t.Fatalf("other address refused: %v", err)
				}
			}
		})
	}
}

// The wait is exact enough to be honest: the failures age out when
// Retry-After says, and then the account may try again; nothing locks it
// for good.
func TestThrottleRetryAfterEndsTheWait(t *testing.T) {
	th, clk := newTestThrottle(t, ThrottleConfig{})
	for range 10 {
		fail(t, th, "ada@acme.test", loopback)
	}
	clk.Advance(30 * time.Second)
	r := throttled(t, th.Check("ada@acme.test", loopback))
	if r.RetryAfter != 30*time.Second || r.RetrySeconds() != 30 {
		t.Fatalf("RetryAfter = %v (%d s), want 30s", r.RetryAfter, r.RetrySeconds())
	}
	clk.Advance(r.RetryAfter - time.Millisecond)
	throttled(t, th.Check("ada@acme.test", loopback))
	clk.Advance(time.Millisecond)
	if err := th.Check("ada@acme.test", loopback); err != nil {
		t.Fatalf("still refused after Retry-After: %v", err)
	}
	a, err := th.Begin(context.Background(), "ada@acme.test", loopback)
	if err != nil {
		t.Fatal(err)
	}
	a.Done(true)

	// Failures spread over the window: the wait ends when enough of the
	// oldest have aged out, not a whole window after the last.
	th, clk = newTestThrottle(t, ThrottleConfig{AccountFailures: 4, Window: 10 * time.Second})
	for range 2 {
		fail(t, th, "bob@acme.test", loopback)
	}
	clk.Advance(5 * time.Second)
	for range 2 {
		fail(t, th, "bob@acme.test", loopback)
	}
	clk.Advance(time.Second)
	if r := throttled(t, th.Check("bob@acme.test", loopback)); r.RetryAfter != 4*time.Second {
		t.Fatalf("RetryAfter = %v, want 4s (the first two age out at 10s)", r.RetryAfter)
	}
}

// A success forgets the account's failures but not the address's, or a
// guesser holding one good account could reset its own count.
func TestThrottleSuccessResetsOnlyTheAccount(t *testing.T) {
	th, _ := newTestThrottle(t, ThrottleConfig{AccountFailures: 3, AddressFailures: 5})
	for range 2 {
		fail(t, th, "ada@acme.test", loopback)
	}
	a, err := th.Begin(context.Background(), "ada@acme.test", loopback)
	if err != nil {
		t.Fatal(err)
	}
	a.Done(true)
	for range 2 {
		fail(t, th, "ada@acme.test", loopback)
	}
	if err := th.Check("ada@acme.test", loopback); err != nil {
		t.Fatalf("the success did not reset the account: %v", err)
	}
	fail(t, th, "ada@acme.test", loopback) // the address's fifth
	if r := throttled(t, th.Check("bob@acme.test", loopback)); r.Scope != ScopeAddress {
		t.Fatalf("scope %s, want address", r.Scope)
	}
}

// Concurrent guesses cannot overshoot: verifications in progress count,
// and the callers beyond the limit wait for them, then are refused when
// they failed or admitted when they succeeded.
func TestThrottleConcurrentAttemptsDoNotOvershoot(t *testing.T) {
	for _, outcome := range []bool{false, true} {
		t.Run(fmt.Sprintf("in-progress succeed=%v", outcome), func(t *testing.T) {
			th, _ := newTestThrottle(t, ThrottleConfig{AccountFailures: 3})
			ctx := context.Background()
			var first []*Attempt
			for range 3 {
				a, err := th.Begin(ctx, "ada@acme.test", loopback)
				if err != nil {
					t.Fatal(err)
				}
				first = append(first, a)
			}
			const waiting = 20
			results := make(chan error, waiting)
			for range waiting {
				go func() {
					a, err := th.Begin(ctx, "ada@acme.test", loopback)
					if a != nil {
						a.Done(true)
					}
					results <- err
				}()
			}
			select {
			case err := <-results:
				t.Fatalf("a fourth attempt went ahead while three were in progress: %v", err)
			case <-time.After(100 * time.Millisecond):
			}
			for _, a := range first {
				a.Done(outcome)
			}
			for range waiting {
				err := <-results
				if outcome && err != nil {
					t.Fatalf("refused after the attempts in progress succeeded: %v", err)
				}
				if !outcome {
					throttled(t, err)
				}
			}
		})
	}
	// A waiter gives up with its context.
	th, _ := newTestThrottle(t, ThrottleConfig{AccountFailures: 1})
	a, err := th.Begin(context.Background(), "ada@acme.test", loopback)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Done(true)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := th.Begin(ctx, "ada@acme.test", loopback); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("waiter: %v", err)
	}
}

// Cycling through 300,000 names and addresses keeps at most MaxKeys of
// each.
func TestThrottleMemoryIsBounded(t *testing.T) {
	const maxKeys = 1000
	th, clk := newTestThrottle(t, ThrottleConfig{MaxKeys: maxKeys})
	for i := range 300_000 {
		addr := netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)})
		fail(t, th, fmt.Sprintf("user%d@acme.test", i), addr)
		if i%1000 == 0 {
			clk.Advance(time.Second)
		}
	}
	th.mu.Lock()
	accounts, addresses := len(th.accounts), len(th.addresses)
	th.mu.Unlock()
	if accounts > maxKeys || addresses > maxKeys {
		t.Fatalf("tracking %d accounts and %d addresses, bound %d", accounts, addresses, maxKeys)
	}
}

func TestThrottleConfigChecks(t *testing.T) {
	for _, cfg := range []ThrottleConfig{{AccountFailures: -1}, {AddressFailures: -5}, {Window: time.Millisecond}, {MaxKeys: -1}} {
		if _, err := NewThrottle(cfg); err == nil {
			t.Errorf("%+v accepted", cfg)
		}
	}
	th, err := NewThrottle(ThrottleConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if c := th.Config(); c.AccountFailures != 10 || c.AddressFailures != 100 || c.Window != time.Minute || c.MaxKeys != 100_000 {
		t.Fatalf("defaults: %+v", c)
	}
}

// Check runs on every Basic request, cached or not: its cost is the
// throttle's price on the hot path.
func BenchmarkThrottleCheck(b *testing.B) {
	th, err := NewThrottle(ThrottleConfig{})
	if err != nil {
		b.Fatal(err)
	}
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := th.Check("ada@acme.test", loopback); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// The hooks hear of each failure counted and each reset that cleared
// something, with the keys as counted, and of nothing else: remote
// counts are not told again, or a notice would go around for ever.
func TestThrottleHooks(t *testing.T) {
	ada, v6 := "ada@acme.test", netip.MustParseAddr("2001:db8:1:2:3::4")
	tests := []struct {
		name string
		run  func(th *Throttle)
		want []string
	}{
		{"a failure, keyed as counted", func(th *Throttle) { fail(t, th, "Ada@Acme.TEST", v6) },
			[]string{"failure ada@acme.test 2001:db8:1:2::"}},
		{"an IPv4-mapped address", func(th *Throttle) { fail(t, th, ada, netip.MustParseAddr("::ffff:10.1.2.3")) },
			[]string{"failure ada@acme.test 10.1.2.3"}},
		{"a success clearing failures", func(th *Throttle) { fail(t, th, ada, loopback); done(t, th, ada, true) },
			[]string{"failure ada@acme.test 127.0.0.1", "reset ada@acme.test"}},
		{"a success with none to clear", func(th *Throttle) { done(t, th, ada, true) }, nil},
		{"a success clearing remote failures", func(th *Throttle) { th.RecordRemote(ada, loopback); done(t, th, ada, true) },
			[]string{"reset ada@acme.test"}},
		{"a cancelled attempt", func(th *Throttle) {
			a, err := th.Begin(context.Background(), ada, loopback)
			if err != nil {
				t.Fatal(err)
			}
			a.Cancel()
		}, nil},
		{"remote failures and resets", func(th *Throttle) { th.RecordRemote(ada, loopback); th.ResetRemote(ada) }, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			th, _ := newTestThrottle(t, ThrottleConfig{
				OnFailure: func(account string, addr netip.Addr) { got = append(got, "failure "+account+" "+addr.String()) },
				OnReset:   func(account string) { got = append(got, "reset "+account) },
			})
			tt.run(th)
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Fatalf("hooks told %q, want %q", got, tt.want)
			}
		})
	}
}

func done(t *testing.T, th *Throttle, account string, ok bool) {
	t.Helper()
	a, err := th.Begin(context.Background(), account, loopback)
	if err != nil {
		t.Fatal(err)
	}
	a.Done(ok)
}

// Failures recorded for another process count as local ones, in the
// current slot, and age out alike; a remote reset clears the account's
// count, not the address's.
func TestThrottleRemoteFailures(t *testing.T) {
	th, clk := newTestThrottle(t, ThrottleConfig{AccountFailures: 3, AddressFailures: 4, Window: 10 * time.Second})
	for range 3 {
		th.RecordRemote("ADA@acme.test", netip.MustParseAddr("2001:db8::1"))
	}
	if r := throttled(t, th.Check("ada@acme.test", loopback)); r.Scope != ScopeAccount || r.RetryAfter != 10*time.Second {
		t.Fatalf("refusal %+v, want the account's for 10s", r)
	}
	th.ResetRemote("ada@acme.test")
	if err := th.Check("ada@acme.test", loopback); err != nil {
		t.Fatalf("refused after a remote reset: %v", err)
	}
	fail(t, th, "bob@acme.test", netip.MustParseAddr("2001:db8::2")) // the same /64: its fourth
	throttled(t, th.Check("carol@acme.test", netip.MustParseAddr("2001:db8::3")))
	clk.Advance(10 * time.Second)
	if err := th.Check("carol@acme.test", netip.MustParseAddr("2001:db8::3")); err != nil {
		t.Fatalf("remote failures never aged out: %v", err)
	}
}

// Account keys are bounded, valid UTF-8 when clipped, and stable, so a
// key published by one process counts as the same key in another.
func TestAccountKey(t *testing.T) {
	long := strings.Repeat("é", MaxAccountKey) // 2 bytes each
	tests := []struct{ in, want string }{
		{"Ada@Acme.TEST", "ada@acme.test"},
		{"mqtt\x00Edge-7", "mqtt\x00edge-7"},
		{strings.Repeat("A", MaxAccountKey+9), strings.Repeat("a", MaxAccountKey)},
		{"x" + long, "x" + long[:MaxAccountKey-2]}, // not inside a character
		{"\xffA", "\ufffda"},
	}
	for _, tt := range tests {
		got := AccountKey(tt.in)
		if got != tt.want || len(got) > MaxAccountKey || !utf8.ValidString(got) || AccountKey(got) != got {
			t.Errorf("AccountKey(%.20q) = %.20q (%d bytes), want %.20q, valid and stable", tt.in, got, len(got), tt.want)
		}
	}
}
