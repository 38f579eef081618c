package http

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/openbdp/bdp/auth"
	"github.com/openbdp/bdp/fault"
	"github.com/openbdp/bdp/store"
)

// loginThrottle is the auth.Throttle of password logins with its count of
// refused attempts on /metrics.
type loginThrottle struct {
	*auth.Throttle
	refused *prometheus.CounterVec
}

// newLoginThrottle wraps th, or a throttle of cfg when th is nil.
func newLoginThrottle(cfg auth.ThrottleConfig, th *auth.Throttle, reg prometheus.Registerer) (*loginThrottle, error) {
	if th == nil {
		var err error
		if th, err = auth.NewThrottle(cfg); err != nil {
			return nil, err
		}
	}
	refused := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "bdp_auth_throttled_total",
		Help: "Password logins refused with 429 after too many failures, by the limit that refused them (account or address).",
	}, []string{"scope"})
	if err := reg.Register(refused); err != nil {
		return nil, fmt.Errorf("register metrics: %w", err)
	}
	for _, scope := range []string{auth.ScopeAccount, auth.ScopeAddress} {
		refused.WithLabelValues(scope) // present from the start, at 0
	}
	return &loginThrottle{Throttle: th, refused: refused}, nil
}

// refuse turns the throttle's refusal into the 429 fault (handleError
// adds Retry-After) and counts it; other errors (a cancelled wait) pass.
func (lt *loginThrottle) refuse(err error) error {
	var th *auth.Throttled
	if !errors.As(err, &th) {
		return err
	}
	lt.refused.WithLabelValues(th.Scope).Inc()
	return fault.Wrap(fault.Throttled, th, th.Error())
}

// verifyPassword checks email and password for a client at addr, through
// the cache of recently verified credentials when possible. A throttled
// account or address is refused before anything is looked at, even with
// the right password, or throttling would not slow a guesser down.
func (s *Server) verifyPassword(ctx context.Context, email, password string, addr netip.Addr) (int64, error) {
	if err := s.throttle.Check(email, addr); err != nil {
		return 0, s.throttle.refuse(err)
	}
	if id, ok, refresh := s.creds.GetOrRefresh(email, password); ok && !refresh {
		return id, nil
	} else if ok {
		// This request verifies the cached credentials again before they
		// expire, while the client's other requests keep the cached answer.
		id, err := s.checkPassword(ctx, email, password)
		if fault.Is(err, fault.Unauthenticated) {
			s.creds.Forget(email, password)
		}
		return id, err
	}
	attempt, err := s.throttle.Begin(ctx, email, addr)
	if err != nil {
		return 0, s.throttle.refuse(err)
	}
	// A wait in Begin may have been for the same credentials, verified
	// by another request meanwhile.
	if id, ok := s.creds.Get(email, password); ok {
		attempt.Done(true)
		return id, nil
	}
	id, err := s.checkPassword(ctx, email, password)
	switch {
	case err == nil:
		attempt.Done(true)
	case fault.Is(err, fault.Unauthenticated):
		attempt.Done(false)
	default:
		attempt.Cancel() // the database failed, not the client
	}
	return id, err
}

// checkCurrentPassword verifies the current password of a password
// change, throttled like a login: whoever holds a stolen token must not
// guess the password behind it at the hasher's speed.
func (s *Server) checkCurrentPassword(c *fiber.Ctx, u store.User, password string) (bool, error) {
	addr := clientAddr(c)
	if err := s.throttle.Check(u.Email, addr); err != nil {
		return false, s.throttle.refuse(err)
	}
	attempt, err := s.throttle.Begin(c.UserContext(), u.Email, addr)
	if err != nil {
		return false, s.throttle.refuse(err)
	}
	match, err := s.hasher.Verify(c.UserContext(), password, u.PasswordHash)
	if err != nil {
		attempt.Cancel()
		return false, err
	}
	attempt.Done(match)
	return match, nil
}

// clientAddr is the address the throttle counts a request against: the
// peer's, since bdp trusts no proxy header.
func clientAddr(c *fiber.Ctx) netip.Addr {
	addr, _ := netip.ParseAddr(c.IP()) // an unparsable one is one key of its own
	return addr
}
