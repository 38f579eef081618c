package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"time"
)

// idle opens o.IdleConns authenticated MQTT connections that then do
// nothing, and reports what each costs bdp serve's heap and how long
// opening all of them took with the credentials cache warm.
//
// Heap figures come from bdp's /metrics (Go's memstats) sampled once a
// garbage collection has run and its sweep has finished, before and with
// the connections open: go_memstats_heap_alloc_bytes then is about the
// live heap (heap_bytes_per_conn); heap_inuse (spans in use), the
// goroutine stacks, which are not heap, and the resident set, which
// counts only the pages touched, are reported beside it.
func (b *mqttBench) idle(ctx context.Context, result map[string]any) error {
	// One connection first: its password is hashed once and cached, as
	// in a reconnect storm after a restart of the clients.
	warm, err := b.rawConnect(ctx, "idle-warm", b.reader)
	if err != nil {
		return fmt.Errorf("warm-up connection: %w", err)
	}
	warm.Close()
	if err := b.waitClients(ctx, 0, 10*time.Second); err != nil {
		return err
	}
	before, err := b.heapAfterGC(ctx)
	if err != nil {
		return err
	}
	hashesBefore, err := b.metrics(ctx, "bdp_mqtt_password_hashes_total")
	if err != nil {
		return err
	}
	b.progress("idle: connecting %d clients (%d at a time)", b.o.IdleConns, b.o.ConnectWorkers)
	start := time.Now()
	conns, err := b.connectIdle(ctx)
	connectSeconds := time.Since(start).Seconds()
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	if err != nil {
		return err
	}
	if err := b.waitClients(ctx, float64(b.o.IdleConns), 30*time.Second); err != nil {
		return err
	}
	after, err := b.heapAfterGC(ctx)
	if err != nil {
		return err
	}
	hashesAfter, err := b.metrics(ctx, "bdp_mqtt_password_hashes_total")
	if err != nil {
		return err
	}
	n := float64(b.o.IdleConns)
	per := func(series string) int { return int((after[series] - before[series]) / n) }
	result["idle_conns"] = b.o.IdleConns
	result["connect_seconds"] = round(connectSeconds)
	result["connect_password_hashes"] = int(hashesAfter["bdp_mqtt_password_hashes_total"] - hashesBefore["bdp_mqtt_password_hashes_total"])
	result["heap_bytes_per_conn"] = per("go_memstats_heap_alloc_bytes")
	result["heap_inuse_bytes_per_conn"] = per("go_memstats_heap_inuse_bytes")
	result["stack_bytes_per_conn"] = per("go_memstats_stack_inuse_bytes")
	result["goroutines_per_conn"] = round((after["go_goroutines"] - before["go_goroutines"]) / n)
	result["rss_bytes_per_conn"] = per("process_resident_memory_bytes")
	b.progress("idle: %d connected in %.2f s, %d heap bytes each", b.o.IdleConns, connectSeconds, result["heap_bytes_per_conn"])
	for _, c := range conns {
		c.Close()
	}
	conns = nil
	return b.waitClients(ctx, 0, 60*time.Second)
}

// connectIdle opens the connections from o.ConnectWorkers goroutines;
// on an error it returns those it opened, for the caller to close.
func (b *mqttBench) connectIdle(ctx context.Context) ([]net.Conn, error) {
	conns := make([]net.Conn, b.o.IdleConns)
	next := make(chan int)
	errs := make(chan error, b.o.ConnectWorkers)
	var wg sync.WaitGroup
	for w := 0; w < b.o.ConnectWorkers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				c, err := b.rawConnect(ctx, "idle-"+strconv.Itoa(i), b.reader)
				if err != nil {
					errs <- fmt.Errorf("connection %d: %w", i, err)
					return
				}
				conns[i] = c
			}
		}()
	}
	var err error
feed:
	for i := range conns {
		select {
		case next <- i:
		case err = <-errs:
			break feed
		}
	}
	close(next)
	wg.Wait()
	close(errs)
	err = errors.Join(err, <-errs)
	opened := conns[:0]
	for _, c := range conns {
		if c != nil {
			opened = append(opened, c)
		}
	}
	return opened, err
}

// rawConnect opens one MQTT 3.1.1 session with a hand-made CONNECT and
// waits for a successful CONNACK: a paho client per idle connection
// would weigh on this process, not on the one measured. Keep alive 0:
// the broker expects no pings from a client that does nothing.
func (b *mqttBench) rawConnect(ctx context.Context, clientID string, cred mqttCredentials) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", b.broker)
	if err != nil {
		return nil, err
	}
	var body bytes.Buffer
	body.Write([]byte{0, 4, 'M', 'Q', 'T', 'T', 4, 0xC2, 0, 0}) // level 4; username, password, clean session; keep alive 0
	for _, s := range []string{clientID, cred.username, cred.password} {
		body.Write([]byte{byte(len(s) >> 8), byte(len(s))})
		body.WriteString(s)
	}
	packet := append([]byte{0x10}, remainingLength(body.Len())...)
	packet = append(packet, body.Bytes()...)
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := c.Write(packet); err != nil {
		c.Close()
		return nil, err
	}
	var ack [4]byte
	if _, err := io.ReadFull(c, ack[:]); err != nil { // unbuffered: what follows is the caller's
		c.Close()
		return nil, fmt.Errorf("no CONNACK: %w", err)
	}
	if ack[0] != 0x20 || ack[1] != 2 || ack[3] != 0 {
		c.Close()
		return nil, fmt.Errorf("CONNACK % x: refused", ack)
	}
	_ = c.SetDeadline(time.Time{})
	return c, nil
}

// remainingLength is MQTT's variable-length integer.
func remainingLength(n int) []byte {
	var out []byte
	for {
		digit := byte(n % 128)
		if n /= 128; n > 0 {
			digit |= 0x80
		}
		out = append(out, digit)
		if n == 0 {
			return out
		}
	}
}

// waitClients waits until bdp's broker counts want connected clients.
func (b *mqttBench) waitClients(ctx context.Context, want float64, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	var got float64
	for time.Now().Before(deadline) {
		m, err := b.metrics(ctx, "bdp_mqtt_clients_connected")
		if err != nil {
			return err
		}
		if got = m["bdp_mqtt_clients_connected"]; got == want {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return fmt.Errorf("bdp counts %v connected MQTT clients after %s, want %v", got, limit, want)
}

// heapSeries are the memory figures idle reads.
var heapSeries = []string{"go_memstats_heap_alloc_bytes", "go_memstats_heap_inuse_bytes", "go_memstats_stack_inuse_bytes",
	"go_goroutines", "process_resident_memory_bytes", "go_gc_duration_seconds_count"}

// heapAfterGC scrapes /metrics until bdp's collector has completed a
// whole cycle since the first scrape, lets the sweeper finish (right
// after a cycle, heap_alloc still counts the garbage not yet swept) and
// returns the next scrape taken with no cycle in between: the heap then
// holds little beyond live objects. bdp serve offers no way to force a
// collection; the scrapes' own garbage brings the next one on (and Go
// forces one every two minutes).
func (b *mqttBench) heapAfterGC(ctx context.Context) (map[string]float64, error) {
	return remoteHeapAfterGC(ctx, b.metrics)
}

// remoteHeapAfterGC is mqttBench.heapAfterGC over any scrape of bdp's /metrics.
func remoteHeapAfterGC(ctx context.Context, scrape func(context.Context, ...string) (map[string]float64, error)) (map[string]float64, error) {
	first, err := scrape(ctx, heapSeries...)
	if err != nil {
		return nil, err
	}
	const cycles = "go_gc_duration_seconds_count"
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		m, err := scrape(ctx, heapSeries...)
		if err != nil {
			return nil, err
		}
		if m[cycles] < first[cycles]+2 {
			continue
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(2 * time.Second):
		}
		swept, err := scrape(ctx, heapSeries...)
		if err != nil {
			return nil, err
		}
		if swept[cycles] == m[cycles] {
			return swept, nil
		}
		first = swept // a cycle ran while sweeping: wait for another
	}
	return nil, errors.New("bdp serve ran no garbage collection for 3 minutes")
}
