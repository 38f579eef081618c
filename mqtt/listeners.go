package mqtt

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	"github.com/mochi-mqtt/server/v2/listeners"
)

// listener is a mochi listener on a socket bdp opened itself, so port 0
// resolves before the broker starts (addresses.json) and every goroutine
// it starts is joined on Close. mochi's own TCP and WebSocket listeners
// leave their accept loops and connection goroutines unowned, and its
// WebSocket listener cannot listen on port 0.
type listener struct {
	id, protocol string
	ln           net.Listener
	// serve runs the accept loop until ln is closed, admitting each
	// connection.
	serve func(l *listener, establish listeners.EstablishFn)
	// stop ends what serve started besides ln (the WebSocket HTTP server).
	stop func()

	mu      sync.Mutex
	closed  bool
	conns   map[net.Conn]struct{} // accepted, not yet closed
	running sync.WaitGroup        // connection goroutines
	served  chan struct{}         // closed when serve returns; nil before Serve
}

func newListener(id, protocol string, ln net.Listener) *listener {
	return &listener{id: id, protocol: protocol, ln: &closeOnceListener{Listener: ln}, conns: map[net.Conn]struct{}{}}
}

// tlsHandshakeTimeout bounds a TLS handshake, so a client that opens a
// connection and says nothing holds no goroutine for long.
const tlsHandshakeTimeout = 10 * time.Second

// listen listens on addr, with TLS when tlsConf is set.
func listen(addr string, tlsConf *tls.Config) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	if tlsConf != nil {
		ln = tls.NewListener(ln, tlsConf)
	}
	return ln, nil
}

// newTCPListener listens for MQTT over TCP on addr, over TLS when tlsConf
// is set (id "tls"; else "tcp").
func newTCPListener(addr string, tlsConf *tls.Config) (*listener, error) {
	ln, err := listen(addr, tlsConf)
	if err != nil {
		return nil, err
	}
	id := "tcp"
	if tlsConf != nil {
		id = "tls"
	}
	l := newListener(id, id, ln)
	l.serve = func(l *listener, establish listeners.EstablishFn) {
		for {
			c, err := l.ln.Accept()
			if err != nil {
				return
			}
			if l.admit(c) {
				go func() {
					defer l.done(c)
					if tc, ok := c.(*tls.Conn); ok && !handshake(tc) {
						return
					}
					_ = establish(l.id, newWriteGuard(c))
				}()
			}
		}
	}
	return l, nil
}

// handshake completes a TLS handshake within tlsHandshakeTimeout; one
// that fails ends the connection before mochi sees it.
func handshake(c *tls.Conn) bool {
	ctx, cancel := context.WithTimeout(context.Background(), tlsHandshakeTimeout)
	defer cancel()
	return c.HandshakeContext(ctx) == nil
}

// newWebSocketListener listens for MQTT over WebSocket (subprotocol
// "mqtt", any path) on addr, for browser pages; over TLS (wss://, id
// "wss") when tlsConf is set.
func newWebSocketListener(addr string, tlsConf *tls.Config, log *slog.Logger) (*listener, error) {
	ln, err := listen(addr, tlsConf)
	if err != nil {
		return nil, err
	}
	id := "ws"
	if tlsConf != nil {
		id = "wss"
	}
	l := newListener(id, id, ln)
	upgrader := &websocket.Upgrader{
		Subprotocols: []string{"mqtt"},
		// The broker authenticates every CONNECT itself; a page of any
		// origin may connect with credentials the API handed out.
		CheckOrigin: func(*http.Request) bool { return true },
	}
	// ReadHeaderTimeout bounds the TLS handshake too.
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	l.serve = func(l *listener, establish listeners.EstablishFn) {
		srv.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ws, err := upgrader.Upgrade(w, r, nil)
			if err != nil {
				return // the upgrader has answered
			}
			c := &wsConn{Conn: ws.NetConn(), ws: ws}
			if l.admit(c) {
				defer l.done(c)
				_ = establish(l.id, c)
			}
		})
		_ = srv.Serve(l.ln)
	}
	l.stop = func() { _ = srv.Close() }
	return l, nil
}

// admit tracks a new connection, or closes it when the listener has
// closed; Close waits for every admitted connection's done. (A refused or
// failed connection is counted by the hooks; mochi's error adds nothing.)
func (l *listener) admit(c net.Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		_ = c.Close()
		return false
	}
	l.conns[c] = struct{}{}
	l.running.Add(1)
	return true
}

func (l *listener) done(c net.Conn) {
	_ = c.Close()
	l.mu.Lock()
	delete(l.conns, c)
	l.mu.Unlock()
	l.running.Done()
}

// ID, Address, Protocol, Init, Serve and Close make listener a mochi
// listeners.Listener.
func (l *listener) ID() string              { return l.id }
func (l *listener) Address() string         { return l.ln.Addr().String() }
func (l *listener) Protocol() string        { return l.protocol }
func (l *listener) Init(*slog.Logger) error { return nil }

func (l *listener) Serve(establish listeners.EstablishFn) {
	l.mu.Lock()
	if l.closed || l.served != nil {
		l.mu.Unlock()
		return
	}
	l.served = make(chan struct{})
	l.mu.Unlock()
	defer close(l.served)
	l.serve(l, establish)
}

// Close stops accepting, has mochi disconnect this listener's clients
// (MQTT 5 clients are told 0x8B, server shutting down), closes what is
// left (connections still in CONNECT) and waits for every goroutine.
func (l *listener) Close(closeClients listeners.CloseFn) {
	l.mu.Lock()
	already := l.closed
	l.closed = true
	served := l.served
	l.mu.Unlock()
	if already {
		return
	}
	_ = l.ln.Close()
	if l.stop != nil {
		l.stop()
	}
	if served != nil {
		<-served
	}
	closeClients(l.id)
	l.mu.Lock()
	for c := range l.conns {
		_ = c.Close()
	}
	l.mu.Unlock()
	l.running.Wait()
}

// closeOnceListener is a net.Listener whose Close may be called more than
// once (http.Server.Close closes it too).
type closeOnceListener struct {
	net.Listener
	once sync.Once
	err  error
}

func (t *closeOnceListener) Close() error {
	t.once.Do(func() { t.err = t.Listener.Close() })
	if errors.Is(t.err, net.ErrClosed) {
		return nil
	}
	return t.err
}

// wsConn carries the MQTT byte stream in binary WebSocket messages: a
// read continues across message boundaries, a write is one message.
type wsConn struct {
	net.Conn // the underlying connection: addresses and deadlines
	ws       *websocket.Conn
	r        io.Reader // the message being read; nil between messages

	writeMu sync.Mutex
}

func (c *wsConn) Read(p []byte) (int, error) {
	for {
		if c.r == nil {
			kind, r, err := c.ws.NextReader()
			if err != nil {
				return 0, err
			}
			if kind != websocket.BinaryMessage && kind != websocket.TextMessage {
				continue
			}
			c.r = r
		}
		n, err := c.r.Read(p)
		if errors.Is(err, io.EOF) {
			c.r = nil
			if n == 0 {
				continue
			}
			err = nil
		}
		return n, err
	}
}

func (c *wsConn) Write(p []byte) (int, error) {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	// As writeGuard for TCP: a client that takes nothing is closed.
	_ = c.ws.SetWriteDeadline(time.Now().Add(clientWriteTimeout))
	if err := c.ws.WriteMessage(websocket.BinaryMessage, p); err != nil {
		_ = c.ws.Close()
		return 0, err
	}
	return len(p), nil
}

func (c *wsConn) Close() error { return c.ws.Close() }
