package bench

import (
	"bufio"
	"context"
	"net"
	"net/url"
	"sync"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
)

// pahoClient is a paho client of the bench's broker on a bufferedConn.
// Without it paho reads every packet's header byte by byte from the
// socket and writes every PUBACK with a system call of its own: at
// 200,000 messages/s the subscribers' system calls took more CPU than
// bdp serve, and the figures measured this process.
func (b *mqttBench) pahoClient(clientID string, cred mqttCredentials, lost func(error)) paho.Client {
	opts := paho.NewClientOptions().AddBroker("tcp://" + b.broker).SetClientID(clientID).
		SetUsername(cred.username).SetPassword(cred.password).SetCleanSession(true).
		SetAutoReconnect(false).SetConnectTimeout(10 * time.Second).SetKeepAlive(30 * time.Second).
		SetConnectionLostHandler(func(_ paho.Client, err error) { lost(err) }).
		SetCustomOpenConnectionFn(func(uri *url.URL, _ paho.ClientOptions) (net.Conn, error) {
			var d net.Dialer
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			c, err := d.DialContext(ctx, "tcp", uri.Host)
			if err != nil {
				return nil, err
			}
			return newBufferedConn(c), nil
		})
	return paho.NewClient(opts)
}

// flushDelay is how long a write waits for more to send with it.
const flushDelay = time.Millisecond

// bufferedConn reads through a buffer and coalesces writes: Write queues
// the bytes and one goroutine sends whatever has queued since its last
// send, at most one send a flushDelay, so a burst of acknowledgements
// costs one system call. A write
// error is returned by the next Write.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader

	mu      sync.Mutex
	pending []byte
	err     error
	kick    chan struct{} // 1-buffered: bytes are pending
	done    chan struct{} // closed by Close
	once    sync.Once
	flushed sync.WaitGroup
}

func newBufferedConn(c net.Conn) *bufferedConn {
	bc := &bufferedConn{Conn: c, r: bufio.NewReaderSize(c, 64<<10), kick: make(chan struct{}, 1), done: make(chan struct{})}
	bc.flushed.Add(1)
	go bc.flush()
	return bc
}

func (c *bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

func (c *bufferedConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return 0, err
	}
	c.pending = append(c.pending, p...)
	c.mu.Unlock()
	select {
	case c.kick <- struct{}{}:
	default:
	}
	return len(p), nil
}

func (c *bufferedConn) flush() {
	defer c.flushed.Done()
	var out []byte
	for {
		select {
		case <-c.done:
			return
		case <-c.kick:
		}
		// What comes within a millisecond goes along: a QoS 1 receiver
		// acknowledges every message, and a system call per PUBACK
		// would cost more than receiving it.
		time.Sleep(flushDelay)
		c.mu.Lock()
		out, c.pending = c.pending, out[:0]
		c.mu.Unlock()
		if _, err := c.Conn.Write(out); err != nil {
			c.mu.Lock()
			c.err = err
			c.mu.Unlock()
			return
		}
	}
}

// Close sends what is queued (paho's DISCONNECT), then closes.
func (c *bufferedConn) Close() error {
	c.once.Do(func() {
		c.mu.Lock()
		rest := c.pending
		c.pending = nil
		c.mu.Unlock()
		close(c.done)
		c.flushed.Wait()
		if len(rest) > 0 {
			_ = c.Conn.SetWriteDeadline(time.Now().Add(time.Second))
			_, _ = c.Conn.Write(rest)
		}
	})
	return c.Conn.Close()
}
