package mqtt

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/openbdp/bdp/codec"
	"github.com/openbdp/bdp/fault"
	"github.com/openbdp/bdp/rbac"
	"github.com/openbdp/bdp/store"
)

// The plugin's roles bdp makes. Each MQTT user has a role of its own
// (userRolePrefix + its id) with what depends on the user alone: subscribe
// on its tree, or for edge credentials everything on edge/{p}/#. What its
// creator reaches is in roles shared by every MQTT user of one creator in
// one project (reachRolePrefix + creator-project-r|w): receive on each
// datapoint topic the creator may read, send on each it may write (or one
// wildcard each under a company role). A creator's second MQTT user costs
// no ACL, which matters as the plugin rewrites its whole JSON file after
// every command.
const (
	userRolePrefix  = "bdp-mqttuser-"
	reachRolePrefix = "bdp-reach-"
)

func roleOf(id int64) string { return userRolePrefix + strconv.FormatInt(id, 10) }

func reachRole(creator, projectID int64, write bool) string {
	rw := "r"
	if write {
		rw = "w"
	}
	return reachRolePrefix + strconv.FormatInt(creator, 10) + "-" + strconv.FormatInt(projectID, 10) + "-" + rw
}

// rolesOf lists the roles a user's client holds.
func rolesOf(u store.MQTTUser) []string {
	roles := []string{roleOf(u.ID)}
	if !u.Edge && u.CreatedBy != 0 {
		roles = append(roles, reachRole(u.CreatedBy, u.ProjectID, false))
		if u.Rights == store.MQTTWrite {
			roles = append(roles, reachRole(u.CreatedBy, u.ProjectID, true))
		}
	}
	return roles
}

func managedRole(name string) bool {
	return strings.HasPrefix(name, userRolePrefix) || strings.HasPrefix(name, reachRolePrefix)
}

// syncRoles makes the roles of users hold exactly the ACLs they should
// now and returns their names; all is true when users are all MQTT users.
// clientRoles, when not nil, holds the roles each client (by username)
// has, and the clients' memberships are corrected too. The caller holds
// syncMu.
func (x *externalUsers) syncRoles(ctx context.Context, users []store.MQTTUser, all bool, clientRoles map[string][]string) (map[string]bool, error) {
	want, topics, err := x.wantedRoles(ctx, users)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(want))
	for r := range want {
		names = append(names, r)
	}
	slices.Sort(names)
	var cmds []DynsecCommand
	for _, r := range names {
		cmds = append(cmds, dsCreateRole(r))
	}
	if err := x.runIgnoring(ctx, cmds, dynsecRoleExists); err != nil {
		return nil, err
	}
	cmds = cmds[:0]
	for _, r := range names {
		cmds = append(cmds, dsGetRole(r))
	}
	answers, err := x.e.ds.Do(ctx, cmds...)
	if err != nil {
		return nil, err
	}
	var changes []DynsecCommand
	for i, r := range names {
		if err := answers[i].Err(); err != nil {
			return nil, err
		}
		var got struct {
			Role struct {
				ACLs []dynsecACL `json:"acls"`
			} `json:"role"`
		}
		if err := json.Unmarshal(answers[i].Data, &got); err != nil {
			return nil, fmt.Errorf("read role %s: %w", r, err)
		}
		has := map[dynsecACL]bool{}
		for _, a := range got.Role.ACLs {
			has[a] = true
			if !want[r][a] {
				changes = append(changes, dsRemoveRoleACL(r, a))
			}
		}
		for a := range want[r] {
			if !has[a] {
				changes = append(changes, dsAddRoleACL(r, a))
			}
		}
	}
	if clientRoles != nil {
		changes = append(changes, membershipChanges(users, clientRoles)...)
	}
	if err := x.runIgnoring(ctx, changes, dynsecACLNotFound, dynsecACLExists, dynsecClientNotFound); err != nil {
		return nil, err
	}
	x.remember(users, topics, all)
	wanted := make(map[string]bool, len(names))
	for _, r := range names {
		wanted[r] = true
	}
	return wanted, nil
}

// membershipChanges gives and takes roles so that each user's client
// holds rolesOf(u): a change of rights or of creator changes them. A
// client the plugin lacks is left alone (it is made with its password).
func membershipChanges(users []store.MQTTUser, clientRoles map[string][]string) []DynsecCommand {
	var cmds []DynsecCommand
	for _, u := range users {
		has, ok := clientRoles[u.Username]
		if !ok {
			continue
		}
		want := rolesOf(u)
		for _, r := range want {
			if !slices.Contains(has, r) {
				cmds = append(cmds, DynsecCommand{"command": "addClientRole", "username": u.Username, "rolename": r})
			}
		}
		for _, r := range has {
			if managedRole(r) && !slices.Contains(want, r) {
				cmds = append(cmds, DynsecCommand{"command": "removeClientRole", "username": u.Username, "rolename": r})
			}
		}
	}
	return cmds
}

// remember notes the projects with MQTT users and their datapoint topics,
// so that live data on a topic not among them leads to a sync.
func (x *externalUsers) remember(users []store.MQTTUser, topics []string, all bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if all {
		clear(x.projects)
	}
	for _, u := range users {
		x.projects[u.ProjectID] = true
	}
	for _, t := range topics {
		x.topics[t] = struct{}{}
	}
}

// wantedRoles computes the ACLs of the users' roles from their creators'
// access now, and returns the datapoint topics of the users' projects. It
// reads roles and datapoints fresh from the store and decides with
// rbac.DatapointAccess, the one function the Gate decides with too,
// rather than through the Gate's cache: the Gate drops that cache on the
// same notices that start a sync, in no order with it, so a sync reading
// through it could list what a creator could reach before the change.
func (x *externalUsers) wantedRoles(ctx context.Context, users []store.MQTTUser) (map[string]map[dynsecACL]bool, []string, error) {
	st := x.e.cfg.Store
	want := map[string]map[dynsecACL]bool{}
	datapoints := map[int64][]rbac.Datapoint{}
	var topics []string
	needWrite := map[string]bool{} // a write role only for creators with write users
	for _, u := range users {
		if !u.Edge && u.CreatedBy != 0 && u.Rights == store.MQTTWrite {
			needWrite[reachRole(u.CreatedBy, u.ProjectID, true)] = true
		}
	}
	for _, u := range users {
		own := map[dynsecACL]bool{}
		want[roleOf(u.ID)] = own
		tree := Account{ProjectID: u.ProjectID, Edge: u.Edge}.TopicFilter()
		own[dynsecACL{"subscribePattern", tree}] = true
		if u.Edge {
			own[dynsecACL{"publishClientSend", tree}] = true
			own[dynsecACL{"publishClientReceive", tree}] = true
			continue
		}
		if u.CreatedBy == 0 {
			continue // the creator is gone: nothing to receive
		}
		read, write := reachRole(u.CreatedBy, u.ProjectID, false), reachRole(u.CreatedBy, u.ProjectID, true)
		if _, done := want[read]; done {
			continue // another user of the same creator and project
		}
		want[read] = map[dynsecACL]bool{}
		sends := map[dynsecACL]bool{} // not wanted unless needWrite
		if needWrite[write] {
			want[write] = sends
		}
		pr, err := st.Principal(ctx, u.CreatedBy)
		if fault.Is(err, fault.NotFound) {
			continue // the creator is being deleted: nothing
		}
		if err != nil {
			return nil, nil, fmt.Errorf("roles of user %d: %w", u.CreatedBy, err)
		}
		p := rbac.Compute(x.catalog, pr)
		if p.HasCompanyRole() && p.CompanyID == u.CompanyID {
			all := codec.ProjectTopicPrefix(u.ProjectID) + "datapoint/#"
			want[read][dynsecACL{"publishClientReceive", all}] = true
			sends[dynsecACL{"publishClientSend", all}] = true
			continue
		}
		dps, ok := datapoints[u.ProjectID]
		if !ok {
			list, err := st.ProjectDatapoints(ctx, u.ProjectID, nil)
			if err != nil {
				return nil, nil, fmt.Errorf("datapoints of project %d: %w", u.ProjectID, err)
			}
			for _, d := range list {
				dps = append(dps, rbac.Datapoint{ID: d.ID, Tags: d.Tags})
				topics = append(topics, codec.DatapointTopic(u.ProjectID, d.ID))
			}
			datapoints[u.ProjectID] = dps
		}
		for _, d := range dps {
			a := p.DatapointAccess(u.ProjectID, d)
			topic := codec.DatapointTopic(u.ProjectID, d.ID)
			if a.Read {
				want[read][dynsecACL{"publishClientReceive", topic}] = true
			}
			if a.Write && needWrite[write] {
				sends[dynsecACL{"publishClientSend", topic}] = true
			}
		}
	}
	return want, topics, nil
}
