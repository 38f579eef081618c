package auth

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strconv"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Tokens issues and checks HS256 bearer tokens. A token names its user and
// carries a fingerprint of the user's password hash, so changing the
// password (or deleting the user) ends every token issued before.
type Tokens struct {
	key []byte
	ttl time.Duration
	now func() time.Time
}

// NewTokens returns a token issuer signing with key.
func NewTokens(key []byte, ttl time.Duration, now func() time.Time) *Tokens {
	if now == nil {
		now = time.Now
	}
	return &Tokens{key: key, ttl: ttl, now: now}
}

// TTL is how long an issued token stays valid.
func (t *Tokens) TTL() time.Duration { return t.ttl }

type claims struct {
	PasswordFingerprint string `json:"pwf"`
	jwt.RegisteredClaims
}

// ErrInvalidToken covers every way a token can be bad.
var ErrInvalidToken = errors.New("invalid or expired token")

// Issue returns a signed token for the user.
func (t *Tokens) Issue(userID int64, passwordHash string) (string, error) {
	now := t.now()
	c := claims{
		PasswordFingerprint: t.fingerprint(passwordHash),
		RegisteredClaims: jwt.RegisteredClaims{
			Subject:   strconv.FormatInt(userID, 10),
			IssuedAt:  jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(now.Add(t.ttl)),
			Issuer:    "bdp",
		},
	}
	return jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(t.key)
}

// Parse checks signature and expiry and returns the user id and the
// password fingerprint; the caller compares it with Matches.
func (t *Tokens) Parse(token string) (int64, string, error) {
	var c claims
	_, err := jwt.ParseWithClaims(token, &c, func(*jwt.Token) (any, error) { return t.key, nil },
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithTimeFunc(t.now), jwt.WithIssuer("bdp"), jwt.WithExpirationRequired())
	if err != nil {
		return 0, "", ErrInvalidToken
	}
	id, err := strconv.ParseInt(c.Subject, 10, 64)
	if err != nil {
		return 0, "", ErrInvalidToken
	}
	return id, c.PasswordFingerprint, nil
}

// Matches reports, in constant time, whether a token's fingerprint belongs
// to the user's current password hash.
func (t *Tokens) Matches(fingerprint, passwordHash string) bool {
	return hmac.Equal([]byte(fingerprint), []byte(t.fingerprint(passwordHash)))
}

func (t *Tokens) fingerprint(passwordHash string) string {
	m := hmac.New(sha256.New, t.key)
	m.Write([]byte(passwordHash))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil)[:12])
}
