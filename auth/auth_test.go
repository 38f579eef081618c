package auth

import (
	"context"
	"strings"
	"testing"
	"time"
)

var testParams = HashParams{Time: 1, Memory: 1024, Threads: 1}

func TestHashVerify(t *testing.T) {
	h := NewHasher(testParams, 2)
	ctx := context.Background()
	enc, err := h.Hash(ctx, "correct horse")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(enc, "$argon2id$v=19$m=1024,t=1,p=1$") || strings.Contains(enc, "correct horse") {
		t.Fatalf("unexpected encoding %q", enc)
	}
	other, _ := h.Hash(ctx, "correct horse")
	if other == enc {
		t.Fatal("two hashes of one password are equal: the salt is not random")
	}
	tests := []struct {
		password string
		want     bool
	}{{"correct horse", true}, {"correct horsE", false}, {"", false}, {"correct horse ", false}}
	for _, tt := range tests {
		got, err := h.Verify(ctx, tt.password, enc)
		if err != nil || got != tt.want {
			t.Errorf("Verify(%q) = %v, %v; want %v", tt.password, got, err, tt.want)
		}
	}
	// A hash made with other parameters still verifies: stored parameters win.
	strong := NewHasher(HashParams{Time: 2, Memory: 2048, Threads: 2}, 1)
	enc2, _ := strong.Hash(ctx, "pw")
	if ok, err := h.Verify(ctx, "pw", enc2); !ok || err != nil {
		t.Fatalf("hash with other parameters: %v %v", ok, err)
	}
}

func TestVerifyRejectsMalformedHashes(t *testing.T) {
	h := NewHasher(testParams, 1)
	for _, enc := range []string{"", "plain", "$argon2i$v=19$m=1024,t=1,p=1$c2FsdA$a2V5",
		"$argon2id$v=18$m=1024,t=1,p=1$c2FsdA$a2V5", "$argon2id$v=19$m=1024,t=0,p=1$c2FsdA$a2V5",
		"$argon2id$v=19$m=1024,t=1,p=1$!!$a2V5", "$argon2id$v=19$m=1024,t=1,p=1$c2FsdA$"} {
		if ok, err := h.Verify(context.Background(), "pw", enc); ok || err == nil {
			t.Errorf("Verify against %q = %v, %v; want an error", enc, ok, err)
		}
	}
}

func TestHashHonoursContext(t *testing.T) {
	h := NewHasher(testParams, 1)
	h.slots <- struct{}{} // every slot busy
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := h.Hash(ctx, "pw"); err == nil {
		t.Fatal("Hash went past the concurrency limit")
	}
}

func TestTokens(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	key := []byte(strings.Repeat("s", 32))
	tk := NewTokens(key, time.Hour, clock)
	tok, err := tk.Issue(42, "hash-1")
	if err != nil {
		t.Fatal(err)
	}
	id, fp, err := tk.Parse(tok)
	if err != nil || id != 42 {
		t.Fatalf("Parse = %d, %v", id, err)
	}
	if !tk.Matches(fp, "hash-1") || tk.Matches(fp, "hash-2") {
		t.Fatal("fingerprint must match the password hash it was issued for, and only that")
	}
	otherKey := NewTokens([]byte(strings.Repeat("x", 32)), time.Hour, clock)
	if _, _, err := otherKey.Parse(tok); err == nil {
		t.Fatal("token signed with another key accepted")
	}
	for _, bad := range []string{"", "abc", tok + "x", strings.Replace(tok, ".", ".x", 1)} {
		if _, _, err := tk.Parse(bad); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
	now = now.Add(time.Hour + time.Second)
	if _, _, err := tk.Parse(tok); err == nil {
		t.Fatal("expired token accepted")
	}
}

func TestCredentialCache(t *testing.T) {
	now := time.Unix(1000, 0)
	c := NewCredentialCache([]byte("k"), time.Minute, func() time.Time { return now })
	if _, ok := c.Get("a@x", "pw"); ok {
		t.Fatal("empty cache hit")
	}
	c.Put("a@x", "pw", 7, c.Begin())
	if id, ok := c.Get("a@x", "pw"); !ok || id != 7 {
		t.Fatalf("Get = %d, %v", id, ok)
	}
	if _, ok := c.Get("a@x", "pw2"); ok {
		t.Fatal("other password hit the cache")
	}
	c.DropUser(7)
	if _, ok := c.Get("a@x", "pw"); ok {
		t.Fatal("dropped user still cached")
	}
	c.Put("a@x", "pw", 7, c.Begin())
	now = now.Add(time.Minute)
	if _, ok := c.Get("a@x", "pw"); ok {
		t.Fatal("expired entry used")
	}
	off := NewCredentialCache([]byte("k"), 0, nil)
	off.Put("a@x", "pw", 7, off.Begin())
	if _, ok := off.Get("a@x", "pw"); ok {
		t.Fatal("ttl 0 must disable the cache")
	}
}

// A busy client's cached credentials are verified again by one request in
// the last quarter of their life, while the others keep hitting the cache,
// instead of all of them waiting for the hash when the entry expires.
func TestCredentialCacheRefreshesAheadOfExpiry(t *testing.T) {
	now := time.Unix(1000, 0)
	c := NewCredentialCache([]byte("k"), time.Minute, func() time.Time { return now })
	c.Put("a@x", "pw", 7, c.Begin())
	if _, ok, refresh := c.GetOrRefresh("a@x", "pw"); !ok || refresh {
		t.Fatalf("fresh entry: ok %v, refresh %v; want a hit without refresh", ok, refresh)
	}
	now = now.Add(46 * time.Second) // 14 s left: the last quarter
	if id, ok, refresh := c.GetOrRefresh("a@x", "pw"); !ok || !refresh || id != 7 {
		t.Fatalf("ageing entry: %d, ok %v, refresh %v; want a hit that asks to refresh", id, ok, refresh)
	}
	for range 3 {
		if _, ok, refresh := c.GetOrRefresh("a@x", "pw"); !ok || refresh {
			t.Fatalf("while one caller refreshes: ok %v, refresh %v; want plain hits", ok, refresh)
		}
	}
	c.Put("a@x", "pw", 7, c.Begin()) // the refresh succeeded
	now = now.Add(20 * time.Second)  // past the old expiry
	if _, ok, refresh := c.GetOrRefresh("a@x", "pw"); !ok || refresh {
		t.Fatalf("renewed entry: ok %v, refresh %v", ok, refresh)
	}
	c.Forget("a@x", "pw") // a refresh found the password changed
	if _, ok, _ := c.GetOrRefresh("a@x", "pw"); ok {
		t.Fatal("forgotten credentials still cached")
	}
}

// A verification that read the password hash before a password change
// must not cache the old password after the change dropped the user.
func TestCredentialCacheIgnoresVerificationsOlderThanADrop(t *testing.T) {
	c := NewCredentialCache([]byte("k"), time.Minute, nil)
	begun := c.Begin() // request A reads the old hash ...
	c.DropUser(7)      // ... the password changes ...
	c.Put("a@x", "old-pw", 7, begun)
	if _, ok := c.Get("a@x", "old-pw"); ok {
		t.Fatal("the old password was cached after the change")
	}
}

func BenchmarkVerifyDefaultParams(b *testing.B) {
	h := NewHasher(DefaultHashParams, 1)
	enc, _ := h.Hash(context.Background(), "password")
	for b.Loop() {
		_, _ = h.Verify(context.Background(), "password", enc)
	}
}

func BenchmarkCredentialCacheHit(b *testing.B) {
	c := NewCredentialCache([]byte("k"), time.Minute, nil)
	c.Put("a@x", "password", 1, c.Begin())
	for b.Loop() {
		c.Get("a@x", "password")
	}
}
