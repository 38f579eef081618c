// Package fault is the closed set of error kinds that bdp answers with.
//
// Every layer returns plain Go errors; the ones a client must see carry a
// Kind, so the HTTP layer can turn them into status codes in one place
// (http/errors.go). Anything without a Kind is an internal error: it is
// logged in full and the client sees only a generic message.
package fault

import (
	"errors"
	"fmt"
	"unicode/utf8"
)

// Kind says what went wrong from the client's point of view.
type Kind int

// The kinds. A kind added here is in Kinds by construction; its name goes
// in kindNames and its status code in http/errors.go's table, and a test
// of each package fails until it is there.
const (
	Internal        Kind = iota // a bug or an outage; never the client's fault
	Invalid                     // malformed or invalid input
	Unauthenticated             // missing or wrong credentials
	Forbidden                   // no grant for the endpoint, project or datapoint
	NotFound                    // unknown resource inside a project the caller may use
	Conflict                    // duplicate or a state that forbids the change
	TooLarge                    // body over the size limit
	Unprocessable               // a conversion that cannot be done
	Unavailable                 // a dependency is down; try again later
	Throttled                   // too many failed logins; try again after a wait

	kindCount // not a kind: how many there are; keep it last
)

// Kinds returns every kind, in the order of the constants.
func Kinds() []Kind {
	ks := make([]Kind, kindCount)
	for i := range ks {
		ks[i] = Kind(i)
	}
	return ks
}

var kindNames = [kindCount]string{
	Internal: "internal", Invalid: "invalid", Unauthenticated: "unauthenticated", Forbidden: "forbidden",
	NotFound: "not_found", Conflict: "conflict", TooLarge: "too_large", Unprocessable: "unprocessable",
	Unavailable: "unavailable", Throttled: "throttled",
}

func (k Kind) String() string {
	if k < 0 || k >= kindCount {
		return kindNames[Internal]
	}
	return kindNames[k]
}

// Error is an error with a kind and a message meant for the client.
type Error struct {
	Kind Kind
	Msg  string // shown to the client
	Err  error  // the cause, logged but never shown
}

func (e *Error) Error() string {
	if e.Err != nil {
		return e.Msg + ": " + e.Err.Error()
	}
	return e.Msg
}

func (e *Error) Unwrap() error { return e.Err }

func newf(k Kind, format string, args ...any) error {
	return &Error{Kind: k, Msg: fmt.Sprintf(format, args...)}
}

// Invalidf reports bad input.
func Invalidf(format string, args ...any) error { return newf(Invalid, format, args...) }

// Unauthenticatedf reports missing or wrong credentials.
func Unauthenticatedf(format string, args ...any) error {
	return newf(Unauthenticated, format, args...)
}

// Forbiddenf reports a missing grant.
func Forbiddenf(format string, args ...any) error { return newf(Forbidden, format, args...) }

// NotFoundf reports an unknown resource.
func NotFoundf(format string, args ...any) error { return newf(NotFound, format, args...) }

// Conflictf reports a duplicate or a state conflict.
func Conflictf(format string, args ...any) error { return newf(Conflict, format, args...) }

// TooLargef reports an oversized body.
func TooLargef(format string, args ...any) error { return newf(TooLarge, format, args...) }

// Unprocessablef reports a conversion that cannot be done.
func Unprocessablef(format string, args ...any) error { return newf(Unprocessable, format, args...) }

// Wrap gives err a kind and a client message, keeping it as the cause.
func Wrap(k Kind, err error, msg string) error { return &Error{Kind: k, Msg: msg, Err: err} }

// KindOf returns the kind of the outermost *Error in err's chain, or
// Internal when there is none.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return Internal
}

// Message returns the client message of err: the Msg of its *Error, or a
// generic text for internal errors so nothing internal leaks.
func Message(err error) string {
	var e *Error
	if errors.As(err, &e) && e.Kind != Internal {
		return e.Msg
	}
	return "internal error"
}

// Is reports whether err has kind k.
func Is(err error, k Kind) bool { return err != nil && KindOf(err) == k }

// MaxQuoted is how many characters of a client's input a message quotes.
const MaxQuoted = 100

// Clip shortens s, a client's input about to be quoted in a message or a
// log line, to MaxQuoted characters, marking the cut with "…": no answer
// or log line echoes a large input back.
func Clip(s string) string { return ClipTo(s, MaxQuoted) }

// ClipTo shortens s to n characters, marking the cut with "…"; it never
// cuts a character in two.
func ClipTo(s string, n int) string {
	if len(s) <= n { // bytes >= characters: nothing to clip
		return s
	}
	i, count := 0, 0
	for i < len(s) && count < n {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
		count++
	}
	if i == len(s) {
		return s
	}
	return s[:i] + "…"
}
