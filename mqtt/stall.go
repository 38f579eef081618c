package mqtt

import (
	"net"
	"sync"
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

// Write coalescing. mochi writes each packet with a system call of its
// own whenever its queue for the client is empty at that moment, which,
// with live data streaming one small message at a time, is almost always:
// one write(2) per message per subscriber was the largest single cost of
// live data out. A write that comes within coalesceWindow of the previous
// one waits, at most that long, for the ones after it, and they go out
// together; a write after a quiet spell (a CONNACK, an occasional
// message) goes out at once.
const (
	coalesceWindow = time.Millisecond
	coalesceMax    = 32 << 10 // bytes held at most; more are written at once
)

// writeGuard is a client connection whose writes are coalesced and must
// each finish within clientWriteTimeout; one that does not closes the
// connection, which ends the client's session like any network failure.
type writeGuard struct {
	net.Conn

	mu        sync.Mutex
	buf       []byte
	scheduled bool        // a flush is due within coalesceWindow
	timer     *time.Timer // the flush, made on first use
	lastWrite time.Time   // when bytes last went to the socket
	err       error       // the connection failed or was closed
}

func newWriteGuard(c net.Conn) *writeGuard { return &writeGuard{Conn: c} }

func (c *writeGuard) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return 0, c.err
	}
	now := time.Now()
	if !c.scheduled && now.Sub(c.lastWrite) >= coalesceWindow {
		return c.writeLocked(p, now)
	}
	c.buf = append(c.buf, p...)
	if len(c.buf) >= coalesceMax {
		if _, err := c.flushLocked(now); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	if !c.scheduled {
		c.scheduled = true
		if c.timer == nil {
			c.timer = time.AfterFunc(coalesceWindow, c.flushScheduled)
		} else {
			c.timer.Reset(coalesceWindow)
		}
	}
	return len(p), nil
}

// flushScheduled writes what waited for the window to close.
func (c *writeGuard) flushScheduled() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.scheduled = false
	if c.err == nil && len(c.buf) > 0 {
		_, _ = c.flushLocked(time.Now()) // a failure closed the connection
	}
}

func (c *writeGuard) flushLocked(now time.Time) (int, error) {
	n, err := c.writeLocked(c.buf, now)
	if cap(c.buf) > 2*coalesceMax {
		c.buf = nil // a burst's buffer is not kept by an idle connection
	} else {
		c.buf = c.buf[:0]
	}
	return n, err
}

// writeLocked writes p to the socket within clientWriteTimeout or closes
// the connection.
func (c *writeGuard) writeLocked(p []byte, now time.Time) (int, error) {
	c.lastWrite = now
	_ = c.Conn.SetWriteDeadline(now.Add(clientWriteTimeout))
	n, err := c.Conn.Write(p)
	if err != nil {
		c.err = err
		_ = c.Conn.Close()
	}
	return n, err
}

// Close writes what is still held (a DISCONNECT, the last messages), then
// closes the connection.
func (c *writeGuard) Close() error {
	c.mu.Lock()
	if c.err == nil && len(c.buf) > 0 {
		_, _ = c.flushLocked(time.Now())
	}
	if c.timer != nil {
		c.timer.Stop()
	}
	if c.err == nil {
		c.err = net.ErrClosed
	}
	c.mu.Unlock()
	return c.Conn.Close()
}

// SetDeadline sets the read deadline only: mochi refreshes its keepalive
// deadline on every read, which would lift a write's own.
func (c *writeGuard) SetDeadline(t time.Time) error { return c.Conn.SetReadDeadline(t) }
