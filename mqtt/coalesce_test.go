package mqtt

import (
	"bytes"
	"io"
	"net"
	"sync/atomic"
	"testing"
)

// countingConn counts the writes that reach the socket.
type countingConn struct {
	net.Conn
	writes atomic.Int64
}

func (c *countingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// tcpPair is a real loopback connection: the broker's end and the client's.
func tcpPair(t *testing.T) (server, client net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server = <-accepted
	t.Cleanup(func() { server.Close(); client.Close() })
	return server, client
}

// A burst of small writes reaches the socket in a few system calls, all
// bytes in order; a write after a quiet spell goes out at once; what is
// held when the connection closes is written first.
func TestWriteGuardCoalesces(t *testing.T) {
	server, client := tcpPair(t)
	counted := &countingConn{Conn: server}
	g := newWriteGuard(counted)

	// A first write after nothing: on the socket before Write returns.
	if _, err := g.Write([]byte("first;")); err != nil {
		t.Fatal(err)
	}
	if n := counted.writes.Load(); n != 1 {
		t.Fatalf("the first write made %d socket writes, want 1 at once", n)
	}

	var want bytes.Buffer
	want.WriteString("first;")
	const burst = 1000
	for i := range burst {
		msg := []byte{byte('a' + i%26), ';'}
		want.Write(msg)
		if _, err := g.Write(msg); err != nil {
			t.Fatal(err)
		}
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(client)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("received %d bytes, want the %d written, in order", len(got), want.Len())
	}
	if n := counted.writes.Load(); n > burst/10 {
		t.Errorf("%d writes took %d socket writes; coalescing should need a handful", burst+1, n)
	}
	if _, err := g.Write([]byte("late")); err == nil {
		t.Error("a write after Close succeeded")
	}
}
