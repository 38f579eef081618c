package mqtt

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	mochi "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"
	"github.com/mochi-mqtt/server/v2/system"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/openbdp/bdp/codec"
	"github.com/openbdp/bdp/pipeline"
)

// Accounts finds the account of a connected client: the broker's session
// registry.
type Accounts interface {
	Account(clientID string) (Account, bool)
}

// Enqueuer queues observations for storage and tells the outcome later
// (pipeline.Batcher.Enqueue): requests are stored in the order queued.
type Enqueuer interface {
	Enqueue(ctx context.Context, src pipeline.Source, obs []pipeline.Observation) (<-chan error, error)
}

// Reasons a publish for ingestion is dropped (bdp_mqtt_ingest_dropped_total).
const (
	dropTopic        = "topic"        // inside the project's tree but not project/{p}/datapoint/{id}
	dropUnauthorized = "unauthorized" // no write right on the datapoint (the creator's TagAuths)
	dropPayload      = "payload"      // neither {"time","value"} (or an array of them) nor line protocol of the topic's datapoint
	dropInvalid      = "invalid"      // decoded, but refused by the observation rules
)

// ackQueue bounds the acknowledgements one client may have pending; past
// it the client's reads wait, which is TCP backpressure on the publisher.
const ackQueue = 4096

// Ingest is the broker hook that stores what MQTT users publish to their
// project's datapoint topics (api.md 2.8, decisions.md 6): the payload is
// decoded, checked against the user's write access through the Gate,
// validated, and queued on the pipeline as pipeline.SourceMQTT, so it is
// stored, routed and feeds virtual datapoints like any upload. The raw
// publish is not forwarded: subscribers get the stored observations from
// the live publisher, as for every other source.
//
// Acknowledgement: a QoS 1 publish is acknowledged (PUBACK; QoS 2: PUBREC)
// only once its observations are committed, by a goroutine per publishing
// client that acknowledges in arrival order, so a publisher may keep many
// messages in flight and they share batches. The payload is JSON or
// Influx line protocol (codec.DecodePayload), the TagAuth check the same
// for both. A dropped message (bad payload, no right) is counted by
// reason; an MQTT 5 client gets the reason code (0x99 payload format
// invalid, with what is wrong as the reason string; 0x87 not authorized;
// 0x90 topic name invalid), an MQTT 3.1.1 client a plain acknowledgement, as
// 3.1.1 has no negative one and it would otherwise resend the message
// forever. When storing fails, an MQTT 5 client gets 0x80 and an MQTT
// 3.1.1 client no acknowledgement: its connection is closed, and it sends
// the message again when it reconnects.
//
// Publishes from the platform's own client and outside project/ (edge/…)
// pass through untouched.
type Ingest struct {
	mochi.HookBase
	// Info, when set, is the broker's (mochi.Server.Info): a QoS 2
	// exchange the hook starts is counted in flight there, as mochi
	// counts its own, since mochi uncounts it at PUBREL.
	Info *system.Info

	sink     Enqueuer
	gate     *Gate
	accounts Accounts
	dropped  *prometheus.CounterVec

	ctx    context.Context // ended by Close: a write waiting on backpressure gives up
	cancel context.CancelFunc

	mu     sync.Mutex
	ackers map[*mochi.Client]*acker
	closed bool
	wg     sync.WaitGroup
}

// NewIngest returns the hook; add it to the broker (AddHook) and Close it
// after the broker has stopped.
func NewIngest(sink Enqueuer, gate *Gate, accounts Accounts, reg prometheus.Registerer) (*Ingest, error) {
	if sink == nil || gate == nil || accounts == nil || reg == nil {
		return nil, errors.New("ingest: sink, gate, accounts and registry are required")
	}
	h := &Ingest{sink: sink, gate: gate, accounts: accounts, ackers: map[*mochi.Client]*acker{},
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "bdp_mqtt_ingest_dropped_total",
			Help: "MQTT publishes for ingestion dropped, by reason (topic, unauthorized, payload, invalid, storage)."},
			[]string{"reason"})}
	if err := reg.Register(h.dropped); err != nil {
		return nil, fmt.Errorf("register ingest metrics: %w", err)
	}
	for _, r := range []string{dropTopic, dropUnauthorized, dropPayload, dropInvalid, "storage"} {
		h.dropped.WithLabelValues(r) // present at 0 from the start
	}
	h.ctx, h.cancel = context.WithCancel(context.Background())
	return h, nil
}

// AddIngest adds ingestion to the embedded broker, before Serve: the hook
// finds accounts in the broker's sessions and counts its QoS 2 exchanges
// in the broker's figures. Close the returned hook after the broker.
func (e *Embedded) AddIngest(sink Enqueuer, gate *Gate, reg prometheus.Registerer) (*Ingest, error) {
	h, err := NewIngest(sink, gate, e.sessions, reg)
	if err != nil {
		return nil, err
	}
	h.Info = e.server.Info
	if err := e.AddHook(h); err != nil {
		return nil, err
	}
	return h, nil
}

// ID names the hook.
func (h *Ingest) ID() string { return "bdp-ingest" }

// Provides tells mochi which events the hook handles.
func (h *Ingest) Provides(b byte) bool {
	return b == mochi.OnPublish || b == mochi.OnDisconnect
}

// OnPublish takes over every publish on project/…: mochi neither
// acknowledges nor forwards a packet rejected with ErrRejectPacket, so the
// hook acknowledges it itself once stored.
func (h *Ingest) OnPublish(cl *mochi.Client, pk packets.Packet) (packets.Packet, error) {
	if cl.Net.Inline || !strings.HasPrefix(pk.TopicName, "project/") {
		return pk, nil
	}
	acct, ok := h.accounts.Account(cl.ID)
	if !ok {
		return pk, h.drop(cl, pk, dropUnauthorized, packets.ErrNotAuthorized)
	}
	projectID, dataPointID, err := codec.ParseDatapointTopic(pk.TopicName)
	if err != nil {
		return pk, h.drop(cl, pk, dropTopic, packets.ErrTopicNameInvalid)
	}
	allowed, err := h.gate.decideFor(acct, projectID, dataPointID, true)
	if err != nil {
		// The database did not answer: like a failed commit, so the
		// message is sent again rather than dropped.
		return pk, h.failed(cl, pk, err)
	}
	if !allowed {
		return pk, h.drop(cl, pk, dropUnauthorized, packets.ErrNotAuthorized)
	}
	obs, reason, why := observationsOf(projectID, dataPointID, pk.Payload)
	if reason != "" {
		return pk, h.drop(cl, pk, reason, refusedPayload(why))
	}
	// Queued on the client's read goroutine, so the pipeline gets a
	// client's messages in the order sent; only the wait is elsewhere.
	done, err := h.sink.Enqueue(h.ctx, pipeline.SourceMQTT, obs)
	if err != nil {
		return pk, h.failed(cl, pk, err)
	}
	if pk.FixedHeader.Qos > 0 {
		h.pending(cl, pendingAck{id: pk.PacketID, qos: pk.FixedHeader.Qos, done: done})
	}
	return pk, packets.ErrRejectPacket
}

// failed answers a publish that could not be stored, in its turn, as a
// failed commit is answered.
func (h *Ingest) failed(cl *mochi.Client, pk packets.Packet, err error) error {
	if pk.FixedHeader.Qos > 0 {
		done := make(chan error, 1)
		done <- err
		h.pending(cl, pendingAck{id: pk.PacketID, qos: pk.FixedHeader.Qos, done: done})
	} else {
		h.dropped.WithLabelValues("storage").Inc()
	}
	return packets.ErrRejectPacket
}

// observationsOf decodes the payload of a publish on one datapoint's
// topic (JSON or Influx line protocol, codec.DecodePayload) into
// validated observations, or tells why it is dropped (dropPayload,
// dropInvalid) and what is wrong with it. Both brokers' ingestion use it.
func observationsOf(projectID int64, dataPointID string, payload []byte) ([]pipeline.Observation, string, error) {
	tvs, err := codec.DecodePayload(payload, dataPointID, time.Now())
	if err != nil {
		return nil, dropPayload, err
	}
	obs := make([]pipeline.Observation, len(tvs))
	for i, tv := range tvs {
		obs[i] = pipeline.Observation{ProjectID: projectID, DataPointID: dataPointID, Time: tv.Time, Value: tv.Value}
		if err := obs[i].Validate(); err != nil {
			if len(tvs) > 1 {
				err = fmt.Errorf("observation %d: %w", i, err)
			}
			return nil, dropInvalid, err
		}
	}
	return obs, "", nil
}

// maxReasonString bounds the reason string of a refusal: the decoder's
// reasons are short and echo no payload, and a client's packet size
// limit must not be crossed by an explanation.
const maxReasonString = 256

// refusedPayload is 0x99 (payload format invalid) with what is wrong as
// its reason string, which an MQTT 5 publisher reads in the PUBACK.
func refusedPayload(why error) packets.Code {
	code := packets.ErrPayloadFormatInvalid
	if why != nil {
		code.Reason = why.Error()
		if len(code.Reason) > maxReasonString {
			code.Reason = strings.ToValidUTF8(code.Reason[:maxReasonString], "") + "…"
		}
	}
	return code
}

// drop counts a refused publish and acknowledges it in its turn.
func (h *Ingest) drop(cl *mochi.Client, pk packets.Packet, reason string, code packets.Code) error {
	h.dropped.WithLabelValues(reason).Inc()
	if pk.FixedHeader.Qos > 0 {
		h.pending(cl, pendingAck{id: pk.PacketID, qos: pk.FixedHeader.Qos, refused: code})
	}
	return packets.ErrRejectPacket
}

// pending hands an acknowledgement to the client's acker, starting it on
// the client's first publish. From an MQTT 5 client it takes one of its
// receive quota (Receive Maximum), as mochi does for a QoS publish, until
// the acknowledgement is written; MQTT 3.1.1 has no such limit, and its
// publishers are held back by the acker's bounded queue instead.
func (h *Ingest) pending(cl *mochi.Client, p pendingAck) {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return // shutting down: no acknowledgement, the client resends
	}
	a := h.ackers[cl]
	if a == nil {
		a = &acker{h: h, cl: cl, queue: make(chan pendingAck, ackQueue)}
		h.ackers[cl] = a
		h.wg.Add(1)
		go a.run()
	}
	h.mu.Unlock()
	if a.quota() {
		cl.State.Inflight.DecreaseReceiveQuota()
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.closed {
		a.queue <- p // the acker runs until closed: this never waits forever
	}
}

// OnDisconnect ends the client's acker once it has answered what was
// pending (writes still finish; their acknowledgements find no connection).
func (h *Ingest) OnDisconnect(cl *mochi.Client, _ error, _ bool) {
	h.mu.Lock()
	a := h.ackers[cl]
	delete(h.ackers, cl)
	h.mu.Unlock()
	if a != nil {
		a.close()
	}
}

// Close stops accepting publishes and waits for every acker. Call it after
// the broker has stopped, so no client reads on.
func (h *Ingest) Close() {
	h.mu.Lock()
	h.closed = true
	ackers := h.ackers
	h.ackers = map[*mochi.Client]*acker{}
	h.mu.Unlock()
	h.cancel()
	for _, a := range ackers {
		a.close()
	}
	h.wg.Wait()
}

// pendingAck is one publish awaiting its acknowledgement: the outcome of
// its write (done), or the reason it was refused.
type pendingAck struct {
	id      uint16
	qos     byte
	done    <-chan error
	refused packets.Code
}

// acker writes one client's acknowledgements in arrival order.
type acker struct {
	h     *Ingest
	cl    *mochi.Client
	queue chan pendingAck

	mu     sync.Mutex // closing waits for a send in progress
	closed bool
}

func (a *acker) close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.closed {
		a.closed = true
		close(a.queue)
	}
}

// quota tells whether the client counts receive quota (MQTT 5).
func (a *acker) quota() bool { return a.cl.Properties.ProtocolVersion == 5 }

func (a *acker) run() {
	defer a.h.wg.Done()
	for p := range a.queue {
		code := p.refused
		if p.done != nil {
			if err := <-p.done; err != nil {
				a.h.dropped.WithLabelValues("storage").Inc()
				if !a.quota() {
					// No acknowledgement: closing makes the client send
					// the message again when it reconnects.
					a.cl.Stop(fmt.Errorf("mqtt ingest: storing a publish failed: %w", err))
					continue
				}
				code = packets.ErrUnspecifiedError
			}
		}
		a.ack(p, code)
	}
}

// ack writes a PUBACK (QoS 1) or PUBREC (QoS 2) with code, which MQTT
// 3.1.1 cannot carry: there every acknowledgement is a success.
func (a *acker) ack(p pendingAck, code packets.Code) {
	v5 := a.cl.Properties.ProtocolVersion == 5
	if !v5 {
		code = packets.CodeSuccess
	}
	pk := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Puback}, PacketID: p.id, ReasonCode: code.Code}
	if code.Code >= packets.ErrUnspecifiedError.Code {
		pk.Properties.ReasonString = code.Reason
	}
	if p.qos == 2 {
		pk.FixedHeader.Type = packets.Pubrec
		if code.Code < packets.ErrUnspecifiedError.Code {
			// The exchange goes on with PUBREL, which mochi answers from
			// the inflight entry and which returns the receive quota.
			if a.cl.State.Inflight.Set(pk) && a.h.Info != nil {
				atomic.AddInt64(&a.h.Info.Inflight, 1)
			}
			_ = a.cl.WritePacket(pk)
			return
		}
	}
	_ = a.cl.WritePacket(pk) // a closed connection: the client resends
	if a.quota() {
		a.cl.State.Inflight.IncreaseReceiveQuota()
	}
}
