package mqtt

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/openbdp/bdp/clock"
	"github.com/openbdp/bdp/codec"
	"github.com/openbdp/bdp/fault"
	"github.com/openbdp/bdp/rbac"
	"github.com/openbdp/bdp/store"
)

// externalUsers keeps the plugin's clients and roles in line with
// mqtt_users. Each MQTT user is a client (its username, its password, the
// textdescription dynsecManaged) with roles whose ACLs are what the user
// may do now (dynsec_roles.go):
//   - subscribePattern on its tree (project/{p}/# or edge/{p}/#);
//   - publishClientReceive on each datapoint topic its creator may read
//     (TagAuths, rbac.DatapointAccess), or on project/{p}/datapoint/# when
//     the creator holds a company role of the project's company;
//   - publishClientSend, for a write user, likewise on what the creator
//     may write;
//   - edge credentials: all three on edge/{p}/#.
//
// The plugin's default access denies everything else, receiving included.
//
// Passwords: bdp keeps only an argon2id hash, and the plugin hashes a
// password itself, so the plaintext must reach it when the API has it:
// SetPassword, called by the HTTP layer right after storing a new or
// changed password (and before answering). It is never written anywhere.
// A user whose client is missing from the plugin (the broker lost its
// state) cannot log in until its password is set again.
//
// Everything else follows notices: a changed or deleted MQTT user
// (bdp_mqtt_users), a change of users or roles (bdp_credentials, which
// may change what a creator reaches), a datapoint seen for the first
// time in live data, and every reconnection; each leads to a sync.
type externalUsers struct {
	e       *External
	catalog *rbac.Catalog
	kick    chan struct{} // capacity 1: a full sync is due
	// syncMu is held by every change of clients and roles: syncs computed
	// from different moments could otherwise undo each other, and a full
	// sync could take a role just made for a new user for a stale one.
	syncMu sync.Mutex
	rearm  chan struct{} // capacity 1: the next expiry may have moved

	mu       sync.Mutex
	topics   map[string]struct{} // datapoint topics known to the last sync
	projects map[int64]bool      // projects with MQTT users at the last sync
}

func newExternalUsers(e *External) *externalUsers {
	return &externalUsers{e: e, catalog: rbac.NewCatalog(nil), kick: make(chan struct{}, 1),
		rearm: make(chan struct{}, 1), topics: map[string]struct{}{}, projects: map[int64]bool{}}
}

// start makes the first full sync and starts following changes.
func (x *externalUsers) start(ctx context.Context) error {
	if err := x.syncAll(ctx, true); err != nil {
		return fmt.Errorf("external MQTT broker: sync MQTT users: %w", err)
	}
	e := x.e
	e.wg.Add(4)
	go func() { defer e.wg.Done(); x.syncLoop() }()
	go func() { defer e.wg.Done(); x.expiryLoop() }()
	go func() {
		defer e.wg.Done()
		e.cfg.Store.ListenMQTTUsersChanged(e.ctx, func(int64) { x.resync(); x.signal(x.rearm) })
	}()
	go func() {
		defer e.wg.Done()
		e.cfg.Store.ListenCredentialsChanged(e.ctx, func(store.AccessChange) { x.resync() })
	}()
	return nil
}

func (x *externalUsers) signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// resync asks for a full sync; many asks while one runs make one more.
func (x *externalUsers) resync() { x.signal(x.kick) }

// sawTopic notices a datapoint that may be new, before its first live
// data goes out: when its project has MQTT users their roles are brought
// up to date first, so that those who may read it receive that data too.
func (x *externalUsers) sawTopic(ctx context.Context, topic string) {
	x.mu.Lock()
	_, known := x.topics[topic]
	if !known {
		x.topics[topic] = struct{}{}
	}
	x.mu.Unlock()
	if known {
		return
	}
	pid, _, err := codec.ParseDatapointTopic(topic)
	if err != nil {
		return
	}
	x.mu.Lock()
	has := x.projects[pid]
	x.mu.Unlock()
	if !has {
		return
	}
	x.syncMu.Lock()
	users, err := x.e.cfg.Store.MQTTUsers(ctx, pid)
	if err == nil {
		_, err = x.syncRoles(ctx, users, false, nil)
	}
	x.syncMu.Unlock()
	if err != nil && x.e.ctx.Err() == nil {
		x.e.log.Warn("list a new datapoint in the roles of its project's MQTT users; syncing all", "topic", topic, "err", err)
		x.resync()
	}
}

func (x *externalUsers) syncLoop() {
	for {
		select {
		case <-x.e.ctx.Done():
			return
		case <-x.kick:
		}
		ctx, cancel := context.WithTimeout(x.e.ctx, time.Minute)
		err := x.syncAll(ctx, false)
		cancel()
		if err != nil && x.e.ctx.Err() == nil {
			x.e.log.Error("sync MQTT users to the external broker; retrying in 1 s", "err", err)
			// The retry waits here, not on a timer of its own that would
			// outlive Close: asks meanwhile make one more sync.
			select {
			case <-x.e.ctx.Done():
				return
			case <-time.After(time.Second):
			}
			x.resync()
		}
	}
}

// syncAll brings every client and role bdp manages in line with
// mqtt_users. The plugin's clients are listed before the users are read,
// so a user created meanwhile (its row committed before its client is
// made) is never taken for a stale client.
func (x *externalUsers) syncAll(ctx context.Context, first bool) error {
	x.syncMu.Lock()
	defer x.syncMu.Unlock()
	ds := x.e.ds
	answers, err := ds.Do(ctx, dsSetDefaultACLAccess(), dsListClients(), dsListRoles())
	if err != nil {
		return err
	}
	for _, a := range answers {
		if err := a.Err(); err != nil {
			return err
		}
	}
	var clients struct {
		Clients []struct {
			Username        string `json:"username"`
			TextDescription string `json:"textdescription"`
			Roles           []struct {
				Name string `json:"rolename"`
			} `json:"roles"`
		} `json:"clients"`
	}
	var roles struct {
		Roles []string `json:"roles"`
	}
	if err := json.Unmarshal(answers[1].Data, &clients); err != nil {
		return fmt.Errorf("read the plugin's clients: %w", err)
	}
	if err := json.Unmarshal(answers[2].Data, &roles); err != nil {
		return fmt.Errorf("read the plugin's roles: %w", err)
	}
	users, err := x.e.cfg.Store.AllMQTTUsers(ctx)
	if err != nil {
		return err
	}
	byName := map[string]bool{}
	for _, u := range users {
		byName[u.Username] = true
	}
	var stale []DynsecCommand
	clientRoles := map[string][]string{}
	for _, c := range clients.Clients {
		for _, r := range c.Roles {
			clientRoles[c.Username] = append(clientRoles[c.Username], r.Name)
		}
		if _, ok := clientRoles[c.Username]; !ok {
			clientRoles[c.Username] = []string{}
		}
		if c.TextDescription == dynsecManaged && !byName[c.Username] {
			stale = append(stale, dsDeleteClient(c.Username)) // disconnects it
		}
	}
	if err := x.runIgnoring(ctx, stale, dynsecClientNotFound); err != nil {
		return err
	}
	for _, u := range users {
		// Only at start: later a user's notice may come before its client.
		if _, present := clientRoles[u.Username]; first && !present {
			x.e.log.Warn("MQTT user has no client at the external broker (its state was lost?); it can log in once its password is set again",
				"mqtt_user", u.ID, "username", u.Username)
		}
	}
	wanted, err := x.syncRoles(ctx, users, true, clientRoles)
	if err != nil {
		return err
	}
	stale = stale[:0]
	for _, r := range roles.Roles {
		if managedRole(r) && !wanted[r] {
			stale = append(stale, dsDeleteRole(r))
		}
	}
	return x.runIgnoring(ctx, stale, dynsecRoleNotFound)
}

// runIgnoring runs commands, taking the refusals named as success.
func (x *externalUsers) runIgnoring(ctx context.Context, cmds []DynsecCommand, fine ...string) error {
	answers, err := x.e.ds.Do(ctx, cmds...)
	if err != nil {
		return err
	}
	for _, a := range answers {
		if err := a.Err(); err != nil && !fineError(err, fine) {
			return err
		}
	}
	return nil
}

func fineError(err error, fine []string) bool {
	for _, f := range fine {
		if dynsecIs(err, f) {
			return true
		}
	}
	return false
}

// SetPassword hands a new or changed password of an MQTT user to the
// broker: the client is made anew with it (deleting it first disconnects
// every session of the old password) and its role brought up to date.
// The HTTP layer calls it after storing the password and before
// answering, so that the answer means the password works.
func (e *External) SetPassword(ctx context.Context, u store.MQTTUser, password string) error {
	x := e.users
	x.syncMu.Lock()
	defer x.syncMu.Unlock()
	// The roles first, filled, so that the client can do what it may from
	// its first CONNECT on.
	_, err := x.syncRoles(ctx, []store.MQTTUser{u}, false, nil)
	if err == nil {
		err = x.runIgnoring(ctx, []DynsecCommand{dsDeleteClient(u.Username)}, dynsecClientNotFound)
	}
	if err == nil {
		err = e.ds.Run(ctx, dsCreateClient(u.Username, password, "bdp MQTT user "+strconv.FormatInt(u.ID, 10), rolesOf(u)))
	}
	if err != nil {
		return fault.Wrap(fault.Unavailable, err, "the external MQTT broker did not take the password")
	}
	return nil
}

// expiryLoop removes each MQTT user when its validity ends (one timer for
// the next expiry) and deletes its client, which disconnects it.
func (x *externalUsers) expiryLoop() {
	e := x.e
	for {
		wait := time.Hour
		next, ok, err := e.cfg.Store.NextMQTTUserExpiry(e.ctx)
		switch {
		case err != nil:
			if e.ctx.Err() != nil {
				return
			}
			e.log.Warn("next MQTT user expiry", "err", err)
			wait = time.Second
		case ok:
			wait = max(next.Sub(e.cfg.Clock.Now()), 0)
		}
		timer := clock.NewTimer(e.cfg.Clock, wait)
		select {
		case <-e.ctx.Done():
			timer.Stop()
			return
		case <-x.rearm:
			timer.Stop()
			continue
		case <-timer.C:
		}
		expired, err := e.cfg.Store.DeleteExpiredMQTTUsers(e.ctx, e.cfg.Clock.Now())
		if err != nil {
			continue
		}
		var cmds []DynsecCommand
		for _, u := range expired {
			cmds = append(cmds, dsDeleteClient(u.Username), dsDeleteRole(roleOf(u.ID)))
		}
		ctx, cancel := context.WithTimeout(e.ctx, 10*time.Second)
		if err := x.runIgnoring(ctx, cmds, dynsecClientNotFound, dynsecRoleNotFound); err != nil && e.ctx.Err() == nil {
			e.log.Error("delete expired MQTT users at the external broker", "err", err)
			x.resync()
		}
		cancel()
	}
}
