// Package auth proves who a caller is: password hashing, bearer tokens and
// a cache of recently verified credentials. Authorization is package rbac.
package auth

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/crypto/argon2"
)

// HashParams are the argon2id cost parameters.
type HashParams struct {
	Time    uint32
	Memory  uint32 // KiB
	Threads uint8
}

// DefaultHashParams follow OWASP's argon2id recommendation (46 MiB, one
// pass, one lane): tens of milliseconds per hash, which is the point.
var DefaultHashParams = HashParams{Time: 1, Memory: 46 * 1024, Threads: 1}

// Hasher hashes and verifies passwords with argon2id. It is safe for
// concurrent use; at most limit hashes run at once, so a burst of logins
// cannot exhaust memory (each hash holds Memory KiB).
type Hasher struct {
	params HashParams
	slots  chan struct{}
}

// NewHasher returns a Hasher running at most limit hashes at once.
func NewHasher(params HashParams, limit int) *Hasher {
	if limit < 1 {
		limit = 1
	}
	return &Hasher{params: params, slots: make(chan struct{}, limit)}
}

// ErrMalformedHash reports a stored hash this package cannot read.
var ErrMalformedHash = errors.New("malformed password hash")

const saltLen, keyLen = 16, 32

// Hash returns the PHC-format argon2id hash of password.
func (h *Hasher) Hash(ctx context.Context, password string) (string, error) {
	salt := make([]byte, saltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", err
	}
	key, err := h.derive(ctx, password, salt, h.params)
	if err != nil {
		return "", err
	}
	b64 := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version,
		h.params.Memory, h.params.Time, h.params.Threads, b64.EncodeToString(salt), b64.EncodeToString(key)), nil
}

// Verify reports whether password matches encoded, comparing in constant
// time. The parameters stored in encoded are used, so hashes made with
// older parameters keep working.
func (h *Hasher) Verify(ctx context.Context, password, encoded string) (bool, error) {
	params, salt, want, err := parseHash(encoded)
	if err != nil {
		return false, err
	}
	got, err := h.derive(ctx, password, salt, params)
	if err != nil {
		return false, err
	}
	return subtle.ConstantTimeCompare(got, want) == 1, nil
}

func (h *Hasher) derive(ctx context.Context, password string, salt []byte, p HashParams) ([]byte, error) {
	select {
	case h.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-h.slots }()
	return argon2.IDKey([]byte(password), salt, p.Time, p.Memory, p.Threads, keyLen), nil
}

func parseHash(encoded string) (HashParams, []byte, []byte, error) {
	var p HashParams
	parts := strings.Split(encoded, "$")
	if len(parts) != 6 || parts[1] != "argon2id" {
		return p, nil, nil, ErrMalformedHash
	}
	var version int
	if _, err := fmt.Sscanf(parts[2], "v=%d", &version); err != nil || version != argon2.Version {
		return p, nil, nil, ErrMalformedHash
	}
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &p.Memory, &p.Time, &p.Threads); err != nil {
		return p, nil, nil, ErrMalformedHash
	}
	salt, err1 := base64.RawStdEncoding.DecodeString(parts[4])
	key, err2 := base64.RawStdEncoding.DecodeString(parts[5])
	if err1 != nil || err2 != nil || len(key) == 0 || p.Time == 0 || p.Threads == 0 {
		return p, nil, nil, ErrMalformedHash
	}
	return p, salt, key, nil
}
