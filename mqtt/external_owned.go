package mqtt

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/eclipse/paho.golang/autopaho"
	"github.com/eclipse/paho.golang/paho"
)

// In a cluster the nodes must not share the ingestion subscription:
// Mosquitto hands a shared subscription's messages out one by one, so one
// gateway's publishes of one datapoint would be stored by several nodes
// and reach its virtual datapoint out of order. Instead one node at a
// time ingests, through a session of the cluster's own
// (ExternalConfig.IngestClientID) that is not shared and outlives the
// node: the node that owns ingestion connects to it (SetIngesting), and
// when it stops or dies the broker keeps the session's subscription and
// queues what gateways publish, in order, until the next owner connects
// to the same session and takes it over. Nothing is lost, and one
// datapoint's messages are stored in the order they came, as on one node.
// The broker must keep enough queued messages for a failover
// (Mosquitto's max_queued_messages).

// ingestFilter is the owned session's subscription.
const ingestFilter = "project/+/datapoint/#"

// ownedIngest is the connection to the cluster's ingestion session, while
// this node owns it.
type ownedIngest struct {
	mu     sync.Mutex
	cm     *autopaho.ConnectionManager // nil while not ingesting
	cancel context.CancelFunc
}

// SetIngesting connects to the cluster's ingestion session (on) or
// leaves it (off), keeping the session at the broker for the next owner.
// Without ExternalConfig.IngestClientID (one node: the shared subscription
// ingests) it does nothing.
func (e *External) SetIngesting(on bool) error {
	if e.cfg.IngestClientID == "" || e.ingest == nil {
		return nil
	}
	o := &e.owned
	o.mu.Lock()
	defer o.mu.Unlock()
	switch {
	case on && o.cm == nil:
		ctx, cancel := context.WithCancel(e.ctx)
		cm, err := e.connectOwned(ctx)
		if err == nil {
			err = e.subscribeOwned(ctx, cm) // before it returns: what comes next is ingested
		}
		if err != nil {
			cancel()
			return fmt.Errorf("the cluster's ingestion session: %w", err)
		}
		o.cm, o.cancel = cm, cancel
		e.log.Info("ingesting through the cluster's session", "client_id", e.cfg.IngestClientID)
	case !on && o.cm != nil:
		o.leave()
		e.log.Info("left the cluster's ingestion session to its next owner", "client_id", e.cfg.IngestClientID)
	}
	return nil
}

// leave disconnects, keeping the session (its expiry outlasts a
// failover).
func (o *ownedIngest) leave() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = o.cm.Disconnect(ctx)
	o.cancel()
	o.cm, o.cancel = nil, nil
}

// connectOwned connects to the cluster's ingestion session and subscribes
// (again: a broker that lost its state would not have it).
func (e *External) connectOwned(ctx context.Context) (*autopaho.ConnectionManager, error) {
	u, err := url.Parse(e.cfg.URL)
	if err != nil {
		return nil, err
	}
	return autopaho.NewConnection(ctx, autopaho.ClientConfig{
		ServerUrls:                    []*url.URL{u},
		KeepAlive:                     20,
		CleanStartOnInitialConnection: false,
		SessionExpiryInterval:         sessionExpiry,
		ReconnectBackoff:              autopaho.NewExponentialBackoff(100*time.Millisecond, 5*time.Second, 250*time.Millisecond, 2),
		ConnectUsername:               e.cfg.AdminUser,
		ConnectPassword:               []byte(e.cfg.AdminPassword),
		ConnectPacketBuilder:          ingestReceiveMaximum,
		OnConnectionUp: func(cm *autopaho.ConnectionManager, _ *paho.Connack) {
			// Not on the connection's goroutine, which must go on to
			// read the SUBACK.
			e.wg.Add(1)
			go func() {
				defer e.wg.Done()
				if err := e.subscribeOwned(ctx, cm); err != nil && ctx.Err() == nil {
					e.log.Error("subscribe the cluster's ingestion session", "err", err)
				}
			}()
		},
		OnConnectError: func(err error) {
			if ctx.Err() == nil {
				e.log.Warn("connect to the cluster's ingestion session", "err", err)
			}
		},
		ClientConfig: paho.ClientConfig{
			ClientID:                   e.cfg.IngestClientID,
			EnableManualAcknowledgment: true,
			SendAcksInterval:           2 * time.Millisecond,
			OnPublishReceived: []func(paho.PublishReceived) (bool, error){func(pr paho.PublishReceived) (bool, error) {
				p := pr.Packet
				ack := func() { _ = pr.Client.Ack(p) }
				if !strings.HasPrefix(p.Topic, "project/") || (p.Properties != nil && p.Properties.User.Get(liveMarker) != "") {
					ack() // live data of some bdp node: stored already
					return true, nil
				}
				e.ingest.take(p.Topic, p.Payload, ack)
				return true, nil
			}},
		},
	})
}

// subscribeOwned waits for the connection and subscribes.
func (e *External) subscribeOwned(ctx context.Context, cm *autopaho.ConnectionManager) error {
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := cm.AwaitConnection(sctx); err != nil {
		return err
	}
	_, err := cm.Subscribe(sctx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: ingestFilter, QoS: 1}}})
	return err
}

// closeOwned leaves the session when the layer closes.
func (e *External) closeOwned() {
	o := &e.owned
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.cm != nil {
		o.leave()
	}
}
