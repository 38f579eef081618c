package http

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"regexp"
	"strconv"
	"time"
	"unicode"

	"github.com/gofiber/fiber/v2"

	"github.com/openbdp/bdp/fault"
	"github.com/openbdp/bdp/store"
)

// MQTT users (api.md 2.8, 3.5, 4.4; decisions.md 6). The HTTP layer only
// writes the rows; a trigger tells the MQTT layer, which enforces them
// (store.ListenMQTTUsersChanged). http never imports mqtt.

const (
	maxMQTTUsernameBytes = 64
	defaultMQTTValidity  = 3600 // seconds (decisions.md 6)
	maxMQTTValidity      = 7200 // seconds (api.md 8)
	// edgePasswordBytes of randomness make a 32-character password.
	edgePasswordBytes = 24
)

// mqttUserDoc is the OpenAPI description of POST .../mqttuser.
const mqttUserDoc = "Creates an MQTT user of the project, answered with 201 and the envelope; the password is never returned. " +
	"username: 1 to 64 bytes, no control characters, unique across the platform (409 when taken); names of the form edge-{number} " +
	"(edge device credentials, made by POST /operator/projects/{project_id}/edge) and the external broker's admin name are reserved (400). " +
	"password: at least 8 characters, stored as an argon2id hash like user passwords. rights: read (default; subscribe) or write " +
	"(publish and subscribe; write implies read). validity: seconds from now, 1 to 7200, default 3600; valid_until is rounded up to " +
	"the whole second. The user gets the one topic filter project/{project_id}/#. " +
	"An MQTT user never sees more than its creator: the creator's TagAuths in the project, evaluated at delivery time, filter what it " +
	"receives and may ingest; when the creator loses a grant, so does the MQTT user (a company role sees every datapoint). Creating " +
	"a read user therefore needs read access through some TagAuth of the project (or a company role), a write user write access, " +
	"else 403. Live observations are published to project/{project_id}/datapoint/{dataPointID}, the dataPointID written as it is " +
	"except that %, /, +, # and NUL are percent-encoded (%25, %2F, %2B, %23, %00), as JSON {\"time\": RFC 3339, \"value\": number}; " +
	"a write user publishes the same object, or an array of them, to the same topic to ingest, or Influx line protocol as aedifion's " +
	"gateways send it: one line or many, each {dataPointID}[,tags] value={number} [{unix nanoseconds}], whose measurement must be " +
	"the topic's dataPointID (tags are not stored; no timestamp: the time of arrival). A QoS 1 publish is acknowledged once stored; " +
	"a payload that is neither is dropped and counted, and an MQTT 5 publisher is told 0x99 (payload format invalid) with the reason. " +
	"The broker listens on BDP_MQTT_ADDR (MQTT over TCP) and, unless off, BDP_MQTT_WS_ADDR (MQTT over WebSocket; GET /v2/meta/mqtt lists both), and when set " +
	"BDP_MQTT_TLS_ADDR (MQTT over TLS 1.2+) and BDP_MQTT_WSS_ADDR (WebSocket over TLS), the latter two with the certificate of " +
	"BDP_TLS_CERT. At valid_until the user can no longer connect, its " +
	"open sessions are closed within 1 s and its row is removed."

// mqttUserChangeDoc is the one rule of PUT and DELETE on an MQTT user
// (mayChangeMQTTUser), for the OpenAPI document.
const mqttUserChangeDoc = "Changing and deleting an MQTT user follow one rule: only its creator or a company role holder may, and only while " +
	"holding its rights through a TagAuth of the project (a company role holds every right); a change that sets rights needs those too. " +
	"A read-only project user therefore can neither change nor delete a write user, nor anyone else's user."

type mqttUserRequest struct {
	Username    *string `json:"username" required:"true" maxLength:"64" doc:"1 to 64 bytes, no control characters; unique across the platform (409)"`
	Password    *string `json:"password" required:"true" maxLength:"1024" doc:"write-only; at least 8 characters"`
	Rights      *string `json:"rights" doc:"read (default) or write; write implies read"`
	Validity    *int64  `json:"validity" doc:"seconds from now, 1 to 7200; default 3600"`
	Description *string `json:"description" maxLength:"2000"`
}

type mqttUserUpdate struct {
	Password    *string `json:"password" maxLength:"1024" doc:"write-only; at least 8 characters"`
	Rights      *string `json:"rights" doc:"read or write; write implies read"`
	Validity    *int64  `json:"validity" doc:"seconds, 1 to 7200, counted from the time of this update"`
	Description *string `json:"description" maxLength:"2000"`
	// A username sent here is refused rather than ignored, so that no
	// client believes it renamed the user.
	Username json.RawMessage `json:"username" doc:"refused (400): a username cannot change; create another MQTT user"`
}

// mqttTopic is aedifion's MqttTopicAuth: one topic filter with rights.
type mqttTopic struct {
	ID     int64  `json:"id" doc:"the MQTT user's id: each user has one topic filter"`
	Rights string `json:"rights" doc:"read or write"`
	Topic  string `json:"topic" doc:"project/{project_id}/#"`
}

// mqttUserObject is an MQTT user as answered (api.md 2.8, aedifion's MqttUser).
type mqttUserObject struct {
	ID          int64       `json:"id"`
	Username    string      `json:"username"`
	Description string      `json:"description"`
	Topics      []mqttTopic `json:"topics"`
	ValidUntil  string      `json:"valid_until" doc:"ISO 8601 UTC"`
}

func mqttUserOf(u store.MQTTUser) mqttUserObject {
	o := mqttUserObject{ID: u.ID, Username: u.Username, Description: u.Description,
		Topics: []mqttTopic{{ID: u.ID, Rights: u.Rights, Topic: "project/" + strconv.FormatInt(u.ProjectID, 10) + "/#"}}}
	if u.ValidUntil != nil {
		o.ValidUntil = u.ValidUntil.UTC().Format(time.RFC3339)
	}
	return o
}

// edgeUsernameRe matches the reserved names of edge credentials.
var edgeUsernameRe = regexp.MustCompile(`^edge-[0-9]+$`)

func (s *Server) validMQTTUsername(name string) error {
	if name == "" || len(name) > maxMQTTUsernameBytes {
		return fault.Invalidf("field username: 1 to %d bytes, got %d", maxMQTTUsernameBytes, len(name))
	}
	for _, r := range name {
		if unicode.IsControl(r) {
			return fault.Invalidf("field username: holds the control character %U", r)
		}
	}
	if edgeUsernameRe.MatchString(name) || (s.cfg.MQTTAdminUser != "" && name == s.cfg.MQTTAdminUser) {
		return fault.Invalidf("field username: %q is reserved", name)
	}
	return nil
}

func validRights(r *string) error {
	if r != nil && *r != store.MQTTRead && *r != store.MQTTWrite {
		return fault.Invalidf("field rights: must be read or write, got %q", fault.Clip(*r))
	}
	return nil
}

// validUntil turns a validity in seconds into the end of it, counted from
// now and rounded up to the whole second: never earlier than asked, and
// shown exactly as it is kept.
func validUntil(validity int64) (time.Time, error) {
	if validity < 1 || validity > maxMQTTValidity {
		return time.Time{}, fault.Invalidf("field validity: seconds from 1 to %d, got %d", maxMQTTValidity, validity)
	}
	end := time.Now().Add(time.Duration(validity) * time.Second)
	if t := end.Truncate(time.Second); !t.Equal(end) {
		end = t.Add(time.Second)
	}
	return end.UTC(), nil
}

// mayGrant checks the rule that an MQTT user never sees more than its
// creator: the caller must reach some datapoint of the project with the
// rights asked for.
func mayGrant(cl *call, rights string) error {
	if !cl.Perms.ReachesDatapoints(cl.ProjectID, rights == store.MQTTWrite) {
		return fault.Forbiddenf("an MQTT user with %s rights needs %s access to some datapoint of project %d through a TagAuth of "+
			"your roles (or a company role): it never sees more than its creator", rights, rights, cl.ProjectID)
	}
	return nil
}

// mayChangeMQTTUser is the one rule of every route that changes or
// deletes an existing MQTT user (PUT and DELETE alike): the caller created
// it or holds a company role, and holds themselves the rights it has. An
// MQTT user is bounded by its creator's TagAuths; someone else with fewer
// could otherwise take over or remove what another's access set up (a
// read-only project user deleting the company admin's write user).
func mayChangeMQTTUser(cl *call, u store.MQTTUser) error {
	if u.CreatedBy != cl.Principal.User.ID && !cl.Perms.HasCompanyRole() {
		return fault.Forbiddenf("MQTT user %d was created by another user; only its creator or a company role holder may change or delete it", u.ID)
	}
	return mayGrant(cl, u.Rights)
}

func (s *Server) createMQTTUser(c *fiber.Ctx, cl *call) (any, error) {
	var req mqttUserRequest
	if err := decode(c, &req); err != nil {
		return nil, err
	}
	if err := s.validMQTTUsername(*req.Username); err != nil {
		return nil, err
	}
	if err := validPassword("password", *req.Password); err != nil {
		return nil, err
	}
	rights := store.MQTTRead
	if req.Rights != nil {
		if err := validRights(req.Rights); err != nil {
			return nil, err
		}
		rights = *req.Rights
	}
	validity := int64(defaultMQTTValidity)
	if req.Validity != nil {
		validity = *req.Validity
	}
	until, err := validUntil(validity)
	if err != nil {
		return nil, err
	}
	if err := mayGrant(cl, rights); err != nil {
		return nil, err
	}
	hash, err := s.hasher.Hash(c.UserContext(), *req.Password)
	if err != nil {
		return nil, err
	}
	u, err := s.store.CreateMQTTUser(c.UserContext(), store.MQTTUser{ProjectID: cl.ProjectID, Username: *req.Username,
		PasswordHash: hash, Rights: rights, Description: str(text(req.Description)), ValidUntil: &until, CreatedBy: cl.Principal.User.ID})
	if err != nil {
		return nil, err
	}
	if err := s.handOverMQTTPassword(c, u, *req.Password); err != nil {
		// Nothing half-created: a user whose password the broker lacks
		// could never log in.
		if derr := s.store.DeleteMQTTUser(c.UserContext(), u.ProjectID, u.ID); derr != nil {
			s.log.Error("remove an MQTT user the external broker did not take", "mqtt_user", u.ID, "err", derr)
		}
		return nil, err
	}
	return ok("create", mqttUserOf(u)), nil
}

// pathMQTTUser is the MQTT user a path names; edge credentials are the
// operator's and not found here.
func (s *Server) pathMQTTUser(c *fiber.Ctx, cl *call) (store.MQTTUser, error) {
	id, err := pathID(c, "mqttuser_id")
	if err != nil {
		return store.MQTTUser{}, err
	}
	u, err := s.store.MQTTUser(c.UserContext(), cl.ProjectID, id)
	if err == nil && u.Edge {
		err = fault.NotFoundf("MQTT user not found")
	}
	return u, err
}

func (s *Server) updateMQTTUser(c *fiber.Ctx, cl *call) (any, error) {
	var req mqttUserUpdate
	if err := decode(c, &req); err != nil {
		return nil, err
	}
	if req.Username != nil {
		return nil, fault.Invalidf("field username: an MQTT user's username cannot change; create another MQTT user")
	}
	if req.Password != nil {
		if err := validPassword("password", *req.Password); err != nil {
			return nil, err
		}
	}
	if err := validRights(req.Rights); err != nil {
		return nil, err
	}
	var until *time.Time
	if req.Validity != nil {
		t, err := validUntil(*req.Validity)
		if err != nil {
			return nil, err
		}
		until = &t
	}
	u, err := s.pathMQTTUser(c, cl)
	if err != nil {
		return nil, err
	}
	if err := mayChangeMQTTUser(cl, u); err != nil {
		return nil, err
	}
	if req.Rights != nil {
		if err := mayGrant(cl, *req.Rights); err != nil {
			return nil, err
		}
	}
	var hash *string
	if req.Password != nil {
		h, err := s.hasher.Hash(c.UserContext(), *req.Password)
		if err != nil {
			return nil, err
		}
		hash = &h
	}
	u, err = s.store.UpdateMQTTUser(c.UserContext(), cl.ProjectID, u.ID, hash, req.Rights, text(req.Description), until)
	if err != nil {
		return nil, err
	}
	if req.Password != nil {
		if err := s.handOverMQTTPassword(c, u, *req.Password); err != nil {
			return nil, err
		}
	}
	return ok("", mqttUserOf(u)), nil
}

func (s *Server) listMQTTUsers(c *fiber.Ctx, cl *call) (any, error) {
	us, err := s.store.MQTTUsers(c.UserContext(), cl.ProjectID)
	if err != nil {
		return nil, err
	}
	out := make([]mqttUserObject, 0, len(us))
	for _, u := range us {
		if !u.Edge {
			out = append(out, mqttUserOf(u))
		}
	}
	return out, nil
}

func (s *Server) getMQTTUser(c *fiber.Ctx, cl *call) (any, error) {
	u, err := s.pathMQTTUser(c, cl)
	if err != nil {
		return nil, err
	}
	return mqttUserOf(u), nil
}

func (s *Server) deleteMQTTUser(c *fiber.Ctx, cl *call) (any, error) {
	u, err := s.pathMQTTUser(c, cl)
	if err != nil {
		return nil, err
	}
	if err := mayChangeMQTTUser(cl, u); err != nil {
		return nil, err
	}
	if err := s.store.DeleteMQTTUser(c.UserContext(), cl.ProjectID, u.ID); err != nil {
		return nil, err
	}
	return ok("delete", mqttUserOf(u)), nil
}

// edgeCredentials is the answer of POST /operator/projects/{project_id}/edge.
type edgeCredentials struct {
	Username    string `json:"username" doc:"edge-{project_id}"`
	Password    string `json:"password" doc:"random; shown only in this answer"`
	TopicPrefix string `json:"topic_prefix" doc:"edge/{project_id}/: the device may publish and subscribe below it, nowhere else"`
}

// putEdgeCredentials is POST /operator/projects/{project_id}/edge
// (decisions.md 2): new credentials, or a new password for the existing
// ones; the MQTT layer drops the session that used the old one.
func (s *Server) putEdgeCredentials(c *fiber.Ctx, _ *call) (any, error) {
	pid, err := pathID(c, "project_id")
	if err != nil {
		return nil, err
	}
	if _, err := s.store.Project(c.UserContext(), pid); err != nil {
		return nil, err
	}
	raw := make([]byte, edgePasswordBytes)
	if _, err := rand.Read(raw); err != nil {
		return nil, err
	}
	password := base64.RawURLEncoding.EncodeToString(raw)
	hash, err := s.hasher.Hash(c.UserContext(), password)
	if err != nil {
		return nil, err
	}
	u, err := s.store.PutEdgeCredentials(c.UserContext(), pid, hash)
	if err != nil {
		return nil, err
	}
	if err := s.handOverMQTTPassword(c, u, password); err != nil {
		return nil, err
	}
	return ok("create", edgeCredentials{Username: u.Username, Password: password,
		TopicPrefix: "edge/" + strconv.FormatInt(pid, 10) + "/"}), nil
}

// handOverMQTTPassword gives a stored MQTT password to an external broker
// (Deps.MQTTPasswords) before the answer says it works. The password was
// stored first, so a taken username never reaches the broker. When the
// broker fails, a changed password is stored but not in force there: the
// answer is 503 and the caller sets it again.
func (s *Server) handOverMQTTPassword(c *fiber.Ctx, u store.MQTTUser, password string) error {
	if s.mqttPW == nil {
		return nil
	}
	return s.mqttPW.SetPassword(c.UserContext(), u, password)
}

// External broker failures (BDP_MQTT_EXTERNAL), for the routes' 503 in
// the OpenAPI document.
const (
	mqttCreate503 = "unavailable for now; with an external MQTT broker also when the broker did not take the password: the user is not created"
	mqttChange503 = "unavailable for now; with an external MQTT broker also when the broker did not take the new password: " +
		"it is stored but not in force there until set again"
)
