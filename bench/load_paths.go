package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
	"github.com/segmentio/kafka-go"

	"github.com/openbdp/bdp/codec"
)

// Path is a way observations reach the deployment.
type Path string

// The paths: HTTP uploads (POST /v2/project/{id}/timeseries), Kafka
// gateway messages (BDP_KAFKA_TOPIC) and MQTT publishes of a write user.
const (
	PathHTTP  Path = "http"
	PathKafka Path = "kafka"
	PathMQTT  Path = "mqtt"
)

// Paths are the paths in the order they are reported.
func Paths() []Path { return []Path{PathHTTP, PathKafka, PathMQTT} }

// ParseRates reads "http=2000,kafka=2000,mqtt=1000": observations per
// second per path.
func ParseRates(s string) (map[Path]int, error) {
	rates := map[Path]int{}
	for part := range strings.SplitSeq(s, ",") {
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		name, rate, ok := strings.Cut(part, "=")
		n, err := strconv.Atoi(rate)
		p := Path(strings.TrimSpace(name))
		if !ok || err != nil || n <= 0 || !slices.Contains(Paths(), p) {
			return nil, fmt.Errorf("rate %q: want path=observations per second, a path of %v", part, Paths())
		}
		rates[p] += n
	}
	return rates, nil
}

// assignPaths gives each source its path: in proportion to the rates,
// interleaved (a smooth weighted round robin), so that the datapoints of
// each kind, which read consecutive sources, find every path among them.
// A source keeps its path for the whole run: a path keeps a source's
// observations in order, two paths would not. No rates: all on HTTP.
func assignPaths(rates map[Path]int, sources int) ([]Path, error) {
	if len(rates) == 0 {
		return slices.Repeat([]Path{PathHTTP}, sources), nil
	}
	var used []Path
	total := 0
	for _, p := range Paths() {
		if rates[p] > 0 {
			used, total = append(used, p), total+rates[p]
		}
	}
	if sources < len(used) {
		return nil, fmt.Errorf("load: %d sources cannot be shared by %d paths", sources, len(used))
	}
	out := make([]Path, sources)
	credit := map[Path]int{}
	for s := range out {
		best := used[0]
		for _, p := range used {
			credit[p] += rates[p]
			if credit[p] > credit[best] {
				best = p
			}
		}
		credit[best] -= total
		out[s] = best
	}
	for _, p := range used {
		if !slices.Contains(out, p) {
			// A path with a small share next to large ones: it takes the
			// last source of the largest.
			for s := len(out) - 1; s >= 0; s-- {
				if n := countPath(out, out[s]); n > 1 {
					out[s] = p
					break
				}
			}
		}
	}
	return out, nil
}

func countPath(paths []Path, p Path) int {
	n := 0
	for _, q := range paths {
		if q == p {
			n++
		}
	}
	return n
}

// sourcesOn lists the sources path p carries.
func (l *Load) sourcesOn(p Path) []int {
	var out []int
	for s, q := range l.sourcePath {
		if q == p {
			out = append(out, s)
		}
	}
	return out
}

// pathLoad is what one path had acknowledged.
type pathLoad struct {
	observations int
	latencies    []time.Duration // one per acknowledged upload, Kafka message or publish
	first, last  time.Time       // the first send, the last acknowledgement
}

// Load's Kafka gateways: a source's observations go, one message a round,
// in the message of its gateway (source index mod kafkaGateways), keyed by
// the gateway, so a partition keeps them in order.
const kafkaGateways = 8

// kafkaBatch bounds the messages of one WriteMessages call.
const kafkaBatch = 10_000

// mqttInFlight bounds the publishes waiting for their PUBACK, under the
// embedded broker's receive maximum (4096); a full window holds the feed
// up, which its pace then shows.
const mqttInFlight = 2048

// kafkaQueued is a message waiting to be produced.
type kafkaQueued struct {
	msg                 kafka.Message
	round, observations int
	at                  time.Time
}

// connectPaths makes the Kafka writer and the MQTT publisher of the
// paths that carry sources.
func (l *Load) connectPaths(ctx context.Context) error {
	if len(l.sourcesOn(PathKafka)) > 0 {
		if len(l.opts.KafkaBrokers) == 0 || l.opts.KafkaTopic == "" {
			return errors.New("load: a Kafka rate needs the brokers and the topic the deployment consumes")
		}
		tr := &kafka.Transport{}
		// Each WriteMessages call sends what queued, a batch per
		// partition, and returns once the brokers acknowledged them all.
		w := &kafka.Writer{Addr: kafka.TCP(l.opts.KafkaBrokers...), Topic: l.opts.KafkaTopic, Balancer: &kafka.Hash{},
			RequiredAcks: kafka.RequireAll, BatchSize: kafkaBatch, BatchBytes: 900 << 10, BatchTimeout: time.Millisecond,
			Transport: tr}
		l.kafkaQueue = make(chan kafkaQueued, 1<<16)
		done := make(chan struct{})
		go func() { defer close(done); l.produce(w) }()
		queue := l.kafkaQueue
		l.onClose(func() { close(queue); <-done; _ = w.Close(); tr.CloseIdleConnections() })
	}
	if len(l.sourcesOn(PathMQTT)) > 0 {
		if len(l.opts.MQTT) == 0 {
			return errors.New("load: an MQTT rate needs the broker's URL")
		}
		user, password, err := l.createMQTTUser(ctx, "write")
		if err != nil {
			return err
		}
		opts := l.mqttOptions(user, password).SetCleanSession(false) // in flight publishes are sent again after a reconnect
		l.mqtt = paho.NewClient(opts)
		if err := wait(ctx, l.mqtt.Connect()); err != nil {
			return fmt.Errorf("load: connect the MQTT publisher: %w", err)
		}
		l.mqttSlots = make(chan struct{}, mqttInFlight)
		c := l.mqtt
		l.onClose(func() { l.mqttWaits.Wait(); c.Disconnect(250) })
	}
	return nil
}

// mqttOptions are a client of the deployment's brokers as user.
func (l *Load) mqttOptions(user, password string) *paho.ClientOptions {
	opts := paho.NewClientOptions().SetClientID(user).SetUsername(user).SetPassword(password).
		SetAutoReconnect(true).SetConnectTimeout(10 * time.Second).SetOrderMatters(false)
	for _, url := range l.opts.MQTT {
		opts.AddBroker(url)
	}
	return opts
}

// sendKafka queues round r of the Kafka sources, one message per gateway.
func (l *Load) sendKafka(ctx context.Context, r int, sources []int) error {
	groups := map[int][]int{}
	for _, s := range sources {
		groups[s%kafkaGateways] = append(groups[s%kafkaGateways], s)
	}
	now := time.Now()
	l.sent(PathKafka, now)
	for g := range kafkaGateways {
		if len(groups[g]) == 0 {
			continue
		}
		var b strings.Builder
		b.WriteString("[")
		for k, s := range groups[g] {
			if k > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `{"project_id":%d,"dataPointID":%q,"time":%q,"value":%d}`,
				l.opts.ProjectID, l.source(s), l.roundTime(r).Format(time.RFC3339), l.sourceValue(r, s))
		}
		b.WriteString("]")
		m := kafka.Message{Key: fmt.Appendf(nil, "%sgw%d", l.opts.Prefix, g), Value: []byte(b.String())}
		select {
		case l.kafkaQueue <- kafkaQueued{msg: m, round: r, observations: len(groups[g]), at: now}:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// produce sends the queued messages until the queue is closed: each call
// takes everything queued by then, so the batches grow with the load
// (the writer's own asynchronous batches, a few milliseconds' worth each,
// are written one after the other per partition and fell behind at a
// few hundred a second). A call that fails after the writer's attempts
// stops the feed: a message sent again after later ones would arrive
// late.
func (l *Load) produce(w *kafka.Writer) {
	var batch []kafkaQueued
	msgs := make([]kafka.Message, 0, kafkaBatch)
	for q := range l.kafkaQueue {
		batch, msgs = append(batch[:0], q), append(msgs[:0], q.msg)
	gather:
		for len(batch) < kafkaBatch {
			select {
			case q, open := <-l.kafkaQueue:
				if !open {
					break gather
				}
				batch, msgs = append(batch, q), append(msgs, q.msg)
			default:
				break gather
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), feedStall)
		err := w.WriteMessages(ctx, msgs...)
		cancel()
		if err != nil {
			l.fail(fmt.Errorf("kafka: %d messages from round %d: %w", len(msgs), batch[0].round, err))
			continue
		}
		for _, q := range batch {
			l.ack(PathKafka, time.Since(q.at), q.round, 1, q.observations)
		}
	}
}

// sendMQTT publishes round r of the MQTT sources, QoS 1, one publish per
// source to its datapoint's topic, each counted when its PUBACK comes.
func (l *Load) sendMQTT(ctx context.Context, r int, sources []int) error {
	prefix := codec.ProjectTopicPrefix(l.opts.ProjectID) + "datapoint/"
	l.sent(PathMQTT, time.Now())
	for _, s := range sources {
		select {
		case l.mqttSlots <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err()
		}
		payload := fmt.Sprintf(`{"time":%q,"value":%d}`, l.roundTime(r).Format(time.RFC3339), l.sourceValue(r, s))
		at := time.Now()
		token := l.mqtt.Publish(prefix+codec.EscapeTopicID(l.source(s)), 1, false, payload)
		l.mqttWaits.Add(1)
		go l.awaitPuback(token, r, at)
	}
	return nil
}

// awaitPuback counts one publish once its PUBACK is in; one that fails,
// or has none within a minute, stops the feed.
func (l *Load) awaitPuback(token paho.Token, r int, at time.Time) {
	defer l.mqttWaits.Done()
	defer func() { <-l.mqttSlots }()
	switch {
	case !token.WaitTimeout(time.Minute):
		l.fail(fmt.Errorf("mqtt: no PUBACK within a minute for round %d", r))
	case token.Error() != nil:
		l.fail(fmt.Errorf("mqtt: publish of round %d: %w", r, token.Error()))
	default:
		l.ack(PathMQTT, time.Since(at), r, 1, 1)
	}
}
