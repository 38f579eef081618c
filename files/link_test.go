package files_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/openbdp/bdp/files"
	"github.com/openbdp/bdp/files/filestest"
)

// A link works until it expires and only as signed: the store checks the
// signature and the expiry, answering 403 with S3's XML error otherwise.
func TestLinkSignatureAndExpiry(t *testing.T) {
	ctx := context.Background()
	o := filestest.Open(t)
	const size = 5000
	for _, k := range []string{"company/3/report", "company/3/other"} {
		if _, err := o.Put(ctx, k, &pattern{left: size}, size); err != nil {
			t.Fatal(err)
		}
	}
	link, err := o.Link(ctx, "company/3/report", time.Minute, "Bericht März.pdf")
	if err != nil {
		t.Fatal(err)
	}
	status, sum, n, resp, _ := get(t, link)
	if status != 200 || n != size || sum != patternSum(size) {
		t.Fatalf("fresh link: %d, %d bytes", status, n)
	}
	if cd := resp.Header.Get("Content-Disposition"); !strings.HasPrefix(cd, "attachment;") || !strings.Contains(cd, "Bericht%20M%C3%A4rz.pdf") {
		t.Fatalf("Content-Disposition %q, want an attachment named Bericht März.pdf", cd)
	}

	tamper := func(change func(u *url.URL)) string {
		u, err := url.Parse(link)
		if err != nil {
			t.Fatal(err)
		}
		change(u)
		return u.String()
	}
	setQuery := func(name, value string) func(*url.URL) {
		return func(u *url.URL) { q := u.Query(); q.Set(name, value); u.RawQuery = q.Encode() }
	}
	sig, _ := url.Parse(link)
	s := sig.Query().Get("X-Amz-Signature")
	flipped := s[:len(s)-1] + map[bool]string{true: "1", false: "0"}[s[len(s)-1] == '0']
	for _, tc := range []struct {
		name, url string
	}{
		{"signature changed", tamper(setQuery("X-Amz-Signature", flipped))},
		{"other object, same signature", tamper(func(u *url.URL) { u.Path = strings.Replace(u.Path, "report", "other", 1) })},
		{"expiry raised", tamper(setQuery("X-Amz-Expires", "3600"))},
		{"download name changed", tamper(setQuery("response-content-disposition", "attachment; filename=x.exe"))},
	} {
		if status, _, _, _, body := get(t, tc.url); status != http.StatusForbidden || !strings.Contains(body, "<Code>SignatureDoesNotMatch</Code>") {
			t.Errorf("%s: %d %s, want 403 SignatureDoesNotMatch", tc.name, status, body)
		}
	}

	// A 1-s link: valid at once (at least 1 s, whatever the fraction of the
	// second it was signed in), expired 2 s later.
	short, err := o.Link(ctx, "company/3/report", time.Second, "")
	if err != nil {
		t.Fatal(err)
	}
	if status, _, _, _, body := get(t, short); status != http.StatusOK {
		t.Fatalf("fresh 1-s link: %d %s", status, body)
	}
	time.Sleep(2100 * time.Millisecond)
	status, _, _, resp, body := get(t, short)
	if status != http.StatusForbidden || !strings.Contains(body, "<Code>AccessDenied</Code>") || !strings.Contains(body, "Request has expired") {
		t.Fatalf("expired link: %d %s, want 403 AccessDenied, Request has expired", status, body)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/xml" {
		t.Fatalf("expired link: Content-Type %q, want application/xml", ct)
	}
}

// Link refuses an expiry S3 cannot sign; the longest allowed is signed as
// is, the others with one second more (whole seconds).
func TestLinkExpiryRange(t *testing.T) {
	o := filestest.Open(t)
	for _, tc := range []struct {
		expiry  time.Duration
		expires string // X-Amz-Expires; "": refused
	}{
		{0, ""}, {999 * time.Millisecond, ""}, {files.MaxLinkExpiry + time.Second, ""},
		{time.Second, "2"}, {10 * time.Minute, "601"}, {files.MaxLinkExpiry, "604800"},
	} {
		link, err := o.Link(context.Background(), "company/1/x", tc.expiry, "")
		if tc.expires == "" {
			if err == nil {
				t.Errorf("expiry %s: link made, want refused", tc.expiry)
			}
			continue
		}
		if err != nil {
			t.Fatalf("expiry %s: %v", tc.expiry, err)
		}
		u, _ := url.Parse(link)
		if got := u.Query().Get("X-Amz-Expires"); got != tc.expires {
			t.Errorf("expiry %s: X-Amz-Expires %s, want %s", tc.expiry, got, tc.expires)
		}
	}
}

// A link made for PublicURL names that host and is valid there; the store
// is reached under a second name, as behind a proxy that keeps the Host.
func TestLinkForPublicURL(t *testing.T) {
	ctx := context.Background()
	cfg := filestest.Start(t)
	_, port, _ := strings.Cut(cfg.Endpoint, ":")
	cfg.PublicURL = "http://localhost:" + port
	o, err := files.OpenObjects(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.Put(ctx, "company/1/f", strings.NewReader("public"), 6); err != nil {
		t.Fatal(err)
	}
	link, err := o.Link(ctx, "company/1/f", time.Minute, "f.txt")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(link, cfg.PublicURL+"/"+cfg.Bucket+"/company/1/f?") {
		t.Fatalf("link %s, want it on %s", link, cfg.PublicURL)
	}
	if status, _, n, _, body := get(t, link); status != 200 || n != 6 {
		t.Fatalf("public link: %d %s", status, body)
	}
	// The same signature is not valid for the internal host name.
	internal := strings.Replace(link, "localhost:", "127.0.0.1:", 1)
	if status, _, _, _, _ := get(t, internal); status != http.StatusForbidden {
		t.Fatalf("link moved to another host: %d, want 403", status)
	}
}
