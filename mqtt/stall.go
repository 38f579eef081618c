package mqtt

import (
	"net"
	"time"
)

// clientWriteTimeout bounds one write to a client's connection. mochi
// writes a client's packets under the client's lock, which publishes
// also take (for the client's next packet id): a subscriber that stops
// reading would block the write on its full socket, then every publish
// that reaches it, and with them live data for every subscriber, for as
// long as it keeps its connection alive (its reads push mochi's deadline
// on). A client that takes no bytes for this long is disconnected.
const clientWriteTimeout = 5 * time.Second

// writeGuard is a client connection whose every write must finish within
// clientWriteTimeout; one that does not closes the connection, which ends
// the client's session like any network failure.
type writeGuard struct {
	net.Conn
}

func (c writeGuard) Write(p []byte) (int, error) {
	_ = c.Conn.SetWriteDeadline(time.Now().Add(clientWriteTimeout))
	n, err := c.Conn.Write(p)
	if err != nil {
		_ = c.Conn.Close()
	}
	return n, err
}

// SetDeadline sets the read deadline only: mochi refreshes its keepalive
// deadline on every read, which would lift a write's own.
func (c writeGuard) SetDeadline(t time.Time) error { return c.Conn.SetReadDeadline(t) }
