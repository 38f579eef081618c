package mqtt

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"
)

// certRecheck is how often a handshake looks whether the certificate
// files were replaced: a renewed certificate (Let's Encrypt renews every
// 60 days) is served without a restart.
const certRecheck = 10 * time.Second

// LoadTLS reads the server certificate (PEM, the chain after the leaf)
// and its private key for the TLS listeners. A file that cannot be read,
// a key that does not match the certificate or a certificate past its
// validity is an error, so bdp refuses to start rather than accept
// connections whose handshakes all fail. Clients must speak TLS 1.2 or
// later, as aedifion's broker requires.
func LoadTLS(certFile, keyFile string) (*tls.Config, error) {
	c := &certFiles{certFile: certFile, keyFile: keyFile, recheck: certRecheck}
	if err := c.load(time.Now()); err != nil {
		return nil, err
	}
	return &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: c.get}, nil
}

// certFiles serves the certificate of two files, reloaded when they
// change.
type certFiles struct {
	certFile, keyFile string
	recheck           time.Duration // certRecheck; tests shorten it

	mu      sync.Mutex
	cert    *tls.Certificate
	stamp   [2]time.Time // the files' modification times when loaded
	checked time.Time
}

func (c *certFiles) load(now time.Time) error {
	stamp, err := c.stamps()
	if err != nil {
		return err
	}
	cert, err := tls.LoadX509KeyPair(c.certFile, c.keyFile)
	if err != nil {
		return fmt.Errorf("TLS certificate %s with key %s: %w", c.certFile, c.keyFile, err)
	}
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		return fmt.Errorf("TLS certificate %s: %w", c.certFile, err)
	}
	if now.After(leaf.NotAfter) {
		return fmt.Errorf("TLS certificate %s expired at %s", c.certFile, leaf.NotAfter.UTC().Format(time.RFC3339))
	}
	cert.Leaf = leaf
	c.cert, c.stamp, c.checked = &cert, stamp, now
	return nil
}

func (c *certFiles) stamps() ([2]time.Time, error) {
	var out [2]time.Time
	for i, name := range []string{c.certFile, c.keyFile} {
		fi, err := os.Stat(name)
		if err != nil {
			return out, fmt.Errorf("TLS certificate: %w", err)
		}
		if fi.IsDir() {
			return out, fmt.Errorf("TLS certificate: %s is a directory", name)
		}
		out[i] = fi.ModTime()
	}
	return out, nil
}

// get is tls.Config.GetCertificate: the loaded certificate, reloaded
// first when the files changed. A replacement that does not load (a key
// written before its certificate) leaves the previous one in use.
func (c *certFiles) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	if now.Sub(c.checked) >= c.recheck {
		c.checked = now
		if stamp, err := c.stamps(); err == nil && stamp != c.stamp {
			_ = c.load(now)
		}
	}
	if c.cert == nil {
		return nil, errors.New("no TLS certificate")
	}
	return c.cert, nil
}
