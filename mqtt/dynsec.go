package mqtt

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
)

// Mosquitto's dynamic-security plugin is administered by publishing JSON
// commands to its control topic; it answers every message with one
// message on the response topic that holds one answer per command, in
// order, each with the command's correlationData.
const (
	dynsecTopic         = "$CONTROL/dynamic-security/v1"
	dynsecResponseTopic = dynsecTopic + "/response"
	// dynsecBatch bounds the commands of one control message, so that
	// one answer stays small and a failing message costs little.
	dynsecBatch = 200
)

// DynsecCommand is one command of the plugin: "command" names it, the
// other fields are its arguments (mosquitto.org/documentation/dynamic-security).
type DynsecCommand map[string]any

// DynsecAnswer is the plugin's answer to one command.
type DynsecAnswer struct {
	Command string          `json:"command"`
	Error   string          `json:"error"` // empty: done
	Data    json.RawMessage `json:"data"`  // list and get commands
	Corr    string          `json:"correlationData"`
}

// Err is the answer's error, or nil.
func (a DynsecAnswer) Err() error {
	if a.Error == "" {
		return nil
	}
	return &DynsecError{Command: a.Command, Message: a.Error}
}

// DynsecError is a command the plugin refused.
type DynsecError struct{ Command, Message string }

func (e *DynsecError) Error() string { return "mosquitto dynsec " + e.Command + ": " + e.Message }

// The plugin's error texts that callers treat as "already so".
const (
	dynsecClientExists   = "Client already exists"
	dynsecClientNotFound = "Client not found"
	dynsecRoleExists     = "Role already exists"
	dynsecRoleNotFound   = "Role not found"
	dynsecACLNotFound    = "ACL not found"
	dynsecACLExists      = "ACL with this topic already exists"
)

// dynsecIs tells whether err is the plugin refusing with message.
func dynsecIs(err error, message string) bool {
	var de *DynsecError
	return errors.As(err, &de) && de.Message == message
}

// dynsec is a client of the plugin over a connection that can publish to
// the control topic and hands every message of the response topic to
// received. Several bdp nodes share the response topic; each node's
// correlation data starts with a random tag of its own, and answers to
// others are ignored.
type dynsec struct {
	publish func(ctx context.Context, topic string, payload []byte) error
	// scope bounds each message's context by the connection it goes out
	// on: an answer lost with the connection is not waited for.
	scope func(context.Context) (context.Context, context.CancelFunc)
	tag   string
	seq   atomic.Uint64

	mu      sync.Mutex
	waiting map[string]chan DynsecAnswer
}

func newDynsec(publish func(ctx context.Context, topic string, payload []byte) error,
	scope func(context.Context) (context.Context, context.CancelFunc)) *dynsec {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return &dynsec{publish: publish, scope: scope, tag: hex.EncodeToString(b) + "-", waiting: map[string]chan DynsecAnswer{}}
}

// Do sends the commands, dynsecBatch to a message, and returns their
// answers in order. The error is the transport's (or ctx's): a command
// the plugin refused is an answer whose Err is not nil.
func (d *dynsec) Do(ctx context.Context, cmds ...DynsecCommand) ([]DynsecAnswer, error) {
	out := make([]DynsecAnswer, 0, len(cmds))
	for start := 0; start < len(cmds); start += dynsecBatch {
		end := min(start+dynsecBatch, len(cmds))
		answers, err := d.batch(ctx, cmds[start:end])
		if err != nil {
			return out, err
		}
		out = append(out, answers...)
	}
	return out, nil
}

// Run is Do for commands that must all succeed: the first refusal is the
// error.
func (d *dynsec) Run(ctx context.Context, cmds ...DynsecCommand) error {
	answers, err := d.Do(ctx, cmds...)
	if err != nil {
		return err
	}
	for _, a := range answers {
		if err := a.Err(); err != nil {
			return err
		}
	}
	return nil
}

func (d *dynsec) batch(ctx context.Context, cmds []DynsecCommand) ([]DynsecAnswer, error) {
	ctx, cancel := d.scope(ctx)
	defer cancel()
	ids := make([]string, len(cmds))
	chans := make([]chan DynsecAnswer, len(cmds))
	body := struct {
		Commands []DynsecCommand `json:"commands"`
	}{Commands: make([]DynsecCommand, len(cmds))}
	d.mu.Lock()
	for i, c := range cmds {
		ids[i] = d.tag + strconv.FormatUint(d.seq.Add(1), 10)
		chans[i] = make(chan DynsecAnswer, 1)
		d.waiting[ids[i]] = chans[i]
		withCorr := make(DynsecCommand, len(c)+1)
		for k, v := range c {
			withCorr[k] = v
		}
		withCorr["correlationData"] = ids[i]
		body.Commands[i] = withCorr
	}
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		for _, id := range ids {
			delete(d.waiting, id)
		}
		d.mu.Unlock()
	}()
	payload, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("encode dynsec commands: %w", err)
	}
	if err := d.publish(ctx, dynsecTopic, payload); err != nil {
		if cause := context.Cause(ctx); cause != nil {
			err = cause
		}
		return nil, fmt.Errorf("send dynsec commands: %w", err)
	}
	out := make([]DynsecAnswer, len(cmds))
	for i, ch := range chans {
		select {
		case out[i] = <-ch:
		case <-ctx.Done():
			return nil, fmt.Errorf("mosquitto dynsec %s: no answer: %w", cmds[i]["command"], context.Cause(ctx))
		}
	}
	return out, nil
}

// received takes one message of the response topic.
func (d *dynsec) received(payload []byte) {
	var msg struct {
		Responses []DynsecAnswer `json:"responses"`
	}
	if json.Unmarshal(payload, &msg) != nil {
		return // not an answer of the plugin's; nothing waits for it
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, a := range msg.Responses {
		if ch, ok := d.waiting[a.Corr]; ok {
			ch <- a // buffered, and each id is answered once
			delete(d.waiting, a.Corr)
		}
	}
}

// Commands of the plugin that bdp uses.

func dsCreateClient(username, password, textName string, roles []string) DynsecCommand {
	rs := make([]any, len(roles))
	for i, r := range roles {
		rs[i] = map[string]any{"rolename": r}
	}
	return DynsecCommand{"command": "createClient", "username": username, "password": password,
		"textname": textName, "textdescription": dynsecManaged, "roles": rs}
}

func dsDeleteClient(username string) DynsecCommand {
	return DynsecCommand{"command": "deleteClient", "username": username}
}

func dsCreateRole(role string) DynsecCommand {
	return DynsecCommand{"command": "createRole", "rolename": role, "textdescription": dynsecManaged}
}

func dsDeleteRole(role string) DynsecCommand {
	return DynsecCommand{"command": "deleteRole", "rolename": role}
}

func dsGetRole(role string) DynsecCommand {
	return DynsecCommand{"command": "getRole", "rolename": role}
}

func dsAddRoleACL(role string, a dynsecACL) DynsecCommand {
	return DynsecCommand{"command": "addRoleACL", "rolename": role, "acltype": a.Type, "topic": a.Topic, "allow": true}
}

func dsRemoveRoleACL(role string, a dynsecACL) DynsecCommand {
	return DynsecCommand{"command": "removeRoleACL", "rolename": role, "acltype": a.Type, "topic": a.Topic}
}

func dsListClients() DynsecCommand {
	return DynsecCommand{"command": "listClients", "verbose": true, "count": -1, "offset": 0}
}

func dsListRoles() DynsecCommand {
	return DynsecCommand{"command": "listRoles", "verbose": false, "count": -1, "offset": 0}
}

func dsSetDefaultACLAccess() DynsecCommand {
	// Nothing is allowed but what a role allows; receiving too, so that a
	// subscriber gets only the datapoints listed in its role.
	return DynsecCommand{"command": "setDefaultACLAccess", "acls": []any{
		map[string]any{"acltype": "publishClientSend", "allow": false},
		map[string]any{"acltype": "publishClientReceive", "allow": false},
		map[string]any{"acltype": "subscribe", "allow": false},
		map[string]any{"acltype": "unsubscribe", "allow": true},
	}}
}

// dynsecACL is one allow entry of a role.
type dynsecACL struct {
	Type  string `json:"acltype"` // publishClientSend, publishClientReceive, subscribePattern
	Topic string `json:"topic"`
}

// dynsecManaged marks the clients and roles bdp made (textdescription):
// bdp deletes such a client when its MQTT user is gone, and leaves every
// other client of the plugin (the admin, an operator's own) alone.
const dynsecManaged = "managed by bdp"
