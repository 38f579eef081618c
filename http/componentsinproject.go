package http

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/openbdp/bdp/fault"
	"github.com/openbdp/bdp/store"
)

// Component mapping (api.md 2.15, 4.8; bodies: decisions.md 8): a catalog
// component instantiated in a project, its pins mapped onto the project's
// datapoints and its attributes filled in. Mapping a datapoint needs read
// access to it (TagAuths); the detail shows a mapped pin's dataPointID only
// to a caller who may read it.

type cipRequest struct {
	ComponentID *int64  `json:"component_id" required:"true" doc:"the catalog component's numeric id (GET /v2/components)"`
	NameEN      *string `json:"nameEN" maxLength:"200"`
	NameDE      *string `json:"nameDE" maxLength:"200"`
	DisplayName *string `json:"display_name" maxLength:"200"`
}

// cipUpdate is PUT: the same fields, each optional; component_id, when
// given, must be the component's own (mappings belong to its pins).
type cipUpdate struct {
	ComponentID *int64  `json:"component_id" doc:"may be given, but only with the current value"`
	NameEN      *string `json:"nameEN" maxLength:"200"`
	NameDE      *string `json:"nameDE" maxLength:"200"`
	DisplayName *string `json:"display_name" maxLength:"200"`
}

type pinMappingRequest struct {
	ComponentInProjectID *int64  `json:"componentinproject_id" required:"true"`
	PinID                *int64  `json:"pin_id" required:"true" doc:"a pin id of GET /v2/component/{component_id}/pins"`
	DataPointID          *string `json:"dataPointID" required:"true" maxLength:"1024" doc:"a datapoint of the project the caller may read"`
}

type pinUnmapRequest struct {
	ComponentInProjectID *int64 `json:"componentinproject_id" required:"true"`
	PinID                *int64 `json:"pin_id" required:"true"`
}

type attributeRequest struct {
	ComponentInProjectID *int64          `json:"componentinproject_id" required:"true"`
	Key                  *string         `json:"key" required:"true" maxLength:"200" doc:"the attribute definition's key"`
	Value                json.RawMessage `json:"value" doc:"float: a number or a string holding one; string: a string; json: any JSON value, or a string holding JSON text"`
}

type attributeDeleteRequest struct {
	ComponentInProjectID *int64  `json:"componentinproject_id" required:"true"`
	Key                  *string `json:"key" required:"true" maxLength:"200"`
}

// The body fields each mapping route takes as query parameters too, as
// aedifion's document has them (decodeWithQuery).
func cipCreateQuery() []string       { return []string{"component_id"} }
func pinMappingQuery() []string      { return []string{"componentinproject_id", "pin_id", "dataPointID"} }
func pinUnmapQuery() []string        { return []string{"componentinproject_id", "pin_id"} }
func attributeQuery() []string       { return []string{"componentinproject_id", "key", "value"} }
func attributeDeleteQuery() []string { return []string{"componentinproject_id", "key"} }

// cipListItem is an entry of GET componentsInProject.
type cipListItem struct {
	ID          int64  `json:"id"`
	ComponentID int64  `json:"component_id"`
	NameEN      string `json:"nameEN"`
	ProjectID   int64  `json:"project_id"`
}

type cipList struct {
	Items []cipListItem `json:"items"`
	Meta  pagination    `json:"meta" doc:"the page asked for; without page and per_page the whole list is one page"`
}

// cipDetail is a mapped component as the caller may see it.
type cipDetail struct {
	ID          int64          `json:"id"`
	ProjectID   int64          `json:"project_id"`
	Component   componentEntry `json:"component"`
	NameEN      string         `json:"nameEN"`
	NameDE      string         `json:"nameDE"`
	DisplayName string         `json:"display_name"`
	Attributes  []cipAttribute `json:"attributes" doc:"the attributes given a value"`
	Pins        []cipPin       `json:"pins" doc:"every pin placeholder of the component"`
	Tags        []string       `json:"tags" doc:"always empty: bdp keeps no tags on mapped components"`
}

type cipAttribute struct {
	AlphanumericID string `json:"alphanumeric_id"`
	ID             int64  `json:"id" doc:"the attribute definition's id"`
	Key            string `json:"key"`
	Value          string `json:"value" doc:"as text: a float in shortest form, a string as given, JSON as compact text"`
	Unit           string `json:"unit,omitempty"`
}

type cipPin struct {
	store.CatalogPin
	DataPointID *string `json:"dataPointID,omitempty" doc:"the mapped datapoint; left out when unmapped or masked (aedifion's AssignedPin has it a string, never null)"`
	Masked      bool    `json:"masked,omitempty" doc:"true when a datapoint is mapped that the caller may not read (TagAuths)"`
}

func (s *Server) createComponentInProject(c *fiber.Ctx, cl *call) (any, error) {
	var req cipRequest
	if err := decodeWithQuery(c, &req, cipCreateQuery()...); err != nil {
		return nil, err
	}
	if _, ok := s.components.Component(*req.ComponentID); !ok {
		return nil, fault.NotFoundf("no component with id %d (GET /v2/components lists them)", *req.ComponentID)
	}
	cip, err := s.store.CreateComponentInProject(c.UserContext(), cl.ProjectID, *req.ComponentID,
		store.ComponentInProjectNames{NameEN: req.NameEN, NameDE: req.NameDE, DisplayName: req.DisplayName})
	if err != nil {
		return nil, err
	}
	return s.cipAnswer(c, cl, "create", cip)
}

func (s *Server) listComponentsInProject(c *fiber.Ctx, cl *call) (any, error) {
	cips, err := s.store.ComponentsInProject(c.UserContext(), cl.ProjectID)
	if err != nil {
		return nil, err
	}
	items := make([]cipListItem, len(cips))
	for i, x := range cips {
		items[i] = cipListItem{ID: x.ID, ComponentID: x.ComponentID, NameEN: x.NameEN, ProjectID: x.ProjectID}
	}
	return cipList{Items: items, Meta: pagination{CurrentPage: 1, ItemsPerPage: len(items), TotalItems: len(items), TotalPages: 1}}, nil
}

func (s *Server) getComponentInProject(c *fiber.Ctx, cl *call) (any, error) {
	cip, err := s.pathCIP(c, cl)
	if err != nil {
		return nil, err
	}
	return s.cipAnswer(c, cl, "", cip)
}

func (s *Server) updateComponentInProject(c *fiber.Ctx, cl *call) (any, error) {
	var req cipUpdate
	if err := decode(c, &req); err != nil {
		return nil, err
	}
	cip, err := s.pathCIP(c, cl)
	if err != nil {
		return nil, err
	}
	if req.ComponentID != nil && *req.ComponentID != cip.ComponentID {
		return nil, fault.Invalidf("component_id cannot change (%d): map a new component instead", cip.ComponentID)
	}
	n := store.ComponentInProjectNames{NameEN: req.NameEN, NameDE: req.NameDE, DisplayName: req.DisplayName}
	if err := s.store.UpdateComponentInProject(c.UserContext(), cl.ProjectID, cip.ID, n); err != nil {
		return nil, err
	}
	return s.cipReread(c, cl, "update", cip.ID)
}

func (s *Server) deleteComponentInProject(c *fiber.Ctx, cl *call) (any, error) {
	cip, err := s.pathCIP(c, cl)
	if err != nil {
		return nil, err
	}
	answer, err := s.cipAnswer(c, cl, "delete", cip)
	if err != nil {
		return nil, err
	}
	if err := s.store.DeleteComponentInProject(c.UserContext(), cl.ProjectID, cip.ID); err != nil {
		return nil, err
	}
	return answer, nil
}

// mapPin is POST (a pin not mapped yet: 409 otherwise) and PUT (a mapped
// pin: 404 otherwise) of componentInProject/pin/datapoint.
func (s *Server) mapPin(how store.Mapping) handlerFunc {
	return func(c *fiber.Ctx, cl *call) (any, error) {
		var req pinMappingRequest
		if err := decodeWithQuery(c, &req, pinMappingQuery()...); err != nil {
			return nil, err
		}
		if err := s.requireDatapointAccess(c, cl, []string{*req.DataPointID}, false); err != nil {
			return nil, err
		}
		if err := s.store.MapPin(c.UserContext(), cl.ProjectID, *req.ComponentInProjectID, *req.PinID, *req.DataPointID, how); err != nil {
			return nil, err
		}
		return s.cipReread(c, cl, mappingOp(how), *req.ComponentInProjectID)
	}
}

func (s *Server) unmapPin(c *fiber.Ctx, cl *call) (any, error) {
	var req pinUnmapRequest
	if err := decodeWithQuery(c, &req, pinUnmapQuery()...); err != nil {
		return nil, err
	}
	if err := s.store.UnmapPin(c.UserContext(), cl.ProjectID, *req.ComponentInProjectID, *req.PinID); err != nil {
		return nil, err
	}
	return s.cipReread(c, cl, "delete", *req.ComponentInProjectID)
}

// setAttribute is POST (an attribute without a value: 409 otherwise) and
// PUT (one with a value: 404 otherwise) of componentInProject/attribute.
func (s *Server) setAttribute(how store.Mapping) handlerFunc {
	return func(c *fiber.Ctx, cl *call) (any, error) {
		var req attributeRequest
		if err := decodeWithQuery(c, &req, attributeQuery()...); err != nil {
			return nil, err
		}
		def, err := s.cipAttributeDefinition(c, cl, *req.ComponentInProjectID, *req.Key)
		if err != nil {
			return nil, err
		}
		value, err := attributeValue(def, req.Value)
		if err != nil {
			return nil, err
		}
		if err := s.checkControlsAttribute(c.UserContext(), cl.ProjectID, *req.ComponentInProjectID, def.Key, value); err != nil {
			return nil, err
		}
		if err := s.store.SetAttribute(c.UserContext(), cl.ProjectID, *req.ComponentInProjectID, def.ID, value, how); err != nil {
			return nil, err
		}
		return s.cipReread(c, cl, mappingOp(how), *req.ComponentInProjectID)
	}
}

func (s *Server) deleteAttribute(c *fiber.Ctx, cl *call) (any, error) {
	var req attributeDeleteRequest
	if err := decodeWithQuery(c, &req, attributeDeleteQuery()...); err != nil {
		return nil, err
	}
	def, err := s.cipAttributeDefinition(c, cl, *req.ComponentInProjectID, *req.Key)
	if err != nil {
		return nil, err
	}
	if err := s.store.DeleteAttribute(c.UserContext(), cl.ProjectID, *req.ComponentInProjectID, def.ID); err != nil {
		return nil, err
	}
	return s.cipReread(c, cl, "delete", *req.ComponentInProjectID)
}

func mappingOp(how store.Mapping) string {
	if how == store.MapCreate {
		return "create"
	}
	return "update"
}

// cipAttributeDefinition is the definition with key of the mapped
// component's catalog component: 404 when the project has no such mapped
// component or the component no such attribute.
func (s *Server) cipAttributeDefinition(c *fiber.Ctx, cl *call, cipID int64, key string) (store.AttributeDefinition, error) {
	componentID, err := s.store.ComponentInProjectExists(c.UserContext(), cl.ProjectID, cipID)
	if err != nil {
		return store.AttributeDefinition{}, err
	}
	comp, _ := s.components.Component(componentID)
	for _, a := range comp.Attributes {
		if a.Key == key {
			return a, nil
		}
	}
	return store.AttributeDefinition{}, fault.NotFoundf("component %s has no attribute %q (GET /v2/component/%d/attributeDefinitions lists them)",
		comp.AlphanumericID, fault.Clip(key), componentID)
}

// attributeValue checks raw against the definition's value_type and
// answers the text it is stored as.
func attributeValue(def store.AttributeDefinition, raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", fault.Invalidf("field value is required")
	}
	var text string
	isString := json.Unmarshal(raw, &text) == nil
	switch def.ValueType {
	case "float":
		var f float64
		var err error
		if isString {
			f, err = strconv.ParseFloat(text, 64)
		} else {
			err = json.Unmarshal(raw, &f)
		}
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return "", fault.Invalidf("attribute %s takes a float value (a number), got %s", def.Key, fault.Clip(string(raw)))
		}
		return strconv.FormatFloat(f, 'g', -1, 64), nil
	case "string":
		if !isString {
			return "", fault.Invalidf("attribute %s takes a string value, got %s", def.Key, fault.Clip(string(raw)))
		}
		return text, nil
	default: // json
		if isString {
			if !json.Valid([]byte(text)) {
				return "", fault.Invalidf("attribute %s takes a JSON value; the string given is not JSON text", def.Key)
			}
			raw = []byte(text)
		}
		var out bytes.Buffer
		if err := json.Compact(&out, raw); err != nil {
			return "", fault.Invalidf("attribute %s takes a JSON value: %s", def.Key, err.Error())
		}
		return out.String(), nil
	}
}

func (s *Server) pathCIP(c *fiber.Ctx, cl *call) (store.ComponentInProject, error) {
	id, err := pathID(c, "componentinproject_id")
	if err != nil {
		return store.ComponentInProject{}, err
	}
	return s.store.ComponentInProject(c.UserContext(), cl.ProjectID, id)
}

// cipReread answers the mapped component as it is after a change.
func (s *Server) cipReread(c *fiber.Ctx, cl *call, op string, id int64) (any, error) {
	cip, err := s.store.ComponentInProject(c.UserContext(), cl.ProjectID, id)
	if err != nil {
		return nil, err
	}
	return s.cipAnswer(c, cl, op, cip)
}

// cipAnswer is the detail as the caller may see it, in the envelope of op
// ("" for a plain GET).
func (s *Server) cipAnswer(c *fiber.Ctx, cl *call, op string, cip store.ComponentInProject) (any, error) {
	comp, _ := s.components.Component(cip.ComponentID)
	d := cipDetail{ID: cip.ID, ProjectID: cip.ProjectID, NameEN: cip.NameEN, NameDE: cip.NameDE, DisplayName: cip.DisplayName,
		Component:  componentEntry{AlphanumericID: comp.AlphanumericID, ID: comp.ID, NameDE: comp.NameDE, NameEN: comp.NameEN},
		Attributes: []cipAttribute{}, Pins: make([]cipPin, len(comp.Pins)), Tags: []string{}}
	for _, a := range comp.Attributes {
		if v, ok := cip.Attributes[a.ID]; ok {
			d.Attributes = append(d.Attributes, cipAttribute{AlphanumericID: a.AlphanumericID, ID: a.ID, Key: a.Key, Value: v, Unit: a.Unit})
		}
	}
	var mapped []string
	for _, dp := range cip.Pins {
		mapped = append(mapped, dp)
	}
	readable := func(string) bool { return true }
	if !cl.Perms.HasCompanyRole() && len(mapped) > 0 {
		access, err := s.datapointAccess(c.UserContext(), cl, mapped)
		if err != nil {
			return nil, err
		}
		readable = func(dp string) bool { return access[dp].Read }
	}
	for i, p := range comp.Pins {
		d.Pins[i] = cipPin{CatalogPin: p}
		if dp, ok := cip.Pins[p.ID]; ok {
			if readable(dp) {
				d.Pins[i].DataPointID = &dp
			} else {
				d.Pins[i].Masked = true
			}
		}
	}
	if op == "" {
		return d, nil
	}
	return ok(op, d), nil
}
