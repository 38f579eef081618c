package mqtt

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"log/slog"
	"net/netip"
	"strings"
	"sync/atomic"
	"time"

	mochi "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/openbdp/bdp/auth"
	"github.com/openbdp/bdp/fault"
	"github.com/openbdp/bdp/store"
)

// CONNACK reason codes of refused CONNECTs (MQTT 5; an MQTT 3.1.1 client
// gets the 3.1.1 return code beside each).
var (
	codeBadCredentials = connectCode{0x86, 0x04, "bad username or password"}
	codeExpired        = connectCode{0x87, 0x05, "not authorized: the credentials have expired"}
	codeNotAuthorized  = connectCode{0x87, 0x05, "not authorized"}
	codeThrottled      = connectCode{0x9F, 0x03, "connection rate exceeded: too many failed logins, retry later"}
	codeClientID       = connectCode{0x85, 0x02, "client identifier not valid"}
	codeUnavailable    = connectCode{0x88, 0x03, "server unavailable"}
)

type connectCode struct {
	v5, v3 byte
	reason string
}

// codeExpiredSession ends the sessions of an expired user (DISCONNECT).
var codeExpiredSession = packets.Code{Code: 0x87, Reason: "not authorized: the credentials have expired"}

// maxUsernameLen is the longest username the API stores (bytes).
const maxUsernameLen = 64

// authTimeout bounds the database lookups and the hash of one CONNECT.
const authTimeout = 10 * time.Second

// authHook decides who may connect and what each client may subscribe
// and publish to (mochi calls it on the client's own goroutine).
type authHook struct {
	mochi.HookBase
	b *Embedded
}

func (h *authHook) ID() string { return "bdp-auth" }

// Provides is asked by mochi for every hook on every call, deliveries
// included: a switch, not a search.
func (h *authHook) Provides(b byte) bool {
	switch b {
	case mochi.OnConnect, mochi.OnConnectAuthenticate, mochi.OnACLCheck, mochi.OnSubscribed,
		mochi.OnSessionEstablished, mochi.OnDisconnect, mochi.OnClientExpired:
		return true
	}
	return false
}

// OnConnect authenticates the client and records its account; a refusal
// is answered here with its own reason code (mochi's
// OnConnectAuthenticate can only say 0x86).
func (h *authHook) OnConnect(cl *mochi.Client, pk packets.Packet) error {
	b := h.b
	if cl.ID == mochi.InlineClientId || cl.ID == b.cfg.Name {
		return h.refuse(cl, refusedReserved, codeClientID)
	}
	ctx, cancel := context.WithTimeout(context.Background(), authTimeout)
	defer cancel()
	a, hash, reason := b.authenticate(ctx, string(pk.Connect.Username), string(pk.Connect.Password), cl.Net.Remote)
	if reason != "" {
		code := map[string]connectCode{refusedBadPassword: codeBadCredentials, refusedUnknownUser: codeBadCredentials,
			refusedExpired: codeExpired, refusedThrottled: codeThrottled, refusedUnavailable: codeUnavailable}[reason]
		return h.refuse(cl, reason, code)
	}
	// A will is published by the broker after the client is gone, past
	// the ACL and past ingestion: only an edge device may leave one, on
	// its own tree.
	if pk.Connect.WillFlag && (!a.Edge || !a.MayPublish(pk.Connect.WillTopic)) {
		return h.refuse(cl, refusedWill, codeNotAuthorized)
	}
	// Taking over a session inherits its subscriptions and messages in
	// flight, which must not pass to another user.
	if holder, ok := b.sessions.holder(cl.ID); ok && holder.ID != a.ID {
		return h.refuse(cl, refusedClientID, codeClientID)
	}
	b.sessions.put(cl, a, hash)
	return nil
}

// refuse answers a CONNECT with code and ends the connection (the error
// makes mochi stop it without a CONNACK of its own).
func (h *authHook) refuse(cl *mochi.Client, reason string, code connectCode) error {
	h.b.metrics.refused.WithLabelValues(reason).Inc()
	ack := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Connack}, ReasonCode: code.v5}
	if cl.Properties.ProtocolVersion < 5 {
		ack.ReasonCode = code.v3
	} else {
		ack.Properties.ReasonString = code.reason
	}
	_ = cl.WritePacket(ack)
	return packets.Code{Code: code.v5, Reason: code.reason}
}

// OnConnectAuthenticate admits the connections OnConnect authenticated.
func (h *authHook) OnConnectAuthenticate(cl *mochi.Client, _ packets.Packet) bool {
	_, ok := h.b.sessions.accountOf(cl)
	return ok
}

// OnACLCheck allows a subscription inside the account's topic filter and
// a publish with write rights inside it; mochi also asks before every
// message it delivers, so a session expired or revoked receives nothing
// more even before it is closed. The platform's own client may do
// anything.
func (h *authHook) OnACLCheck(cl *mochi.Client, topic string, write bool) bool {
	if cl.Net.Inline {
		return true
	}
	a, ok := h.b.sessions.accountOf(cl)
	allowed := ok && !a.Expired(h.b.cfg.Clock.Now())
	if write {
		allowed = allowed && a.MayPublish(topic)
		if !allowed {
			h.b.metrics.aclRefused.WithLabelValues("publish").Inc()
		}
		return allowed
	}
	// The Gate hides from an MQTT user the datapoints its creator may not
	// read: mochi asks here before each delivery, and OnSelectSubscribers
	// is called for shared subscriptions only.
	return allowed && a.MaySubscribe(topic) && (h.b.deps.Gate == nil || h.b.deps.Gate.MayRead(a, topic))
}

// OnSubscribed counts the filters of a SUBSCRIBE that were refused (here,
// not in OnACLCheck, which mochi asks for every delivery too).
func (h *authHook) OnSubscribed(_ *mochi.Client, _ packets.Packet, reasonCodes []byte) {
	for _, c := range reasonCodes {
		if c >= packets.ErrUnspecifiedError.Code {
			h.b.metrics.aclRefused.WithLabelValues("subscribe").Inc()
		}
	}
}

// OnSessionEstablished drops subscriptions an inherited session holds
// outside the account (a session kept from before a change of rights),
// and tells the edge watchers of an edge device's connection.
func (h *authHook) OnSessionEstablished(cl *mochi.Client, _ packets.Packet) {
	a, ok := h.b.sessions.accountOf(cl)
	if !ok {
		return
	}
	if a.Edge {
		defer h.b.sessions.edge.tell(a.ProjectID, true)
	}
	for filter := range cl.State.Subscriptions.GetAll() {
		if !a.MaySubscribe(filter) {
			cl.State.Subscriptions.Delete(filter)
			if h.b.server.Topics.Unsubscribe(filter, cl.ID) {
				atomic.AddInt64(&h.b.server.Info.Subscriptions, -1)
			}
		}
	}
}

func (h *authHook) OnDisconnect(cl *mochi.Client, _ error, expire bool) {
	h.b.sessions.edgeDisconnected(cl)
	h.b.sessions.ended(cl, expire)
}

func (h *authHook) OnClientExpired(cl *mochi.Client) { h.b.sessions.ended(cl, true) }

// throttleKey is the throttle's account key of an MQTT username: MQTT
// users and platform users (emails) are counted apart; the per-address
// count is shared, so a guesser gains nothing by alternating.
func throttleKey(username string) string { return "mqtt\x00" + username }

// authenticate checks a CONNECT's credentials and returns the account
// and the password hash it was checked against, or the reason of the
// refusal. A throttled username or address is refused before anything is
// looked at, even with the right password; recently verified credentials
// skip the slow hash.
func (e *Embedded) authenticate(ctx context.Context, username, password, remote string) (Account, string, string) {
	addr := remoteAddr(remote)
	key := throttleKey(username)
	if err := e.deps.Throttle.Check(key, addr); err != nil {
		return Account{}, "", refusedThrottled
	}
	begun := e.creds.Begin()
	var u store.MQTTUser
	err := fault.NotFoundf("MQTT user")
	// No stored username is longer or holds NUL (PostgreSQL text cannot):
	// such a one is unknown without asking the database, which would
	// fail, and a failure would neither cost a hash nor count.
	if len(username) <= maxUsernameLen && !strings.ContainsRune(username, 0) {
		u, err = e.deps.Store.MQTTUserByUsername(ctx, username)
	}
	var hash, absent string
	switch {
	case fault.Is(err, fault.NotFound):
		// An expired user was deleted (or is about to be): the right
		// password is told so, for a while.
		if gone, ok := e.expired.get(username, e.cfg.Clock.Now()); ok {
			u, hash, absent = gone, gone.PasswordHash, refusedExpired
		} else {
			hash, absent = e.dummyHash, refusedUnknownUser
		}
	case err != nil:
		e.log.Warn("mqtt connect: look up user", slog.Any("error", err))
		return Account{}, "", refusedUnavailable
	default:
		hash = u.PasswordHash
		if id, ok := e.creds.Get(username, password); ok && id == u.ID {
			return e.admit(u)
		}
	}
	attempt, err := e.deps.Throttle.Begin(ctx, key, addr)
	if err != nil {
		var th *auth.Throttled
		if errors.As(err, &th) {
			return Account{}, "", refusedThrottled
		}
		return Account{}, "", refusedUnavailable
	}
	e.metrics.hashes.Inc()
	match, err := e.deps.Hasher.Verify(ctx, password, hash)
	if err != nil {
		attempt.Cancel()
		e.log.Warn("mqtt connect: verify password", slog.String("username", fault.Clip(username)), slog.Any("error", err))
		return Account{}, "", refusedUnavailable
	}
	attempt.Done(match && absent != refusedUnknownUser)
	switch {
	case absent == refusedUnknownUser:
		return Account{}, "", refusedUnknownUser
	case !match:
		return Account{}, "", refusedBadPassword
	case absent != "":
		return Account{}, "", absent
	}
	e.creds.Put(username, password, u.ID, begun)
	return e.admit(u)
}

// admit turns a verified user into its account, unless it has expired
// (by the broker's clock) before the expiry timer removed it.
func (e *Embedded) admit(u store.MQTTUser) (Account, string, string) {
	a := accountOf(u)
	if a.Expired(e.cfg.Clock.Now()) {
		return Account{}, "", refusedExpired
	}
	return a, u.PasswordHash, ""
}

func accountOf(u store.MQTTUser) Account {
	a := Account{ID: u.ID, Username: u.Username, ProjectID: u.ProjectID, CreatedBy: u.CreatedBy,
		Write: u.Rights == store.MQTTWrite, Edge: u.Edge}
	if u.ValidUntil != nil {
		a.ValidUntil = *u.ValidUntil
	}
	return a
}

// remoteAddr is the address the throttle counts a client against; an
// unparsable one is one key of its own.
func remoteAddr(remote string) netip.Addr {
	if ap, err := netip.ParseAddrPort(remote); err == nil {
		return ap.Addr()
	}
	addr, _ := netip.ParseAddr(remote)
	return addr
}

func randomPassword() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
