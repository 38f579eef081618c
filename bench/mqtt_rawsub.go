package bench

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"
)

// rawSubscribe is a minimal QoS 1 subscriber: the CONNECT of rawConnect,
// one SUBSCRIBE of filter at QoS 1, then a loop that hands each
// PUBLISH's payload to receive and acknowledges it (PUBACKs coalesced by
// bufferedConn). It returns once the SUBACK granted the subscription;
// close ends the session.
func (b *mqttBench) rawSubscribe(ctx context.Context, clientID, filter string, receive func(payload []byte)) (close func(), err error) {
	c, err := b.rawConnect(ctx, clientID, b.reader)
	if err != nil {
		return nil, err
	}
	conn := newBufferedConn(c)
	body := append([]byte{0, 1, byte(len(filter) >> 8), byte(len(filter))}, filter...) // packet id 1
	body = append(body, 1)                                                             // QoS 1
	packet := append(append([]byte{0x82}, remainingLength(len(body))...), body...)
	if _, err := conn.Write(packet); err != nil {
		conn.Close()
		return nil, err
	}
	subscribed := make(chan error, 1)
	go func() {
		err := readPublishes(bufio.NewReader(conn), conn, subscribed, receive)
		select {
		case subscribed <- err: // failed before the SUBACK
		default:
		}
	}()
	select {
	case err = <-subscribed:
	case <-time.After(10 * time.Second):
		err = errors.New("no SUBACK within 10 s")
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		conn.Close()
		return nil, err
	}
	return func() { conn.Close() }, nil
}

// readPublishes reads packets until the connection ends: the SUBACK
// (reported on subscribed), and PUBLISHes, each acknowledged if QoS 1.
func readPublishes(r *bufio.Reader, w io.Writer, subscribed chan<- error, receive func([]byte)) error {
	var buf []byte
	for {
		header, err := r.ReadByte()
		if err != nil {
			return err
		}
		n, err := binary.ReadUvarint(r) // MQTT's remaining length is a 7-bit varint
		if err != nil {
			return err
		}
		if cap(buf) < int(n) {
			buf = make([]byte, n)
		}
		buf = buf[:n]
		if _, err := io.ReadFull(r, buf); err != nil {
			return err
		}
		switch header >> 4 {
		case 9: // SUBACK: packet id, one return code
			if len(buf) < 3 || buf[2] > 2 {
				subscribed <- fmt.Errorf("SUBACK % x: refused", buf)
				return nil
			}
			subscribed <- nil
		case 3: // PUBLISH
			if len(buf) < 2 {
				return errors.New("short PUBLISH")
			}
			rest := buf[2+int(binary.BigEndian.Uint16(buf)):]
			if qos := header >> 1 & 3; qos > 0 {
				if qos != 1 || len(rest) < 2 {
					return fmt.Errorf("PUBLISH with QoS %d", qos)
				}
				if _, err := w.Write([]byte{0x40, 2, rest[0], rest[1]}); err != nil {
					return err
				}
				rest = rest[2:]
			}
			receive(rest)
		}
	}
}
