// Package mqtt is the platform's one MQTT layer: the embedded broker (or
// the connection to an external one), who may connect and to which
// topics, live data out to subscribers and observations in from
// publishers. Later parts (the edge connection) publish and subscribe
// through it.
package mqtt

import (
	"strconv"
	"strings"
	"time"
)

// Account is what a connected client may do: an MQTT user of a project
// (api.md 2.8), a project's edge device (decisions.md 2), or the
// platform's own client.
type Account struct {
	ID         int64  // the mqtt_users row
	Username   string // as the client logged in
	ProjectID  int64
	CreatedBy  int64     // the user whose datapoint access bounds this account (0: edge device)
	Write      bool      // write rights: publish as well as subscribe
	Edge       bool      // edge device credentials: edge/{project_id}/# only
	ValidUntil time.Time // zero: no expiry
}

// TopicPrefix is the start of every topic the account may use: its
// project's live data, or its project's edge tree.
func (a Account) TopicPrefix() string {
	tree := "project/"
	if a.Edge {
		tree = "edge/"
	}
	return tree + strconv.FormatInt(a.ProjectID, 10) + "/"
}

// TopicFilter is the one filter an account is granted (api.md 2.8: topic
// filters end with a multi-level wildcard).
func (a Account) TopicFilter() string { return a.TopicPrefix() + "#" }

// MaySubscribe tells whether filter lies inside the account's tree. A
// wildcard may appear only after the prefix, so no filter reaches into
// another project.
func (a Account) MaySubscribe(filter string) bool {
	rest, ok := strings.CutPrefix(filter, a.TopicPrefix())
	return ok && rest != "" || filter == a.TopicPrefix()[:len(a.TopicPrefix())-1]
}

// MayPublish tells whether the account may publish to topic: write rights
// (an edge device always has them on its own tree) and a topic inside the
// tree, without wildcards.
func (a Account) MayPublish(topic string) bool {
	if !a.Write && !a.Edge || strings.ContainsAny(topic, "+#") {
		return false
	}
	rest, ok := strings.CutPrefix(topic, a.TopicPrefix())
	return ok && rest != ""
}

// Expired tells whether the account's validity has ended at now.
func (a Account) Expired(now time.Time) bool {
	return !a.ValidUntil.IsZero() && !now.Before(a.ValidUntil)
}
