package http

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/openbdp/bdp/actors"
	"github.com/openbdp/bdp/codec"
	"github.com/openbdp/bdp/fault"
	"github.com/openbdp/bdp/store"
)

// Engine is what the HTTP layer asks of the actor engine wherever it
// runs: definitions and their own window budget.
type Engine interface {
	Definition(projectID int64, dataPointID, typ string, raw json.RawMessage) (actors.Definition, error)
	// CheckBudget refuses a definition over the window budget: its own
	// windows (400), and with toRun the node's (503).
	CheckBudget(def actors.Definition, toRun bool) error
}

// Runner runs virtual datapoints: this node's engine (*actors.Engine),
// or in cluster mode the member that owns each (cluster.Runner). It gets
// the datapoint's row as HTTP read it, so every node answers alike.
type Runner interface {
	// StartVDP answers where the run's calculation began
	// (actors.Engine.Start).
	StartVDP(ctx context.Context, v store.VDP) (time.Time, error)
	Stop(ctx context.Context, k actors.Key) error
	// CheckRunBudget refuses a start the budget of the node that would run
	// it cannot hold (503).
	CheckRunBudget(ctx context.Context, v store.VDP) error
	// StopProject stops the running virtual datapoints of a project.
	StopProject(ctx context.Context, projectID int64) error
}

// vdpObject is a virtual datapoint as api.md 2.10 shows it.
type vdpObject struct {
	DataPointID string            `json:"dataPointID"`
	Type        string            `json:"type" doc:"formula, gradient or absolute_humidity"`
	VDPType     string            `json:"vdp_type" doc:"the type by aedifion's name: formula, gradient or absolute_air_humidity"`
	Description string            `json:"description"`
	Logs        []store.VDPLog    `json:"logs"`
	Parameters  map[string]any    `json:"parameters"`
	Pins        map[string]vdpPin `json:"pins"`
	Status      string            `json:"status"`
	StatusCode  int               `json:"status_code"`
}

// vdpCreateBody is what the creation body may hold: the configuration
// (pins, parameters; read by actors.ParseConfig) and, taken and ignored,
// the other members of the GET answer, so that an answer posted back
// creates the same configuration. Anything else is refused by name.
type vdpCreateBody struct {
	Pins        json.RawMessage `json:"pins"`
	Parameters  json.RawMessage `json:"parameters"`
	DataPointID json.RawMessage `json:"dataPointID"`
	Type        json.RawMessage `json:"type"`
	VDPType     json.RawMessage `json:"vdp_type"`
	Description json.RawMessage `json:"description"`
	Logs        json.RawMessage `json:"logs"`
	Status      json.RawMessage `json:"status"`
	StatusCode  json.RawMessage `json:"status_code"`
}

// vdpIgnoredDoc says so in the OpenAPI document.
const vdpIgnoredDoc = "The body is the configuration, {pins, parameters}. The other members of the GET answer (dataPointID, type, vdp_type, " +
	"description, logs, status, status_code) are taken and ignored, so that an answer posted back creates the same configuration " +
	"(the query parameters name the datapoint, type and description); any other member answers 400 naming it."

func toVDPObject(v store.VDP) (vdpObject, error) {
	cfg, err := storedConfig(v)
	if err != nil {
		return vdpObject{}, err
	}
	return vdpObject{DataPointID: v.DataPointID, Type: v.Type, VDPType: actors.AedifionType(v.Type), Description: v.Description, Logs: nonNilSlice(v.Logs),
		Parameters: cfg.Parameters, Pins: answerPins(cfg), Status: store.StatusText(v.StatusCode), StatusCode: v.StatusCode}, nil
}

// vdpPin is a pin as answered: its source shows only to a caller who may
// read it (TagAuths); otherwise dataPointID is null and masked true, so a
// caller learns that the pin exists and how it aggregates, not what it
// reads.
type vdpPin struct {
	DataPointID *string          `json:"dataPointID" nullable:"true" doc:"the source dataPointID; null when masked"`
	Masked      bool             `json:"masked,omitempty" doc:"true when the caller may not read the source (TagAuths): dataPointID is then null"`
	DataRange   actors.DataRange `json:"data_range"`
	Aggregate   string           `json:"aggregate"`
	Trigger     string           `json:"trigger"`
}

// answerPins is every pin of a configuration, nothing masked yet.
func answerPins(cfg actors.Config) map[string]vdpPin {
	pins := make(map[string]vdpPin, len(cfg.Pins))
	for name, p := range cfg.Pins {
		pins[name] = vdpPin{DataPointID: &p.DataPointID, DataRange: p.DataRange, Aggregate: p.Aggregate, Trigger: p.Trigger}
	}
	return pins
}

// vdpAnswer is a virtual datapoint as the caller may see it: every pin
// whose source the caller may not read is masked (the rule of
// rbac.DatapointAccess, one lookup for all pins), and so is every such
// dataPointID its log messages name (logMasker).
func (s *Server) vdpAnswer(c *fiber.Ctx, cl *call, v store.VDP) (vdpObject, error) {
	obj, err := toVDPObject(v)
	if err != nil || cl.Perms.HasCompanyRole() {
		return obj, err
	}
	var sources []string
	for _, p := range obj.Pins {
		sources = append(sources, *p.DataPointID)
	}
	access, err := s.datapointAccess(c.UserContext(), cl, sources)
	if err != nil {
		return vdpObject{}, err
	}
	for name, p := range obj.Pins {
		if !access[*p.DataPointID].Read {
			p.DataPointID, p.Masked = nil, true
			obj.Pins[name] = p
		}
	}
	masker, err := s.logMaskerFor(c.UserContext(), cl, append(sources, obj.DataPointID), logMessages(obj.Logs))
	if err != nil {
		return vdpObject{}, err
	}
	for i := range obj.Logs {
		obj.Logs[i].Message = masker.mask(obj.Logs[i].Message)
	}
	return obj, nil
}

// storedConfig reads the configuration a virtual datapoint was stored
// with (ParseConfig's output, so no validation again).
func storedConfig(v store.VDP) (actors.Config, error) {
	var cfg actors.Config
	if err := json.Unmarshal(v.Config, &cfg); err != nil {
		return cfg, fmt.Errorf("stored config of %s: %w", v.DataPointID, err)
	}
	return cfg, nil
}

// vdpNeed is what an operation on a virtual datapoint needs of the
// caller's TagAuths.
type vdpNeed int

const (
	needRead  vdpNeed = iota // read the output: GET one, the list
	needWrite                // write the output: PUT, DELETE, run=false
	needRun                  // write the output and read every source: create, run=true, recompute
)

// requireVDPAccess is the datapoint-level check (TagAuths) of the virtual
// datapoint endpoints, on top of their endpoint grant. Running one needs
// what its live processing does: read its sources, write its output.
// cfg names the sources for needRun; nil reads the stored configuration
// (once the output passed, so a caller without a grant learns nothing of
// it). A refusal is the 403 of requireDatapointAccess naming the
// datapoint; company roles pass (rbac DatapointAccess).
func (s *Server) requireVDPAccess(c *fiber.Ctx, cl *call, id string, need vdpNeed, cfg *actors.Config) error {
	if err := s.requireDatapointAccess(c, cl, []string{id}, need != needRead); err != nil {
		return err
	}
	if need != needRun || cl.Perms.HasCompanyRole() {
		return nil
	}
	if cfg == nil {
		v, err := s.store.VDP(c.UserContext(), cl.ProjectID, id)
		if err != nil {
			return err
		}
		stored, err := storedConfig(v)
		if err != nil {
			return err
		}
		cfg = &stored
	}
	return s.requireDatapointAccess(c, cl, cfg.SourceIDs(), false)
}

// readableVDPs is the list the caller may see: the virtual datapoints whose
// output they may read (the rule of requireVDPAccess), paged after that
// filter so that the total counts only them.
func (s *Server) readableVDPs(c *fiber.Ctx, cl *call, search string, status *int, page, perPage int) ([]store.VDPSummary, int, error) {
	ctx := c.UserContext()
	if cl.Perms.HasCompanyRole() {
		return s.store.ListVDPs(ctx, cl.ProjectID, search, status, page, perPage)
	}
	all, _, err := s.store.ListVDPs(ctx, cl.ProjectID, search, status, 1, math.MaxInt32)
	if err != nil {
		return nil, 0, err
	}
	readable, err := readableOnly(ctx, s, cl, all, func(v store.VDPSummary) string { return v.DataPointID })
	if err != nil {
		return nil, 0, err
	}
	return pageOf(readable, page, perPage), len(readable), nil
}

// readableOnly keeps the items whose datapoint the caller may read, in
// their order, with one access lookup for all of them.
func readableOnly[T any](ctx context.Context, s *Server, cl *call, items []T, id func(T) string) ([]T, error) {
	names := make([]string, 0, len(items))
	seen := make(map[string]bool, len(items))
	for _, it := range items {
		if n := id(it); !seen[n] {
			seen[n] = true
			names = append(names, n)
		}
	}
	access, err := s.datapointAccess(ctx, cl, names)
	if err != nil {
		return nil, err
	}
	readable := items[:0]
	for _, it := range items {
		if access[id(it)].Read {
			readable = append(readable, it)
		}
	}
	return readable, nil
}

// pageOf is page number page (from 1) of list, perPage items a page;
// empty past the end.
func pageOf[T any](list []T, page, perPage int) []T {
	from, to := pageBounds(len(list), page, perPage)
	return list[from:to]
}

// vdpParam reads the dataPointID query parameter every route takes.
func vdpParam(c *fiber.Ctx) (string, error) {
	id := c.Query("dataPointID")
	if id == "" {
		return "", fault.Invalidf("query parameter dataPointID is required")
	}
	if err := codec.ValidateDataPointID(id); err != nil {
		return "", fault.Invalidf("dataPointID: %s", err.Error())
	}
	return id, nil
}

func (s *Server) createVDP(c *fiber.Ctx, cl *call) (any, error) {
	id, err := vdpParam(c)
	if err != nil {
		return nil, err
	}
	// The output's grant first: a caller who may not write it is refused
	// before the configuration is parsed (its sources are checked after).
	if err := s.requireVDPAccess(c, cl, id, needWrite, nil); err != nil {
		return nil, err
	}
	// decode refuses data after the object as for PUT, and members that
	// are neither the configuration's nor the answer's (ParseConfig would
	// pass them by); ParseConfig judges the whole body again, and names a
	// body that is no object in its own terms.
	if body := bytes.TrimSpace(c.Body()); len(body) == 0 || body[0] == '{' {
		if err := decode(c, &vdpCreateBody{}); err != nil {
			return nil, err
		}
	}
	typ := actors.CanonicalType(c.Query("type"))
	cfg, err := actors.ParseConfig(typ, c.Body())
	if err != nil {
		return nil, err
	}
	desc := text(ptr(c.Query("description")))
	if err := s.refuseLoop(c.UserContext(), cl.ProjectID, id, cfg); err != nil {
		return nil, err
	}
	if err := s.requireVDPAccess(c, cl, id, needRun, &cfg); err != nil {
		return nil, err
	}
	raw, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	def, err := s.engine.Definition(cl.ProjectID, id, typ, raw)
	if err != nil {
		return nil, err
	}
	if err := s.engine.CheckBudget(def, false); err != nil {
		return nil, err
	}
	who := cl.Principal.User.Email
	v, err := s.store.CreateVDP(c.UserContext(), store.VDP{ProjectID: cl.ProjectID, DataPointID: id, Type: typ, Description: *desc, Config: raw},
		store.StatusChange{Code: store.StatusCreated, Message: "created by " + who},
		store.StatusChange{Code: store.StatusReadyToStart, Message: "configuration is valid"})
	if err != nil {
		return nil, err
	}
	obj, err := s.vdpAnswer(c, cl, v)
	if err != nil {
		return nil, err
	}
	return ok("create", obj), nil
}

// refuseLoop rejects a configuration whose sources reach its own output,
// through the project's other virtual datapoints (actors.RefuseLoop).
func (s *Server) refuseLoop(ctx context.Context, projectID int64, id string, cfg actors.Config) error {
	configs, err := s.store.ProjectVDPConfigs(ctx, projectID)
	if err != nil {
		return err
	}
	return actors.RefuseLoop(id, cfg, configs)
}

func (s *Server) getVDP(c *fiber.Ctx, cl *call) (any, error) {
	id, err := vdpParam(c)
	if err != nil {
		return nil, err
	}
	if err := s.requireVDPAccess(c, cl, id, needRead, nil); err != nil {
		return nil, err
	}
	v, err := s.store.VDP(c.UserContext(), cl.ProjectID, id)
	if err != nil {
		return nil, err
	}
	return s.vdpAnswer(c, cl, v)
}

type vdpUpdate struct {
	Description *string `json:"description" maxLength:"2000"`
}

func (s *Server) updateVDP(c *fiber.Ctx, cl *call) (any, error) {
	id, err := vdpParam(c)
	if err != nil {
		return nil, err
	}
	if err := s.requireVDPAccess(c, cl, id, needWrite, nil); err != nil {
		return nil, err
	}
	var req vdpUpdate
	if err := decode(c, &req); err != nil {
		return nil, err
	}
	v, err := s.store.VDP(c.UserContext(), cl.ProjectID, id)
	if err != nil {
		return nil, err
	}
	if req.Description != nil {
		desc := text(req.Description)
		if v, err = s.store.UpdateVDPDescription(c.UserContext(), cl.ProjectID, id, *desc); err != nil {
			return nil, err
		}
	}
	return s.vdpAnswer(c, cl, v)
}

func (s *Server) deleteVDP(c *fiber.Ctx, cl *call) (any, error) {
	id, err := vdpParam(c)
	if err != nil {
		return nil, err
	}
	if err := s.requireVDPAccess(c, cl, id, needWrite, nil); err != nil {
		return nil, err
	}
	purge, err := queryBool(c, "purge")
	if err != nil {
		return nil, err
	}
	v, err := s.store.DeleteVDP(c.UserContext(), cl.ProjectID, id, "deleted by "+cl.Principal.User.Email, purge)
	if err != nil {
		return nil, err
	}
	return s.vdpAnswer(c, cl, v)
}

type vdpList struct {
	Items []store.VDPSummary `json:"items"`
	Meta  pagination         `json:"meta"`
}

type pagination struct {
	CurrentPage  int `json:"current_page"`
	ItemsPerPage int `json:"items_per_page"`
	TotalItems   int `json:"total_items"`
	TotalPages   int `json:"total_pages"`
}

// pageMeta is the meta of page (of perPage items) of a list of total items.
func pageMeta(page, perPage, total int) pagination {
	return pagination{CurrentPage: page, ItemsPerPage: perPage, TotalItems: total, TotalPages: (total + perPage - 1) / perPage}
}

func (s *Server) listVDPs(c *fiber.Ctx, cl *call) (any, error) {
	page, perPage, err := pageParams(c)
	if err != nil {
		return nil, err
	}
	var status *int
	if f := c.Query("filter"); f != "" {
		k, v, _ := strings.Cut(f, "=")
		code, err := strconv.Atoi(strings.TrimSpace(v))
		if strings.TrimSpace(k) != "status_code" || err != nil {
			return nil, fault.Invalidf("filter must be status_code=N, got %q", f)
		}
		status = &code
	}
	items, total, err := s.readableVDPs(c, cl, c.Query("search"), status, page, perPage)
	if err != nil {
		return nil, err
	}
	return vdpList{Items: nonNilSlice(items), Meta: pageMeta(page, perPage, total)}, nil
}

// pageParams reads page (default 1) and per_page (default 100, at most
// 1000; decisions.md 4).
func pageParams(c *fiber.Ctx) (int, int, error) {
	page, perPage := 1, 100
	for name, dst := range map[string]*int{"page": &page, "per_page": &perPage} {
		if raw := c.Query(name); raw != "" {
			v, err := strconv.Atoi(raw)
			if err != nil || v < 1 || (name == "per_page" && v > 1000) {
				return 0, 0, fault.Invalidf("%s must be a positive integer (per_page at most 1000), got %q", name, raw)
			}
			*dst = v
		}
	}
	return page, perPage, nil
}

func ptr(s string) *string { return &s }
