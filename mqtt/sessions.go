package mqtt

import (
	"sync"
	"sync/atomic"

	mochi "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"
)

// Sessions knows the Account of every session of the embedded broker, by
// client id: the auth hook records it on CONNECT, other hooks (live data
// out, ingestion) look it up, and the expiry and change watchers end the
// sessions of a user whose credentials went away. Safe for concurrent use.
type Sessions struct {
	server *mochi.Server

	mu       sync.RWMutex
	byClient map[string]*session
	// version changes after every change of a session's account (put,
	// ended, revoked, rights changed): live out's fast path keeps a
	// decision made under a version until it changes.
	version atomic.Uint64
	// edge hears of edge devices connecting and going away.
	edge edgeWatchers
}

// session is one client id's session: connected, or kept for a client
// that asked for a persistent session.
type session struct {
	account Account
	hash    string        // the password hash the client logged in with; a change means rotated
	client  *mochi.Client // the connection that owns the session now
	revoked bool          // ended by the platform: its state is discarded, not kept
}

func newSessions(server *mochi.Server) *Sessions {
	return &Sessions{server: server, byClient: map[string]*session{}}
}

// Account returns the account of the session of a client id.
func (s *Sessions) Account(clientID string) (Account, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if e, ok := s.byClient[clientID]; ok && !e.revoked {
		return e.account, true
	}
	return Account{}, false
}

// accountOf returns the account of a connection, which must own its
// client id's session: a connection that was taken over or revoked has
// none.
func (s *Sessions) accountOf(cl *mochi.Client) (Account, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if e, ok := s.byClient[cl.ID]; ok && e.client == cl && !e.revoked {
		return e.account, true
	}
	return Account{}, false
}

// Len is the number of sessions, connected or kept.
func (s *Sessions) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.byClient)
}

// holder returns the account holding a client id's session, if a
// connection of the broker still owns it.
func (s *Sessions) holder(clientID string) (Account, bool) {
	s.mu.RLock()
	e, ok := s.byClient[clientID]
	s.mu.RUnlock()
	if !ok || e.revoked {
		return Account{}, false
	}
	if cur, ok := s.server.Clients.Get(clientID); !ok || cur != e.client {
		return Account{}, false // a connection that never completed
	}
	return e.account, true
}

// put records the account of a connection that has authenticated.
func (s *Sessions) put(cl *mochi.Client, a Account, hash string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.byClient[cl.ID] = &session{account: a, hash: hash, client: cl}
	s.version.Add(1)
}

// ended is called when a connection ends (expire: its session ends with
// it) or mochi expires a kept session. A revoked session is discarded
// whole: subscriptions and messages in flight.
func (s *Sessions) ended(cl *mochi.Client, expire bool) {
	s.mu.Lock()
	e, ok := s.byClient[cl.ID]
	if !ok || e.client != cl || !expire && !e.revoked {
		s.mu.Unlock()
		return
	}
	delete(s.byClient, cl.ID)
	s.version.Add(1)
	s.mu.Unlock()
	if e.revoked {
		s.discard(cl)
	}
}

// discard removes a session's state from mochi, as mochi does for a clean
// session that ends.
func (s *Sessions) discard(cl *mochi.Client) {
	s.server.UnsubscribeClient(cl)
	cl.ClearInflights()
	if cur, ok := s.server.Clients.Get(cl.ID); ok && cur == cl {
		s.server.Clients.Delete(cl.ID)
	}
}

// Disconnect ends every session of an MQTT user (the mqtt_users id) at
// once, telling MQTT 5 clients 0x98 (administrative action), and
// discards their state. It returns how many sessions it ended.
func (s *Sessions) Disconnect(userID int64) int {
	return s.disconnect(userID, packets.Code{Code: 0x98, Reason: "administrative action"})
}

// disconnect ends the sessions of a user with a DISCONNECT reason code.
func (s *Sessions) disconnect(userID int64, code packets.Code) int {
	var connected, kept []*mochi.Client
	s.mu.Lock()
	for id, e := range s.byClient {
		if e.account.ID != userID || e.revoked {
			continue
		}
		e.revoked = true
		if e.client.Closed() {
			// Kept for a client that is away: nothing will end it but us.
			delete(s.byClient, id)
			kept = append(kept, e.client)
		} else {
			connected = append(connected, e.client) // its OnDisconnect discards it
		}
	}
	s.version.Add(1)
	s.mu.Unlock()
	for _, cl := range connected {
		_ = s.server.DisconnectClient(cl, code) // returns code itself for a failure code
	}
	for _, cl := range kept {
		s.discard(cl)
	}
	return len(connected) + len(kept)
}

// users returns the distinct MQTT users with a session, with their
// project (the store looks a user up by project).
func (s *Sessions) users() map[int64]int64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := map[int64]int64{}
	for _, e := range s.byClient {
		if !e.revoked {
			out[e.account.ID] = e.account.ProjectID
		}
	}
	return out
}

// check applies a change of a user to its sessions: revoke reports
// whether a session must end (with which code); otherwise update adjusts
// its account in place. It returns how many sessions it ended.
func (s *Sessions) check(userID int64, verdict func(a Account, hash string) (end bool, code packets.Code, updated Account)) int {
	var end []packets.Code
	s.mu.Lock()
	for _, e := range s.byClient {
		if e.account.ID != userID || e.revoked {
			continue
		}
		stop, code, updated := verdict(e.account, e.hash)
		if stop {
			end = append(end, code)
		} else {
			e.account = updated
		}
	}
	s.version.Add(1)
	s.mu.Unlock()
	if len(end) == 0 {
		return 0
	}
	return s.disconnect(userID, end[0])
}
